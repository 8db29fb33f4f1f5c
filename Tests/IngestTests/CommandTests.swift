import Foundation
import Ingest
import IngestServer
import Testing
import TestSupport

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

    /// `pushav certificates make` (issue 51: every TLS example assumed the user had a PKI): the files it writes are
    /// what `pushav receive` and `pushav record --push` need for mutual TLS, and nothing more is needed. Both sides
    /// are the real processes; a client without the client certificate is refused by the handshake.
    @Test func madeCertificatesCarryAMutualTLSUpload() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = directory.appendingPathComponent("pki")
        let made = try await Fixtures.run(Fixtures.pushav.path, ["certificates", "make", pki.path, "--host", "localhost,127.0.0.1,::1"])
        #expect(made.status == 0, "\(made.output)")
        for (name, mode) in [("ca.pem", 0o644), ("server.pem", 0o644), ("server.key", 0o600), ("client.pem", 0o644), ("client.key", 0o600)] {
            let attributes = try FileManager.default.attributesOfItem(atPath: pki.appendingPathComponent(name).path)
            #expect((attributes[.posixPermissions] as? Int) == mode, "\(name)")
        }
        let file = { (name: String) in pki.appendingPathComponent(name).path }
        let root = directory.appendingPathComponent("received")
        let receive = try ChildProcess.start(Fixtures.pushav.path, [
            "receive", "--root", root.path, "--port", "0", "--cert", file("server.pem"), "--key", file("server.key"),
            "--client-ca", file("ca.pem"),
        ], log: directory.appendingPathComponent("receive.log"))
        defer { receive.kill() }
        var port = ""
        try await Fixtures.waitUntil("pushav receive listening", timeout: .seconds(30)) {
            guard receive.isRunning else { throw TestFailure("pushav receive exited: \(receive.output)") }
            guard let line = receive.output.split(separator: "\n").first(where: { $0.contains("listening on https://") }) else { return false }
            port = String(line.split(separator: ":")[3].prefix(while: \.isNumber))
            return true
        }
        let out = directory.appendingPathComponent("out")
        let recorded = try await Fixtures.run(Fixtures.pushav.path, [
            "record", Fixtures.packageRoot.appendingPathComponent("TestMedia/a_720p30_h264_main.mp4").path, "--out", out.path,
            "--trigger", "continuous", "--no-clip", "--push", "https://localhost:\(port)/cam/", "--ca", file("ca.pem"),
            "--cert", file("client.pem"), "--key", file("client.key"),
        ])
        #expect(recorded.status == 0, "\(recorded.output)\n\(receive.output)")
        let arrived = FileManager.default.enumerator(atPath: root.path)?.allObjects as? [String] ?? []
        #expect(arrived.contains("cam/session_1/video/video.init"), "\(arrived)")
        #expect(arrived.filter { $0.hasSuffix(".m4s") }.count >= 5, "\(arrived)")
        // The same server by its IP address (checked against the certificate's IP name), without a client
        // certificate: the handshake refuses it (curl's exit 35 or 56, never an HTTP answer); with one it answers.
        let refused = try await Fixtures.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", file("ca.pem"),
                                                               "https://127.0.0.1:\(port)/"])
        #expect(refused.status != 0 && !refused.output.hasPrefix("2"), "\(refused.output)")
        let admitted = try await Fixtures.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", file("ca.pem"),
                                                                "--cert", file("client.pem"), "--key", file("client.key"),
                                                                "https://127.0.0.1:\(port)/"])
        #expect(admitted.status == 0 && admitted.output.hasPrefix("200"), "\(admitted.output)")
        // Without --verbose, receive says what arrived and, once stopped, how much (issue 51: it printed nothing).
        #expect(receive.output.contains("pushav receive: receiving cam/session_1\n"), "\(receive.output)")
        receive.signal(SIGTERM)
        #expect(try await receive.waitForExit(timeout: .seconds(30)))
        let stored = arrived.filter { $0.hasSuffix(".init") || $0.hasSuffix(".m4s") }.count
        #expect(receive.output.contains("pushav receive: stopped; \(stored) object(s) stored in 1 session(s), 0 refused"),
                "\(receive.output)")
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
