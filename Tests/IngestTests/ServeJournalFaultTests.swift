import Foundation
import Testing
import TestSupport

/// Issue 47 (3): a failed journal write while a backlog drains. On main before the fix a delivery whose commit failed
/// was forgotten (`try?`), so the lane met the object again as pending and PUT it again 5–7 ms after its 2xx (24
/// objects of one run; a strict ingest refused the second header as a duplicate and the uploader gave it up). Now a
/// failed commit is logged and counted, the delivery is kept in memory and committed again: within one process no
/// object that got a 2xx is sent again.
extension ServeEndToEndTests {
    @Test func journalWriteFaultsDuringADrainSendNothingTwice() async throws {
        let ingest = try await ServeIngest("journal-faults")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        // The ingest is down for a while: its port stays held (refusing) until it binds, so no other test takes it.
        let reservation = try LocalPorts.reserveTCPPort()
        let port = reservation.port
        let serve = try await Serve(directory: ingest.directory, source: TestPaths.media(Self.media).path,
                                    launcher: ["/usr/bin/fiu-run", "-x"])
        var server: RunningServer?
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            defer { events.stop() }
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: port)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: port,
                                                                    trigger: .command(preRollMs: 0)))
            try await serve.setActive(id)
            // A backlog: three sessions recorded while the ingest is down.
            for session in 1...3 {
                try await serve.trigger(id, initial: 2, max: 2)
                _ = try await events.wait("session \(session) ended", timeout: .seconds(20)) { events in
                    events.contains { !$0.isBegin && $0.connectionID == id && $0.session == session }
                }
            }
            let pending = try await serve.pendingUploads()
            #expect(pending >= 6, "a backlog to drain")
            // Three in ten pwrite calls fail (SQLite's journal writes among them) while it drains.
            let pid = serve.process.pid
            _ = try await Shell.run("fiu-ctrl -c 'enable_random name=posix/io/rw/pwrite,probability=0.3' \(pid)")
            reservation.release()
            server = try await ingest.start(port: port)
            try await Fixtures.waitUntil("every session's segments at the ingest", timeout: .seconds(60)) {
                (1...3).allSatisfy { session in
                    ingest.endpoint.storedPaths.contains { $0.hasPrefix("session_\(session)/") && $0.hasSuffix(".m4s") }
                }
            }
            _ = try await Shell.run("fiu-ctrl -c 'disable name=posix/io/rw/pwrite' \(pid)")
            try await Fixtures.waitUntil("the spool drained", timeout: .seconds(60)) { try await serve.pendingUploads() == 0 }
            // Nothing that got a 2xx was PUT again.
            var delivered: Set<String> = []
            var again: [String] = []
            for arrival in ingest.endpoint.arrivals {
                if delivered.contains(arrival.path) { again.append(arrival.path) }
                if (200..<300).contains(arrival.status) { delivered.insert(arrival.path) }
            }
            #expect(again.isEmpty, "PUT again after a 2xx: \(again)")
            #expect(!serve.process.output.contains("upload given up"), "\(serve.process.output.suffix(4000))")
            let failedCommits = serve.process.output.components(separatedBy: "could not record a delivery in the spool's journal").count - 1
            print("measured: \(failedCommits) failed journal commits, \(delivered.count) objects delivered once each")
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server?.stop()
    }
}
