import Foundation
import Ingest
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// TC-PAVST-2.14 through real restarts of the process (after SIGTERM, and after `kill -9`): the connection comes
    /// back from FindTransport exactly as allocated (options, status Active), its TLS endpoint is still there, and the
    /// next recording is session 2 — in its Begin/End and in the uploaded path. Deallocation survives a restart too.
    @Test(arguments: [SIGTERM, SIGKILL])
    func restartKeepsTheConnectionItsEndpointAndItsSessionNumbers(signal: Int32) async throws {
        let ingest = try await ServeIngest("restart\(signal)")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        var serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            var events = try await serve.subscribe()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            var options = TransportJSON.options(endpointID: endpointID, ingestPort: server.port, trigger: .command())
            options["expiryTime"] = 3600
            let id = try await serve.allocate(options)
            try await serve.setActive(id)
            let triggered = ContinuousClock.now
            try await serve.trigger(id, reason: 1, initial: 2, max: 4)
            try await events.wait("session 1 Begin and End", timeout: .seconds(20)) { $0.count >= 2 }
            #expect(events.events.map(\.session) == [1, 1] && events.events[0].activationReason == 1, "\(events.events)")
            try await Fixtures.waitUntil("session_1 uploaded", timeout: .seconds(20)) {
                let stored = ingest.endpoint.storedPaths
                guard stored.contains("session_1/video/video.init") && stored.contains(where: { $0.hasPrefix("session_1/video/segment_") })
                else { return false }
                return try await serve.pendingUploads() == 0
            }
            if let first = ingest.endpoint.startedAt.first, let segment = ingest.endpoint.arrivals.first(where: { $0.path.contains("segment_") }) {
                print("serve upload: trigger → first byte at the ingest \(String(format: "%.3f", (first.time - triggered).inSeconds)) s "
                      + "(\(first.path)), → first segment stored \(String(format: "%.3f", (segment.time - triggered).inSeconds)) s")
            }
            let before = try await serve.command("findTransport", ["connectionID": id])
            events.stop()

            let exited = try await serve.stop(signal)
            if signal == SIGTERM {
                #expect(exited && serve.process.exitedNormally && serve.process.status == 0, "\(serve.process.output)")
            }
            try await serve.shutdown()
            serve = try await Serve(directory: ingest.directory, source: TestPaths.media(Self.media).path, run: 2)
            try await serve.waitUntilStreaming()
            events = try await serve.subscribe()

            let after = try await serve.command("findTransport", ["connectionID": id])
            #expect(JSON.text(after) == JSON.text(before), "before \(before)\nafter \(after)")
            let configuration = (after["transportConfigurations"] as? [[String: Any]])?.first
            #expect(configuration?["transportStatus"] as? Int == 0, "\(after)")
            let endpoints = try #require(try await serve.json(.GET, "/v1/tls/endpoints")["endpoints"] as? [[String: Any]])
            #expect(endpoints.contains { $0["endpointID"] as? Int == endpointID && $0["port"] as? Int == server.port }, "\(endpoints)")

            try await serve.trigger(id, reason: 2, initial: 2, max: 4)
            try await events.wait("session 2 Begin and End", timeout: .seconds(20)) { $0.count >= 2 }
            let second = events.events
            #expect(second.map(\.session) == [2, 2] && second[0].triggerType == 0 && second[0].activationReason == 2, "\(second)")
            // All of it: Deallocate answers BUSY while uploads are pending.
            try await Fixtures.waitUntil("session_2 uploaded", timeout: .seconds(20)) {
                let stored = ingest.endpoint.storedPaths
                guard stored.contains("session_2/video/video.init") && stored.contains(where: { $0.hasPrefix("session_2/video/segment_") })
                else { return false }
                return try await serve.pendingUploads() == 0
            }
            let (segments, errors) = try cmafErrors(trackDirectory: ingest.root.appendingPathComponent("session_2/video"))
            #expect(segments >= 1 && errors.isEmpty, "\(errors)")
            events.stop()

            // Deallocated, then restarted: gone.
            // As a controller does: BUSY (uploads pending, e.g. the last segment still on its way) is retried.
            try await Fixtures.waitUntil("deallocated", timeout: .seconds(10)) {
                let (status, text) = try await serve.request(.POST, "/v1/cameras/cam1/commands/deallocatePushTransport",
                                                             JSON.text(["connectionID": id]))
                try #require(status == 200 || status == 409 && text.contains("BUSY"), "\(status) \(text)")
                return status == 200
            }
            _ = try await serve.stop(signal)
            try await serve.shutdown()
            serve = try await Serve(directory: ingest.directory, source: TestPaths.media(Self.media).path, run: 3)
            let (status, text) = try await serve.request(.POST, "/v1/cameras/cam1/commands/findTransport", "{}")
            #expect(status == 404 && text.contains("NOT_FOUND"), "\(status) \(text)")
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }

    /// `kill -9` in the middle of a clip while the ingest is down: every object the spool held is delivered after the
    /// restart, byte for byte (SHA-256), and session_1 as delivered is valid CMAF.
    @Test func killMidClipWithTheIngestDownDeliversEverySpooledObjectAfterRestart() async throws {
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        // The ingest is down for a while: its port stays held (refusing) until it binds, so no other test takes it.
        let reservation = try LocalPorts.reserveTCPPort()
        let ingestPort = reservation.port
        var serve = try await Serve(directory: ingest.directory, media: Self.media)
        var server: RunningServer?
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: ingestPort)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: ingestPort,
                                                                    trigger: .command()))
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 20, max: 20)
            try await events.wait("Begin", timeout: .seconds(10)) { $0.contains(where: \.isBegin) }
            // The init and two segments spooled (nothing can be delivered), the clip still running.
            try await Fixtures.waitUntil("three objects spooled", timeout: .seconds(20)) {
                try await serve.pendingUploads() >= 3
            }
            #expect(!events.events.contains { !$0.isBegin }, "the clip ended before the kill: \(events.events)")
            _ = try await serve.stop(SIGKILL)
            try await serve.shutdown()

            // What the spool holds: opening it as the restart will (stray files, never journalled, are removed).
            let spoolDirectory = ingest.directory.appendingPathComponent("state/spool")
            try await Fixtures.offPool { _ = try SegmentSpool(directory: spoolDirectory, logger: .quiet) }
            let spooled = try Self.files(under: spoolDirectory.appendingPathComponent("objects"))
            #expect(spooled.keys.contains("session_1/video/video.init") && spooled.count >= 3, "\(spooled.keys.sorted())")

            reservation.release()
            server = try await ingest.start(port: ingestPort)
            serve = try await Serve(directory: ingest.directory, source: TestPaths.media(Self.media).path, run: 2)
            try await Fixtures.waitUntil("every spooled object delivered", timeout: .seconds(30)) {
                Set(ingest.endpoint.storedPaths).isSuperset(of: spooled.keys)
            }
            let delivered = ingest.stored(under: "session_1/")
            for (path, bytes) in spooled {
                #expect(delivered[path].map(Fixtures.sha256) == Fixtures.sha256(bytes), "\(path) differs")
            }
            let (segments, errors) = try cmafErrors(trackDirectory: ingest.root.appendingPathComponent("session_1/video"))
            #expect(segments == spooled.count - 1 && errors.isEmpty, "\(segments) segments; \(errors)")
            #expect(!ingest.endpoint.storedPaths.contains { $0.hasPrefix("session_2") })
            events.stop()
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server?.stop()
    }

    /// Every regular file under a spool's `objects/<connection>/` folders, by its path below the connection folder.
    static func files(under root: URL) throws -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for connection in try FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil) {
            guard let walker = FileManager.default.enumerator(at: connection, includingPropertiesForKeys: [.isRegularFileKey]) else { continue }
            for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                // Keyed by the object's path (as the ingest stores it), not by the spool's flat file name.
                let relative = String(url.standardizedFileURL.path.dropFirst(connection.standardizedFileURL.path.count + 1))
                result[UploadObject(spoolFileName: relative)?.spoolPath ?? relative] = Array(try Data(contentsOf: url))
            }
        }
        return result
    }
}
