import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
@testable import SidecarAPI
import Synchronization
import Testing
import TestSupport
import TransportModel

/// The event log through the API: SSE replay from `Last-Event-ID` or `?since=` then live, and the JSON read.
@Suite struct EventLogAPITests {
    /// Connection 1 (fabric 1) and 2 (fabric 2), Active, on cam1.
    private func twoActiveTransports(_ client: any TestClientProtocol) async throws {
        _ = try await client.addTLSEndpoint(fabric: 1)
        _ = try await client.addTLSEndpoint(fabric: 2)
        #expect(try await allocate(client, Bodies.motionOptions(), fabric: 1) == 1)
        #expect(try await allocate(client, Bodies.motionOptions(), fabric: 2) == 2)
        for (connection, fabric) in [(1, 1), (2, 2)] as [(UInt16, FabricIndex)] {
            let response = try await client.command(
                "setTransportStatus", #"{"connectionID":\#(connection),"transportStatus":0}"#, fabric: fabric)
            #expect(response.status == .ok)
        }
    }

    /// A whole recording (Begin, End) on `connection`, as the recorder would report it.
    private func record(_ connection: UInt16, on server: PushAVStreamTransportServer) async throws {
        let session = try await server.recordingStarted(connectionID: connection, trigger: .motion)
        #expect(await server.recordingEnded(connectionID: connection, sessionNumber: session))
    }

    /// GET …/events as JSON.
    private func read(_ client: any TestClientProtocol, _ query: String, fabric: FabricIndex = 1,
                      lastEventID: String? = nil) async throws -> TestResponse {
        var headers = HTTPFields()
        headers[.accept] = "application/json"
        headers[HTTPField.Name("X-Fabric-Index")!] = "\(fabric)"
        if let lastEventID { headers[HTTPField.Name("Last-Event-ID")!] = lastEventID }
        return try await client.execute(uri: "/v1/cameras/cam1/events\(query)", method: .get, headers: headers, body: nil)
    }

    private struct Page: Decodable {
        struct Entry: Decodable {
            var number: UInt64
            var time: String
            var type: String
        }
        var events: [Entry]
        var next: UInt64
    }

    enum Resume: String, CaseIterable, Sendable {
        case lastEventID, since, bothHeaderWins
    }

    /// Events 1…6 are logged (2 recordings of fabric 1 around one of fabric 2); a fabric-1 subscriber resuming after
    /// event 2 gets 5 and 6 replayed, then live events, never fabric 2's, each once.
    @Test(arguments: Resume.allCases)
    func sseReplaysThenFollows(resume: Resume) async throws {
        try await withAPI(.live) { sidecar, client in
            let port = try #require(client.port)
            try await twoActiveTransports(client)
            let server = try #require(sidecar.servers["cam1"])
            for connection: UInt16 in [1, 2, 1] { try await record(connection, on: server) }

            try await withHTTPClient { http in
                let (query, lastEventID): (String, String?) = switch resume {
                case .lastEventID: ("", "2")
                case .since: ("?since=2", nil)
                case .bothHeaderWins: ("?since=0", "2")
                }
                var reader = try await EventStreamReader.open(http, port: port, fabric: 1, query: query, lastEventID: lastEventID)
                for connection: UInt16 in [1, 2] { try await record(connection, on: server) }
                _ = try await server.recordingStarted(connectionID: 1, trigger: .motion)
                try await reader.read(frames: 5)
                #expect(reader.frameIDs == [5, 6, 7, 8, 11])
                #expect(reader.text.hasPrefix("""
                    id: 5
                    event: PushTransportBegin
                    data: {"cmafSessionNumber":2,"connectionID":1,"containerType":0,"triggerType":1}

                    id: 6
                    event: PushTransportEnd
                    data: {"cmafSessionNumber":2,"connectionID":1,"containerType":0}

                    id: 7

                    """))
                // Ends the streams (as shutdown does), so the server does not wait for them.
                await server.finishSubscriptions()
            }
        }
    }

    /// Events keep coming while subscribers connect from `?since=0`: each sees every one of its fabric's events,
    /// replayed or live, exactly once and in order.
    @Test func noGapNoDuplicateWhileEventsArrive() async throws {
        try await withAPI(.live) { sidecar, client in
            let port = try #require(client.port)
            try await twoActiveTransports(client)
            let server = try #require(sidecar.servers["cam1"])
            try await withHTTPClient { http in
                let recordings = 40
                let producer = Task {
                    for index in 0..<recordings { try await record(index % 3 == 2 ? 2 : 1, on: server) }
                }
                var readers: [EventStreamReader] = []
                for _ in 0..<4 { readers.append(try await EventStreamReader.open(http, port: port, fabric: 1, query: "?since=0")) }
                try await producer.value
                let expected = try await server.loggedEvents(after: 0, fabric: 1, limit: 1000).map(\.number)
                #expect(expected.count == 2 * (recordings - recordings / 3))
                for var reader in readers {
                    try await reader.read(frames: expected.count)
                    #expect(reader.frameIDs == expected)
                }
                await server.finishSubscriptions()
            }
        }
    }

    @Test("JSON read: since, limit and next page through the caller's fabric's events", arguments: [
        // (query, numbers, next)
        ("", [1, 2, 5, 6, 7, 8], 8),
        ("?since=0&limit=2", [1, 2], 2),
        ("?since=2&limit=2", [5, 6], 6),
        ("?since=6&limit=2", [7, 8], 8),
        ("?since=8", [], 8),
        ("?limit=1000&since=4", [5, 6, 7, 8], 8),
        ("?since=99", [], 99),
    ] as [(String, [UInt64], UInt64)])
    func jsonPages(query: String, numbers: [UInt64], next: UInt64) async throws {
        try await withAPI { sidecar, client in
            try await twoActiveTransports(client)
            let server = try #require(sidecar.servers["cam1"])
            for connection: UInt16 in [1, 2, 1, 1] { try await record(connection, on: server) }
            let response = try await read(client, query)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json")
            let page = try JSONDecoder().decode(Page.self, from: Data(buffer: response.body))
            #expect(page.events.map(\.number) == numbers)
            #expect(page.next == next)
        }
    }

    @Test func jsonEntryShape() async throws {
        try await withAPI { sidecar, client in
            try await twoActiveTransports(client)
            try await record(1, on: try #require(sidecar.servers["cam1"]))
            let response = try await read(client, "?limit=1")
            #expect(response.text == #"{"events":[{"event":{"cmafSessionNumber":1,"connectionID":1,"containerType":0,"triggerType":1},"#
                + #""number":1,"time":"2025-06-15T15:06:40Z","type":"PushTransportBegin"}],"next":1}"#)
            // Last-Event-ID is honoured by the JSON read too.
            let after = try await read(client, "", lastEventID: "1")
            #expect(try JSONDecoder().decode(Page.self, from: Data(buffer: after.body)).events.map(\.type) == ["PushTransportEnd"])
        }
    }

    @Test("Bad since / limit / Last-Event-ID → 400 naming it", arguments: [
        ("?since=abc", nil, "since"),
        ("?since=-1", nil, "since"),
        ("?since=18446744073709551616", nil, "since"),
        ("?since=", nil, "since"),
        ("?since=1&since=2", nil, "since"),
        ("?limit=0", nil, "limit"),
        ("?limit=1001", nil, "limit"),
        ("?limit=ten", nil, "limit"),
        ("", "x7", "Last-Event-ID"),
    ] as [(String, String?, String)])
    func badQuery(query: String, lastEventID: String?, field: String) async throws {
        try await withAPI { _, client in
            for json in [true, false] {
                var headers = HTTPFields()
                if json { headers[.accept] = "application/json" }
                if let lastEventID { headers[HTTPField.Name("Last-Event-ID")!] = lastEventID }
                let response = try await client.execute(uri: "/v1/cameras/cam1/events\(query)", method: .get, headers: headers, body: nil)
                #expect(response.status == .badRequest)
                let error = try #require(response.errorBody)
                #expect(error.status == "INVALID_COMMAND")
                #expect(error.message.hasPrefix("\(field): "), "\(error.message)")
            }
        }
    }

    /// Fabric 3 owns nothing: its JSON read is empty and its replay delivers no frame, only what follows.
    @Test func anotherFabricSeesNothing() async throws {
        try await withAPI(.live) { sidecar, client in
            let port = try #require(client.port)
            try await twoActiveTransports(client)
            let server = try #require(sidecar.servers["cam1"])
            for connection: UInt16 in [1, 2] { try await record(connection, on: server) }
            let page = try JSONDecoder().decode(Page.self, from: Data(buffer: try await read(client, "?since=0", fabric: 3).body))
            #expect(page.events.isEmpty)
            #expect(page.next == 0)
            let fabric2 = try JSONDecoder().decode(Page.self, from: Data(buffer: try await read(client, "", fabric: 2).body))
            #expect(fabric2.events.map(\.number) == [3, 4])

            try await withHTTPClient { http in
                var reader = try await EventStreamReader.open(http, port: port, fabric: 3, query: "?since=0")
                await server.finishSubscriptions()
                try await reader.readToEnd()
                #expect(reader.text == "")
            }
        }
    }
}

/// The replay/live seam, deterministically: events emitted after the subscription but before the log is read are in
/// both the log and the live stream; the subscriber gets each once.
@Suite struct EventReplaySeamTests {
    @Test func eventsBetweenSubscribingAndReadingComeOnce() async throws {
        let sidecar = try TestSidecar()
        let server = try #require(sidecar.servers["cam1"])
        var registries = await server.currentRegistries
        registries.tls.endpoints[TLSEndpointKey(fabricIndex: 1, endpointID: 1)] = TLSEndpoint(
            fabricIndex: 1, endpointID: 1, hostname: "ingest.example.com", port: 443, caCertificate: Data([0x30]),
            clientCertificateChain: [], privateKey: Data([0x04]))
        try await server.setRegistries(registries)
        let options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data(Bodies.motionOptions().utf8))
        let id = try await server.allocatePushTransport(options, fabric: 1).connectionID
        try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: 1)
        let first = try await server.recordingStarted(connectionID: id, trigger: .motion)  // event 1, before

        var stream = TransportEventStream(
            transport: server, fabric: 1, logger: Logger(label: "seam-test"), keepAlive: .seconds(3600))
        stream.afterSubscribing = {
            // Event 2: after the subscription, before the log read: in the replay and in the live stream.
            _ = await server.recordingEnded(connectionID: id, sessionNumber: first)
        }
        let body = try await stream.body(after: 0)
        _ = try await server.recordingStarted(connectionID: id, trigger: .motion)  // event 3, live only
        await server.finishSubscriptions()
        var text = ""
        for try await chunk in body { text += String(decoding: chunk, as: UTF8.self) }
        #expect(text.hasPrefix(": subscribed\n\n"))
        let ids = text.split(separator: "\n").filter { $0.hasPrefix("id: ") }
        #expect(ids == ["id: 1", "id: 2", "id: 3"], "\(text)")
    }

    /// A log whose reads fail (its database broke), writes work: the JSON read and an SSE resume both answer the
    /// cluster's FAILURE naming the log, never a 500.
    private final class UnreadableEventLog: TransportEventLog {
        struct ReadFailure: Error, CustomStringConvertible { var description: String { "disk I/O error" } }
        private let log = VolatileTransportEventLog()
        func loadEventNumberReservation() throws -> UInt64 { try log.loadEventNumberReservation() }
        func reserveEventNumbers(below limit: UInt64) throws { try log.reserveEventNumbers(below: limit) }
        func append(_ entry: LoggedTransportEvent) throws { try log.append(entry) }
        func events(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent] {
            throw ReadFailure()
        }
    }

    @Test("An unreadable log is FAILURE (422), not a 500", arguments: [true, false])
    func unreadableLogIsAFailure(json: Bool) async throws {
        try await withAPI(sidecar: try TestSidecar(eventLog: UnreadableEventLog())) { _, client in
            var headers = HTTPFields()
            if json { headers[.accept] = "application/json" }
            let response = try await client.execute(uri: "/v1/cameras/cam1/events?since=0", method: .get, headers: headers)
            #expect(response.status == .unprocessableContent)
            let body = try JSONDecoder().decode(APIErrorBody.self, from: Data(buffer: response.body))
            #expect(body.status == "FAILURE")
            #expect(body.message.contains("event log") && body.message.contains("disk I/O error"), "\(body.message)")
        }
    }
}
