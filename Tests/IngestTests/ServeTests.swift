import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// `pushav serve` end to end: the real process, a looped file standing in for a camera, commands over its HTTP API,
/// the cluster's events over Server-Sent Events, uploads over mutual TLS to a real HTTPS endpoint.
@Suite(.timeLimit(.minutes(2))) struct ServeTests {
    /// TLS endpoint and a Command transport through the API, a manual trigger with a doorbell reason: one Begin (Command,
    /// that reason, session 1) and one End on the event stream, session_1 uploaded over mutual TLS, and SIGTERM exits 0.
    @Test func manualTriggerRecordsAnnouncesAndUploadsOneSession() async throws {
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let ingest = try await setup.endpoint.start(pki: setup.pki)
        let serve = try await Serve(directory: setup.directory, media: "a_720p30_h264_main.mp4")
        do {
            try await Fixtures.waitUntil("camera streaming", timeout: .seconds(30)) {
                let (_, text) = try await serve.request(.GET, "/v1/cameras")
                return text.contains("\"streaming\"")
            }
            let pem = { (name: String) in String(decoding: FileManager.default.contents(atPath: setup.pki.path(name)) ?? Data(),
                                                 as: UTF8.self) }
            let tlsBody = try JSONSerialization.data(withJSONObject: [
                "hostname": "localhost", "port": ingest.port, "caCertificate": pem("ca.pem"),
                "clientCertificate": pem("client.pem"), "clientKey": pem("client.key"),
            ])
            let endpointID = try #require(try await serve.json(.POST, "/v1/tls/endpoints", String(decoding: tlsBody, as: UTF8.self))["endpointID"] as? Int)
            let options = #"{"streamUsage":1,"videoStreamID":1,"tlsEndpointID":\#(endpointID),"#
                + #""url":"https://localhost:\#(ingest.port)/","triggerOptions":{"triggerType":0,"maxPreRollLen":2000},"#
                + #""ingestMethod":0,"containerOptions":{"containerType":0,"cmafContainerOptions":"#
                + #"{"cmafInterface":0,"segmentDuration":2000,"chunkDuration":0}}}"#
            let allocated = try await serve.json(.POST, "/v1/cameras/cam1/commands/allocatePushTransport",
                                                 #"{"transportOptions":\#(options)}"#)
            let configuration = try #require(allocated["transportConfiguration"] as? [String: Any], "\(allocated)")
            let connectionID = try #require(configuration["connectionID"] as? Int)
            // A new connection is Inactive until the controller activates it.
            _ = try await serve.json(.POST, "/v1/cameras/cam1/commands/setTransportStatus",
                                     #"{"connectionID": \#(connectionID), "transportStatus": 0}"#)

            // Subscribe to the events before triggering.
            var events = HTTPClientRequest(url: serve.api + "/v1/cameras/cam1/events")
            events.headers.add(name: "Accept", value: "text/event-stream")
            let stream = try await serve.client.execute(events, timeout: .seconds(60))
            #expect(stream.status == .ok)
            let collected = Task { () -> String in
                var text = ""
                for try await chunk in stream.body {
                    text += String(buffer: chunk)
                    if text.contains("PushTransportEnd") { break }
                }
                return text
            }
            _ = try await serve.json(.POST, "/v1/cameras/cam1/commands/manuallyTriggerTransport", """
                {"connectionID": \(connectionID), "activationReason": 3,
                 "timeControl": {"initialDuration": 3, "augmentationDuration": 1, "maxDuration": 6, "blindDuration": 0}}
                """)
            let eventText = try await withThrowingTaskGroup(of: String.self) { group in
                group.addTask { try await collected.value }
                group.addTask {
                    try await Task.sleep(for: .seconds(30))
                    collected.cancel()
                    throw TestFailure("no PushTransportEnd within 30 s")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
            let data = eventText.split(separator: "\n").filter { $0.hasPrefix("data:") }
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.dropFirst(5).utf8)) as? [String: Any] }
            try #require(data.count == 2, "\(eventText)")
            #expect(eventText.contains("event: PushTransportBegin") && eventText.contains("event: PushTransportEnd"))
            #expect(data[0]["triggerType"] as? Int == 0 && data[0]["activationReason"] as? Int == 3, "\(data[0])")
            #expect(data[0]["cmafSessionNumber"] as? Int == 1 && data[1]["cmafSessionNumber"] as? Int == 1, "\(data)")

            // 3 to 5 s of video (from the pre-roll keyframe to t0 + 3 s) in 2 s segments, delivered over mutual TLS.
            try await Fixtures.waitUntil("session_1 uploaded", timeout: .seconds(30)) {
                let stored = setup.endpoint.storedPaths
                return stored.contains("session_1/video/video.init")
                    && stored.filter { $0.hasPrefix("session_1/video/segment_") }.count >= 2
            }
            #expect(!setup.endpoint.storedPaths.contains { $0.hasPrefix("session_2") })

            serve.process.signal(SIGTERM)
            let exited = try await serve.process.waitForExit(timeout: .seconds(15))
            #expect(exited && serve.process.exitedNormally && serve.process.status == 0, "\(serve.process.output)")
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await ingest.stop()
    }
}
