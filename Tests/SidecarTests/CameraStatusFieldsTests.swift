import Foundation
@testable import Sidecar
import Testing

/// The connections table shows where a transport uploads, and never its credentials.
@Suite struct IngestAuthorityTests {
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
