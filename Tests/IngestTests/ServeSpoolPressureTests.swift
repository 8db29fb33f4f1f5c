import Foundation
import Testing
import TestSupport

/// Issue 47 (2): eviction under two connections. With `spoolCapacityMiB: 4`, two Continuous transports and the ingest
/// down, eviction on main before the fix took the oldest session whatever its state: a session of the *other*
/// connection still being written lost its header, and once the ingest was back its later segments were refused for
/// good ("upload given up … HTTP 412"). Now only finished sessions are evicted (or, with none left, the storing
/// session is cut short with its End): everything that reaches the ingest is whole, nothing is given up.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ServeSpoolPressureTests {
    @Test func evictionUnderTwoConnectionsNeverBreaksARecording() async throws {
        let ingest = try await ServeIngest("spool-pressure")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        // The ingest is down for a while: its port stays held (refusing) until it binds, so no other test takes it.
        let reservation = try LocalPorts.reserveTCPPort()
        let port = reservation.port
        // Evictions follow the bytes recorded, and those the looped file's pace at real time: with every reference
        // picture decoded for motion analysis, a loaded 2-core CI machine ran the file at a third of real time and
        // the outage outlasted its bound. This test is about the spool, not motion: key pictures only keep the pace.
        let serve = try await Serve(directory: ingest.directory, source: TestPaths.media(ServeEndToEndTests.media).path,
                                    settings: "spoolCapacityMiB: 4\nuploadMaxBackoffMs: 1000", camera: "analysis: keyframes")
        var server: RunningServer?
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            defer { events.stop() }
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: port)
            var ids: [Int] = []
            for path in ["c1/", "c2/"] {
                let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: port, path: path,
                                                                        trigger: .continuous))
                try await serve.setActive(id)
                ids.append(id)
            }
            // The outage lasts until the spool has evicted three times: it is full, and sessions of both connections
            // have come and gone (each pass of the looped file ends them).
            try await Fixtures.waitUntil("three evictions", timeout: .seconds(120)) {
                serve.log.all.filter { $0.text.contains("spool full: evicted a whole session") }.count >= 3
            }
            reservation.release()
            server = try await ingest.start(port: port)
            try await Fixtures.waitUntil("both connections delivering again", timeout: .seconds(60)) {
                ["c1/", "c2/"].allSatisfy { prefix in ingest.endpoint.storedPaths.contains { $0.hasPrefix(prefix) && $0.hasSuffix(".m4s") } }
            }
            for id in ids { try await serve.setActive(id, false) }
            try await Fixtures.waitUntil("the spool drained", timeout: .seconds(60)) { try await serve.pendingUploads() == 0 }
            let output = serve.process.output
            #expect(!output.contains("upload given up"), "\(output.suffix(6000))")
            #expect(!output.contains("refused for good"))
            // Every segment that arrived has its track's header at the ingest (the strict ingest checks the order).
            let stored = Set(ingest.endpoint.storedPaths)
            for path in stored where path.hasSuffix(".m4s") {
                let parts = path.split(separator: "/").dropLast()
                let header = parts.joined(separator: "/") + "/\(parts.last ?? "").init"
                #expect(stored.contains(header), "\(path) without its header \(header)")
            }
        } catch {
            // The outage's retries fill the log ("not sent" every second per lane): what explains a failure is the
            // recordings' course, the spool's evictions and refusals, and anything else that was not a retry.
            let course = serve.process.output.split(separator: "\n").filter { !$0.contains("outcome=not sent") }
            Issue.record("\(error)\n\(course.suffix(80).joined(separator: "\n"))")
        }
        try await serve.shutdown()
        await server?.stop()
    }
}
