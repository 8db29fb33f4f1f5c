import Foundation
import Testing
import TestSupport

/// Issue 47 (1): a Modify that lands while a Begin is in flight. On main before the fix the destination being retired
/// counted only sessions whose Begin the cluster had committed, so a session whose Begin was asked for but not yet
/// answered when the Modify closed the destination lost every object ("is lost … handed over after its delivery
/// closed"): 4–6 of 100 such rounds reached neither ingest. Each round here triggers and modifies back to back (the
/// Modify is sent as the trigger's answer arrives, the narrowest window), alternating the ingest.
extension ServeEndToEndTests {
    @Test func aModifyRightAfterATriggerLosesNoSession() async throws {
        let a = try await ServeIngest("race-a")
        let b = try await ServeIngest("race-b")
        defer {
            try? FileManager.default.removeItem(at: a.directory)
            try? FileManager.default.removeItem(at: b.directory)
        }
        let serverA = try await a.start()
        let serverB = try await b.start()
        let serve = try await Serve(directory: a.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            defer { events.stop() }
            let endpointA = try await serve.addTLSEndpoint(pki: a.pki, port: serverA.port)
            let endpointB = try await serve.addTLSEndpoint(pki: b.pki, port: serverB.port)
            let options = [
                TransportJSON.options(endpointID: endpointA, ingestPort: serverA.port, path: "a/", trigger: .command(preRollMs: 0)),
                TransportJSON.options(endpointID: endpointB, ingestPort: serverB.port, path: "b/", trigger: .command(preRollMs: 0)),
            ]
            let id = try await serve.allocate(options[0])
            try await serve.setActive(id)
            let rounds = 24
            for round in 0..<rounds {
                try await serve.trigger(id, initial: 1, max: 1)
                try await serve.command("modifyPushTransport", ["connectionID": id, "transportOptions": options[(round + 1) % 2]])
                // The next round starts once this one's sessions are paired: each round is its own race.
                _ = try await events.wait("round \(round)'s sessions ended", timeout: .seconds(30)) { events in
                    let mine = events.filter { $0.connectionID == id }
                    return mine.filter(\.isBegin).count > round && Set(mine.filter(\.isBegin).map(\.session)) == Set(mine.filter { !$0.isBegin }.map(\.session))
                }
            }
            let sessions = Set(events.events(of: id).filter(\.isBegin).map(\.session))
            #expect(sessions.count >= rounds)
            func arrived(_ ingest: ServeIngest, _ prefix: String, _ session: Int) -> Bool {
                ingest.endpoint.storedPaths.contains { $0.hasPrefix("\(prefix)session_\(session)/") && $0.hasSuffix(".m4s") }
            }
            // A clip the Modify ended before its first keyframe has no frame to send: the recorder drops it, logged
            // ("clip dropped", with its session) and counted — a recording gap the README names, not a delivery loss.
            // Seen once in 24 rounds on CI (fresh clone, loaded 2-core machine).
            let dropped = Set(serve.process.output.split(separator: "\n").filter { $0.contains("clip dropped") && $0.contains("connection=\(id) ") }
                .compactMap { line in sessions.first { line.contains(" session=\($0) ") } })
            #expect(dropped.count <= 2, "clips dropped: \(dropped.sorted())")
            // Every other session reaches one ingest, with a segment at least; none reaches both.
            try await Fixtures.waitUntil("every session at an ingest", timeout: .seconds(60)) {
                sessions.subtracting(dropped).allSatisfy { arrived(a, "a/", $0) || arrived(b, "b/", $0) }
            }
            for session in sessions.sorted() {
                #expect(!(arrived(a, "a/", session) && arrived(b, "b/", session)), "session \(session) reached both ingests")
            }
            #expect(!serve.process.output.contains("handed over after its delivery closed"), "\(serve.process.output)")
            #expect(!serve.process.output.contains("is lost"))
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await serverA.stop()
        await serverB.stop()
    }
}
