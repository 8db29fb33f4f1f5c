import AsyncHTTPClient
import Foundation
import HummingbirdTesting
import SidecarAPI
import Testing
import TestSupport
import TransportModel

/// Reads a live Server-Sent Events response as it arrives.
struct EventStreamReader {
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    /// What arrived and was not consumed yet, keep-alive comments removed.
    var text = ""

    /// Opens the stream (`query` such as `?since=3`, and a `Last-Event-ID` header when given) and consumes its
    /// `: subscribed` comment; replayed frames that came with it stay in `text`.
    static func open(
        _ http: HTTPClient, port: Int, fabric: FabricIndex, query: String = "", lastEventID: String? = nil
    ) async throws -> EventStreamReader {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/cameras/cam1/events\(query)")
        request.headers.add(name: "X-Fabric-Index", value: "\(fabric)")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await http.execute(request, timeout: .seconds(30))
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "content-type") == "text/event-stream")
        var reader = EventStreamReader(iterator: response.body.makeAsyncIterator())
        // Subscribed from here on: events caused after this are delivered.
        try await reader.read(frames: 1)
        let subscribed = ": subscribed\n\n"
        #expect(reader.text.hasPrefix(subscribed), "\(reader.text.debugDescription)")
        reader.text = String(reader.text.dropFirst(subscribed.count))
        return reader
    }

    /// The `id:` of each complete frame in `text`, in order.
    var frameIDs: [UInt64] {
        text.components(separatedBy: "\n\n").dropLast().compactMap { frame in
            frame.split(separator: "\n").first { $0.hasPrefix("id: ") }.flatMap { UInt64($0.dropFirst(4)) }
        }
    }

    /// Reads until the response ends (bounded by the request's 30 s deadline).
    mutating func readToEnd() async throws {
        while let chunk = try await iterator.next() {
            text += String(buffer: chunk)
            text = text.replacingOccurrences(of: ": keep-alive\n\n", with: "")
        }
    }

    private init(iterator: HTTPClientResponse.Body.AsyncIterator) { self.iterator = iterator }

    /// Reads until `frames` blank-line-terminated frames (other than keep-alives) are in `text`, for at most 10 s.
    mutating func read(frames: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while text.components(separatedBy: "\n\n").count - 1 < frames {
            guard ContinuousClock.now < deadline, let chunk = try await iterator.next() else {
                Issue.record("stream ended or timed out with \(text.debugDescription)")
                return
            }
            text += String(buffer: chunk)
            text = text.replacingOccurrences(of: ": keep-alive\n\n", with: "")
        }
    }
}

@Suite struct EventStreamTests {
    /// Begin/End reach the subscriber of the connection's fabric only, as exact SSE frames with their event numbers,
    /// including the End of a recording whose connection was deallocated; a subscriber that goes away is noticed and
    /// dropped.
    @Test func framesPerFabric() async throws {
        let logs = LogRecorder()
        try await withAPI(.live, logs: logs, eventKeepAlive: .milliseconds(100)) { sidecar, client in
            let port = try #require(client.port)
            _ = try await client.addTLSEndpoint(fabric: 1)
            _ = try await client.addTLSEndpoint(fabric: 2)
            #expect(try await allocate(client, Bodies.motionOptions(), fabric: 1) == 1)
            #expect(try await allocate(client, Bodies.motionOptions(), fabric: 2) == 2)
            for (connection, fabric) in [(1, 1), (2, 2)] as [(UInt16, FabricIndex)] {
                let response = try await client.command(
                    "setTransportStatus", #"{"connectionID":\#(connection),"transportStatus":0}"#, fabric: fabric)
                #expect(response.status == .ok)
            }

            try await withHTTPClient { http in
                var fabric1 = try await EventStreamReader.open(http, port: port, fabric: 1)
                var fabric2 = try await EventStreamReader.open(http, port: port, fabric: 2)

                // What the recorder would report; fabric 2's recording is ended by the recorder after its deallocation.
                let server = try #require(sidecar.servers["cam1"])
                let first = try await server.recordingStarted(connectionID: 1, trigger: .motion)
                _ = try await server.recordingStarted(connectionID: 2, trigger: .command(.doorbellPressed))
                #expect(await server.recordingEnded(connectionID: 1, sessionNumber: first))
                let deallocated = try await client.command("deallocatePushTransport", #"{"connectionID":2}"#, fabric: 2)
                #expect(deallocated.status == .ok)
                #expect(await server.recordingEnded(connectionID: 2, sessionNumber: 1))
                _ = try await server.recordingStarted(connectionID: 1, trigger: .command(.userInitiated))

                // Ids are the cluster's event numbers, shared by every fabric: 2 and 4 are fabric 2's.
                try await fabric1.read(frames: 3)
                #expect(fabric1.text == """
                    id: 1
                    event: PushTransportBegin
                    data: {"cmafSessionNumber":1,"connectionID":1,"containerType":0,"triggerType":1}

                    id: 3
                    event: PushTransportEnd
                    data: {"cmafSessionNumber":1,"connectionID":1,"containerType":0}

                    id: 5
                    event: PushTransportBegin
                    data: {"activationReason":0,"cmafSessionNumber":2,"connectionID":1,"containerType":0,"triggerType":0}


                    """)
                try await fabric2.read(frames: 2)
                #expect(fabric2.text == """
                    id: 2
                    event: PushTransportBegin
                    data: {"activationReason":3,"cmafSessionNumber":1,"connectionID":2,"containerType":0,"triggerType":0}

                    id: 4
                    event: PushTransportEnd
                    data: {"cmafSessionNumber":1,"connectionID":2,"containerType":0}


                    """)

                // Both subscribers disconnect; the next keep-alive write fails and each subscription ends.
            }
            let deadline = ContinuousClock.now + .seconds(5)
            while logs.all.filter({ $0 == "event subscriber gone" }).count < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(logs.all.filter { $0 == "event subscriber gone" }.count == 2, "\(logs.all)")
        }
    }

    /// Shutdown: finishing the cluster's subscriptions ends the stream cleanly (the response completes).
    @Test func streamEndsWhenTheClusterFinishesSubscriptions() async throws {
        try await withAPI(.live) { sidecar, client in
            let port = try #require(client.port)
            try await withHTTPClient { http in
                var reader = try await EventStreamReader.open(http, port: port, fabric: 1)
                await sidecar.servers["cam1"]!.finishSubscriptions()
                reader.text = ""
                try await reader.readToEnd()
                #expect(reader.text == "")
            }
        }
    }
}

