import Foundation
import Ingest
import IngestServer
import Testing

/// The CLI end to end: `pushav record --push` against the in-process receiver, and `pushav receive`'s guard rails.
@Suite(.timeLimit(.minutes(2))) struct PushCommandTests {
    /// Audio and video of a TestMedia clip, chunked: every file `record` writes arrives identical, and it exits 0.
    @Test func recordWithPushDeliversEveryFileItWrites() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = Fixtures.packageRoot.appendingPathComponent("TestMedia/a_720p30_h264_main.mp4")
        try #require(FileManager.default.fileExists(atPath: input.path), "TestMedia is missing")
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        let root = directory.appendingPathComponent("received")
        let server = try await IngestServer.startForTest(root: root, pki: pki)
        let out = directory.appendingPathComponent("out")
        let result = try await Fixtures.run(Fixtures.pushav.path, [
            "record", input.path, "--out", out.path, "--trigger", "continuous", "--segment-duration", "2000",
            "--chunk-duration", "500", "--no-clip", "--push", "https://localhost:\(server.port)/", "--ca", pki.path("ca.pem"),
            "--cert", pki.path("client.pem"), "--key", pki.path("client.key"),
        ])
        await server.stop()
        #expect(result.status == 0, "\(result.output)")
        let written = (FileManager.default.enumerator(atPath: out.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasPrefix("session_") && ($0.hasSuffix(".init") || $0.hasSuffix(".m4s")) }
        #expect(written.count >= 10 && written.contains { $0.contains("/audio/") }, "\(written)")
        for path in written {
            let sent = FileManager.default.contents(atPath: out.appendingPathComponent(path).path)
            let arrived = FileManager.default.contents(atPath: root.appendingPathComponent(path).path)
            #expect(arrived != nil && arrived.map(Fixtures.sha256) == sent.map(Fixtures.sha256), "\(path)")
        }
        // The next run continues the session numbering of this connection.
        let spool = try SegmentSpool(directory: out.appendingPathComponent(".spool"), logger: .quiet)
        #expect(try spool.nextSessionNumber(connection: "https://localhost:\(server.port)/") == 2)
        #expect(try spool.statistics().queueDepth == 0)
    }

    @Test func plainHTTPIsRefusedOffLoopback() throws {
        var configuration = IngestServer.Configuration(root: FileManager.default.temporaryDirectory, tls: nil)
        configuration.host = "0.0.0.0"
        #expect(throws: IngestServer.ConfigurationError.self) { try IngestServer(configuration: configuration) }
    }
}
