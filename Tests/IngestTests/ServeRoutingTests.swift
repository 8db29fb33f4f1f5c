import Crypto
import Domain
import Foundation
import Ingest
import Testing
import TestSupport

/// Every recording goes where it was recorded for. Two ingests with PKIs of their own (each accepts only client
/// certificates of its own CA); ingest A is down while a Command transport records session 1 for it; then the
/// connection is modified to ingest B, deallocated, or the process restarts. When A comes back, session 1 arrives at A
/// — byte for byte what was spooled — and B never sees it; what was recorded for B arrives only at B.
///
/// Before destinations (issue 28) the Modify case delivered session 1 to B, under B's URL with B's certificate.
extension ServeEndToEndTests {
    enum RoutingChange: String, CaseIterable, Sendable {
        /// ModifyPushTransport to B (another URL and TLS endpoint), then session 2 recorded for B.
        case modify
        /// DeallocatePushTransport while session 1 waits.
        case deallocate
        /// ModifyPushTransport to B, session 2 for B, then SIGTERM and a new start: the retired destination is
        /// rebuilt from the spool.
        case modifyThenRestart
        /// ModifyPushTransport to B, then kill -9 and a new start.
        case modifyThenKill
    }

    @Test(arguments: RoutingChange.allCases)
    func eachSessionReachesOnlyTheIngestItWasRecordedFor(_ change: RoutingChange) async throws {
        let a = try await ServeIngest("route-a-\(change.rawValue)")
        let b = try await ServeIngest("route-b-\(change.rawValue)")
        defer {
            try? FileManager.default.removeItem(at: a.directory)
            try? FileManager.default.removeItem(at: b.directory)
        }
        // The ingest is down for a while: its port stays held (refusing) until it binds, so no other test takes it.
        let reservationA = try LocalPorts.reserveTCPPort()
        let portA = reservationA.port
        let serverB = try await b.start()
        var serverA: RunningServer?
        var serve = try await Serve(directory: a.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            var events = try await serve.subscribe()
            let endpointA = try await serve.addTLSEndpoint(pki: a.pki, port: portA)
            let endpointB = try await serve.addTLSEndpoint(pki: b.pki, port: serverB.port)
            let optionsA = TransportJSON.options(endpointID: endpointA, ingestPort: portA, path: "a/", trigger: .command(preRollMs: 0))
            let optionsB = TransportJSON.options(endpointID: endpointB, ingestPort: serverB.port, path: "b/",
                                                 trigger: .command(preRollMs: 0))
            let id = try await serve.allocate(optionsA)
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 2, max: 2)
            try await events.wait("session 1 ended", timeout: .seconds(20)) { $0.contains { !$0.isBegin && $0.session == 1 } }
            // What session 1 left in the spool, once its header and segment are there (A is down: nothing goes out).
            let spooled = try await Self.spooledObjects(of: 1, in: a.directory, atLeast: 2)

            switch change {
            case .modify, .modifyThenRestart, .modifyThenKill:
                try await serve.command("modifyPushTransport", ["connectionID": id, "transportOptions": optionsB])
                try await serve.trigger(id, initial: 2, max: 2)
                try await events.wait("session 2 ended", timeout: .seconds(20)) { $0.contains { !$0.isBegin && $0.session == 2 } }
                try await Fixtures.waitUntil("session 2 at B", timeout: .seconds(30)) {
                    b.endpoint.storedPaths.contains("b/session_2/video/segment_1001.m4s")
                }
            case .deallocate:
                try await serve.command("deallocatePushTransport", ["connectionID": id])
            }
            if change == .modifyThenRestart || change == .modifyThenKill {
                events.stop()
                #expect(try await serve.stop(change == .modifyThenKill ? SIGKILL : SIGTERM))
                try await serve.shutdown()
                serve = try await Serve(directory: a.directory, source: TestPaths.media(Self.media).path, run: 2)
                try await serve.waitUntilStreaming()
                events = try await serve.subscribe()
            }
            reservationA.release()
            serverA = try await a.start(port: portA)
            try await Fixtures.waitUntil("session 1 at A", timeout: .seconds(60)) {
                spooled.keys.allSatisfy { a.endpoint.storedPaths.contains("a/" + $0) }
            }
            for (path, digest) in spooled {
                let received = try #require(a.stored(under: "a/" + path)["a/" + path], "\(path)")
                #expect(Data(SHA256.hash(data: received)) == digest, "\(path) arrived changed")
            }
            #expect(!b.endpoint.started.contains { $0.contains("session_1/") }, "B saw session 1: \(b.endpoint.started)")
            #expect(!a.endpoint.started.contains { $0.contains("session_2/") }, "A saw session 2: \(a.endpoint.started)")
            #expect(b.endpoint.started.allSatisfy { $0.hasPrefix("b/") } && a.endpoint.started.allSatisfy { $0.hasPrefix("a/") })
            let checked = try cmafErrors(trackDirectory: a.root.appendingPathComponent("a/session_1/video"))
            #expect(checked.segments >= 1 && checked.errors.isEmpty, "\(checked)")
            #expect(serve.process.output.contains("destination retired") || change == .modifyThenRestart || change == .modifyThenKill)
            events.stop()
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await serverA?.stop()
        await serverB.stop()
    }

    /// The spooled objects of `session` (paths relative to the connection's URL, with their SHA-256), once there
    /// are at least `count` of them and their number held still over two reads (the session's writer is done).
    static func spooledObjects(of session: SessionNumber, in directory: URL, atLeast count: Int) async throws -> [String: Data] {
        let root = directory.appendingPathComponent("state/spool/objects")
        var last: [String: Data] = [:]
        try await Fixtures.waitUntil("session \(session) spooled", timeout: .seconds(30)) {
            var found: [String: Data] = [:]
            for label in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] {
                let base = root.appendingPathComponent(label)
                for name in (try? FileManager.default.contentsOfDirectory(atPath: base.path)) ?? [] {
                    guard let object = UploadObject(spoolFileName: name), object.session == session else { continue }
                    let relative = object.spoolPath
                    let url = base.appendingPathComponent(name)
                    var isDirectory: ObjCBool = false
                    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                          let bytes = FileManager.default.contents(atPath: url.path) else { continue }
                    found[relative] = Data(SHA256.hash(data: bytes))
                }
            }
            defer { last = found }
            return found.count >= count && found == last
        }
        return last
    }
}
