import Logging
import Recorder
import Testing
import TestSupport

/// Camera URLs' credentials out of every text the program shows: errors, log lines, the status API.
struct CredentialRedactionTests {
    static let cases: [(String, String)] = [
        ("rtsp://admin:hunter2@192.0.2.10:554/main", "rtsp://***@192.0.2.10:554/main"),
        ("cannot open rtsp://admin:p%40ss@cam/ch1: Connection refused", "cannot open rtsp://***@cam/ch1: Connection refused"),
        ("rtsp://onlyuser@cam/ch1 and http://u:p@[2001:db8::1]/x", "rtsp://***@cam/ch1 and http://***@[2001:db8::1]/x"),
        ("rtsp://192.0.2.10/main", "rtsp://192.0.2.10/main"),
        // An @ in the path or query is not userinfo.
        ("https://ingest.example/streams/a@b?x=y@z", "https://ingest.example/streams/a@b?x=y@z"),
        ("mail me at someone@example.com", "mail me at someone@example.com"),
        ("/var/lib/pushav/cam@1.sqlite", "/var/lib/pushav/cam@1.sqlite"),
        // A password with an unencoded @ goes whole: the userinfo runs to the authority's last @.
        ("rtsp://admin:p@ss:w0rd@cam.example/live?channel=1", "rtsp://***@cam.example/live?channel=1"),
        ("rtsp://u:p@a.example/x: Connection refused (retrying rtsp://u:p@b.example/y)",
         "rtsp://***@a.example/x: Connection refused (retrying rtsp://***@b.example/y)"),
        ("rtsp://cam.example/live?owner=me@home", "rtsp://cam.example/live?owner=me@home"),
        ("file:///media/loop.mp4", "file:///media/loop.mp4"),
    ]

    @Test(arguments: cases)
    func redacts(_ text: String, _ expected: String) {
        #expect(CredentialRedaction.redact(text) == expected)
    }

    /// Message, explicit metadata and the logger's own metadata all pass through the redaction.
    @Test func theLogHandlerRedactsMessagesAndMetadata() {
        let recorder = LogRecorder()
        var logger = Logger(label: "test") { _ in RedactingLogHandler(wrapping: recorder) }
        logger[metadataKey: "source"] = "rtsp://a:secret1@cam/x"
        logger.warning("camera source lost: cannot open rtsp://a:secret2@cam/x", metadata: [
            "error": "\(TestError(text: "rtsp://a:secret3@cam/x refused"))", "list": .array(["rtsp://b:secret4@cam"]),
        ])
        let line = recorder.allWithMetadata.joined(separator: "\n")
        #expect(!line.contains("secret"), "\(line)")
        #expect(line.contains("rtsp://***@cam/x"), "\(line)")
    }

    struct TestError: Error, CustomStringConvertible {
        var text: String
        var description: String { text }
    }
}
