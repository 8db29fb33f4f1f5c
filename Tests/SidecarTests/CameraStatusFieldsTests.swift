import Foundation
@testable import Sidecar
import Testing

/// What `GET /v1/cameras` and the status page show of a camera source and its errors: never its credentials.
@Suite struct UserinfoRedactionTests {
    static let cases: [(String, String)] = [
        ("rtsp://admin:secret@192.0.2.10:554/stream1", "rtsp://192.0.2.10:554/stream1"),
        ("rtsp://admin@192.0.2.10/stream1", "rtsp://192.0.2.10/stream1"),
        ("rtsp://admin:p@ss:w0rd@cam.example/live?channel=1", "rtsp://cam.example/live?channel=1"),
        ("rtsp://192.0.2.10/stream1", "rtsp://192.0.2.10/stream1"),
        ("/var/lib/media/loop.mp4", "/var/lib/media/loop.mp4"),
        ("file:///media/loop.mp4", "file:///media/loop.mp4"),
        // FFmpeg names the URL in its errors; every URL of a text loses its user information.
        ("rtsp://u:p@a.example/x: Connection refused (retrying rtsp://u:p@b.example/y)",
         "rtsp://a.example/x: Connection refused (retrying rtsp://b.example/y)"),
        ("http://user:pa%40ss@[2001:db8::1]:8554/s", "http://[2001:db8::1]:8554/s"),
        // An @ after the authority (in the path or query) is not user information.
        ("rtsp://cam.example/live?owner=me@home", "rtsp://cam.example/live?owner=me@home"),
    ]

    @Test(arguments: cases)
    func userinfoIsRemoved(_ text: String, _ expected: String) {
        #expect(UserinfoRedaction.redacted(text) == expected)
    }

    /// The connections table shows where a transport uploads as host and port only: no credentials, no path.
    @Test func ingestAuthorityHasNoCredentialsOrPath() {
        #expect(SidecarEngine.ingestAuthority("https://user:token@ingest.example.com:8443/streams/1/?key=abc") == "ingest.example.com:8443")
        #expect(SidecarEngine.ingestAuthority("https://ingest.example.com/streams/1/") == "ingest.example.com")
        #expect(SidecarEngine.ingestAuthority("https://[2001:db8::5]:443/x/") == "[2001:db8::5]:443")
    }
}

/// `analysisRate`: pictures per second from the totals successive status reads see.
@Suite struct RateMeterTests {
    @Test func rateOverTheReadsOfTheLastTenSeconds() {
        var meter = RateMeter()
        let start = ContinuousClock.now
        #expect(meter.note(0, at: start) == nil)
        #expect(meter.note(10, at: start + .milliseconds(500)) == nil, "less than a second: no rate yet")
        #expect(meter.note(60, at: start + .seconds(2)) == 30)
        #expect(meter.note(300, at: start + .seconds(10)) == 30)
        // Samples older than 10 s go: the rate follows what happens now (a stall).
        #expect(meter.note(300, at: start + .seconds(15)).map { $0 < 30 } == true)
        #expect(meter.note(300, at: start + .seconds(30)) == 0)
        // A read after a long pause still has the previous one to compare with.
        #expect(meter.note(600, at: start + .seconds(50)) == 15)
    }
}
