import AsyncHTTPClient
import Foundation
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// The event log across a restart of the real process: events recorded before it are replayed after it from
    /// `?since=0` (SSE and JSON, same numbers and fields), and the numbers after it are above every number before.
    @Test func eventLogSurvivesARestart() async throws {
        let ingest = try await ServeIngest("eventlog")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        var serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            let (id, feed) = try await serve.activeCommandConnection(to: ingest, port: server.port)
            var events = feed
            try await serve.trigger(id, reason: 1, initial: 1, max: 2)
            try await events.wait("session 1 Begin and End", timeout: .seconds(20)) { $0.count >= 2 }
            events.stop()
            let before = try await logged(serve, since: 0)
            #expect(before.map(\.type) == ["PushTransportBegin", "PushTransportEnd"], "\(before)")
            #expect(before.map(\.number) == [1, 2], "a new store numbers from 1")

            #expect(try await serve.stop(SIGTERM), "\(serve.process.output)")
            try await serve.shutdown()
            serve = try await Serve(directory: ingest.directory, source: TestPaths.media(Self.media).path, run: 2)
            try await serve.waitUntilStreaming()

            // Replayed after the restart, over both forms of the route.
            #expect(try await logged(serve, since: 0) == before)
            #expect(try await replayedIDs(serve, query: "?since=0", frames: 2) == before.map(\.number))

            events = try await serve.subscribe()
            try await serve.trigger(id, reason: 2, initial: 1, max: 2)
            try await events.wait("session 2 Begin and End", timeout: .seconds(20)) { $0.count >= 2 }
            events.stop()
            let after = try await logged(serve, since: before.last!.number)
            #expect(after.map(\.type) == ["PushTransportBegin", "PushTransportEnd"], "\(after)")
            let highestBefore = before.map(\.number).max()!
            #expect(after.allSatisfy { $0.number > highestBefore }, "before \(before), after \(after)")
            #expect(after.map(\.number) == after.map(\.number).sorted() && Set(after.map(\.number)).count == 2)
            #expect(try await logged(serve, since: 0).map(\.number) == before.map(\.number) + after.map(\.number))
        } catch {
            try await serve.shutdown()
            throw error
        }
        try await serve.shutdown()
    }

    /// `kill -9` in the middle of a Continuous recording: the killed process never sent that recording's End; the
    /// next start sends it (logged after the Begin), so a controller reading the log from where it left off sees every
    /// Begin matched. The connection then records again.
    @Test func killDashNineMidRecordingTheNextStartSendsTheOwedEnd() async throws {
        let ingest = try await ServeIngest("killend")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        var serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: server.port, trigger: .continuous))
            try await serve.setActive(id)
            try await events.wait("Begin of session 1", timeout: .seconds(15)) { $0.contains { $0.isBegin && $0.session == 1 } }
            events.stop()
            _ = try await serve.stop(SIGKILL)
            try await serve.shutdown()

            serve = try await Serve(directory: ingest.directory, source: TestPaths.media(Self.media).path, run: 2)
            try await serve.waitUntilStreaming()
            var log: [LoggedEvent] = []
            try await Fixtures.waitUntil("Begin of session 2 logged", timeout: .seconds(20)) {
                log = try await logged(serve, since: 0)
                return log.contains { $0.type == "PushTransportBegin" && $0.event.contains("\"cmafSessionNumber\":2") }
            }
            let session1 = log.filter { $0.event.contains("\"cmafSessionNumber\":1") }
            #expect(session1.map(\.type) == ["PushTransportBegin", "PushTransportEnd"], "\(log)")
            #expect(session1.map(\.number) == session1.map(\.number).sorted())
            #expect(serve.process.output.contains("recording interrupted by the last stop"), "\(serve.process.output)")
        } catch {
            try await serve.shutdown()
            throw error
        }
        try await serve.shutdown()
        await server.stop()
    }

    /// Zone Management's triggers through the real process: a controller's zone over the whole picture with a short
    /// trigger reports ZoneTriggered and ZoneStopped in the event log as the looped file's motion comes and goes,
    /// alternating, numbered with the transport events, read by every fabric; the zone cannot go while its trigger
    /// stands, and after RemoveTrigger no more zone events come.
    @Test func zoneTriggersReportZoneTriggeredAndZoneStopped() async throws {
        let ingest = try await ServeIngest("zonetriggers")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            let vertices = [[0, 0], [1279, 0], [1279, 719], [0, 719]].map { ["x": $0[0], "y": $0[1]] }
            let created = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/createTwoDCartesianZone",
                                               JSON.text(["zone": ["name": "everything", "use": 0, "vertices": vertices]]))
            let zone = try #require(created["zoneID"] as? Int)
            let trigger: [String: Any] = ["zoneID": zone, "initialDuration": 1, "augmentationDuration": 1, "maxDuration": 2,
                                          "blindDuration": 0]
            _ = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/createOrUpdateTrigger",
                                     JSON.text(["trigger": trigger]))
            let attributes = try await serve.json(.GET, "/v1/cameras/cam1/zoneManagement/attributes")
            #expect((attributes["triggers"] as? [[String: Any]])?.compactMap { $0["zoneID"] as? Int } == [zone])
            #expect(attributes["sensitivity"] as? Int == 10 && attributes["featureMap"] as? Int == 0b101)

            var log: [LoggedEvent] = []
            try await Fixtures.waitUntil("a ZoneTriggered and its ZoneStopped", timeout: .seconds(30)) {
                log = try await logged(serve, since: 0)
                return log.contains { $0.type == "ZoneStopped" }
            }
            let zoneEvents = log.filter { $0.type.hasPrefix("Zone") }
            #expect(zoneEvents.first?.type == "ZoneTriggered", "\(log)")
            for (index, event) in zoneEvents.enumerated() {
                #expect(event.type == (index.isMultiple(of: 2) ? "ZoneTriggered" : "ZoneStopped"), "alternating: \(zoneEvents)")
                #expect(event.event.contains("\"zone\":\(zone)"), "\(event)")
            }
            let stopped = try #require(zoneEvents.first { $0.type == "ZoneStopped" })
            #expect(stopped.event.contains("\"reason\":0") || stopped.event.contains("\"reason\":1"), "\(stopped)")
            // Zones belong to no fabric: another fabric reads the same events.
            let (status, text) = try await serve.request(.GET, "/v1/cameras/cam1/events?since=0&limit=1000",
                                                         headers: [("Accept", "application/json"), ("X-Fabric-Index", "2")])
            #expect(status == 200 && text.contains("ZoneTriggered"), "\(status) \(text)")

            // The zone stays while its trigger does (INVALID_IN_STATE); RemoveTrigger, then RemoveZone.
            let (refused, refusal) = try await serve.request(.POST, "/v1/cameras/cam1/zoneManagement/commands/removeZone",
                                                             JSON.text(["zoneID": zone]))
            #expect(refused == 409 && refusal.contains("INVALID_IN_STATE"), "\(refused) \(refusal)")
            _ = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/removeTrigger", JSON.text(["zoneID": zone]))
            // Once the trigger is gone the zone is not triggered: the last zone event is a ZoneStopped (the one the
            // removal sends if the zone was triggered), and none follows.
            var afterRemoval: [LoggedEvent] = []
            try await Fixtures.waitUntil("the zone's last event is a ZoneStopped", timeout: .seconds(10)) {
                afterRemoval = try await logged(serve, since: 0).filter { $0.type.hasPrefix("Zone") }
                return afterRemoval.last?.type == "ZoneStopped"
            }
            _ = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/removeZone", JSON.text(["zoneID": zone]))
            try await serve.waitForFrames(30)
            #expect(try await logged(serve, since: 0).filter { $0.type.hasPrefix("Zone") } == afterRemoval)
        } catch {
            try await serve.shutdown()
            throw error
        }
        try await serve.shutdown()
    }

    /// One entry of the JSON read: its number and type, and the event's fields as JSON text.
    struct LoggedEvent: Equatable, CustomStringConvertible {
        var number: UInt64
        var type: String
        var time: String
        var event: String
        var description: String { "#\(number) \(type) \(event)" }
    }

    /// `GET /v1/cameras/cam1/events?since=N` with `Accept: application/json`.
    private func logged(_ serve: Serve, since: UInt64) async throws -> [LoggedEvent] {
        let (status, text) = try await serve.request(.GET, "/v1/cameras/cam1/events?since=\(since)&limit=1000",
                                                     headers: [("Accept", "application/json")])
        try #require(status == 200, "\(status) \(text)")
        let page = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let entries = try #require(page["events"] as? [[String: Any]], "\(text)")
        return try entries.map { entry in
            LoggedEvent(
                number: UInt64(try #require(entry["number"] as? Int)), type: try #require(entry["type"] as? String),
                time: try #require(entry["time"] as? String), event: JSON.text(try #require(entry["event"])))
        }
    }

    /// The ids of the first `frames` event frames of the SSE stream opened with `query`.
    private func replayedIDs(_ serve: Serve, query: String, frames: Int) async throws -> [UInt64] {
        var request = HTTPClientRequest(url: serve.api + "/v1/cameras/cam1/events" + query)
        if let authorization = serve.authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await serve.client.execute(request, timeout: .seconds(10))
        try #require(response.status == .ok)
        var text = ""
        var ids: [UInt64] = []
        for try await chunk in response.body {
            text += String(buffer: chunk)
            ids = text.split(separator: "\n").filter { $0.hasPrefix("id: ") }.compactMap { UInt64($0.dropFirst(4)) }
            if ids.count >= frames { break }
        }
        #expect(text.hasPrefix(": subscribed\n\n"), "\(text)")
        return ids
    }
}
