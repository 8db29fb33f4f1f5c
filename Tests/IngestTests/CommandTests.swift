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
        #expect(try await spool.nextSessionNumber(connection: "https://localhost:\(server.port)/") == 2)
        #expect(try await spool.statistics().queueDepth == 0)
    }

    /// Two runs to the same URL with a new --out and a new --spool each: the second continues the session numbers
    /// (from the session ledger) instead of starting again at session_1 and overwriting the first run's objects.
    @Test func sessionNumbersContinueAcrossRunsWithAnotherOutAndSpool() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputs = ["e_video_only.mp4", "a_720p30_h264_main.mp4"].map {
            Fixtures.packageRoot.appendingPathComponent("TestMedia/\($0)")
        }
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        let root = directory.appendingPathComponent("received")
        let server = try await IngestServer.startForTest(root: root, pki: pki)
        let state = directory.appendingPathComponent("state")
        var received: [String: String] = [:]
        for run in 1...2 {
            let out = directory.appendingPathComponent("out\(run)")
            let result = try await Fixtures.run(Fixtures.pushav.path, [
                "record", inputs[run - 1].path, "--out", out.path, "--trigger", "continuous", "--no-clip", "--no-audio",
                "--state-dir", state.path,
                "--push", "https://localhost:\(server.port)/", "--ca", pki.path("ca.pem"),
                "--cert", pki.path("client.pem"), "--key", pki.path("client.key"),
            ])
            #expect(result.status == 0, "\(result.output)")
            let session = "session_\(run)"
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(session).path), "run \(run): \(result.output)")
            let objects = (FileManager.default.enumerator(atPath: root.appendingPathComponent(session).path)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".m4s") || $0.hasSuffix(".init") }
            #expect(objects.count >= 2, "run \(run): \(objects)")
            for object in objects {
                received[session + "/" + object] = Fixtures.sha256(try Data(contentsOf: root.appendingPathComponent(session + "/" + object)))
            }
        }
        await server.stop()
        // The first run's objects are still the ones it sent: nothing was overwritten by the second run.
        for (path, hash) in received {
            #expect(Fixtures.sha256(try Data(contentsOf: root.appendingPathComponent(path))) == hash, "\(path)")
        }
        #expect(try SessionLedger(file: state.appendingPathComponent("sessions.sqlite"))
            .highest(connection: "https://localhost:\(server.port)/") == 2)
    }

    @Test func plainHTTPIsRefusedOffLoopback() throws {
        var configuration = IngestServer.Configuration(root: FileManager.default.temporaryDirectory, tls: nil)
        configuration.host = "0.0.0.0"
        #expect(throws: IngestServer.ConfigurationError.self) { try IngestServer(configuration: configuration) }
    }
}
