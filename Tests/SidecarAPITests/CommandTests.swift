import Foundation
import HTTPTypes
import HummingbirdTesting
import Sidecar
import SidecarAPI
import Testing
import TransportModel

/// The exact TransportConfigurationStruct JSON of the Motion transport `Bodies.motionOptions()` allocates as
/// connection 1 of fabric 1: the legacy stream IDs resolved into named VideoStreams/AudioStreams entries ("video",
/// "audio"), Inactive (1).
func motionConfiguration(status: Int = 1, url: String = "https://ingest.example.com/streams/1/") -> String {
    #"{"connectionID":1,"fabricIndex":1,"transportOptions":{"audioStreamID":20,"audioStreams":[{"audioStreamID":20,"#
        + #""audioStreamName":"audio"}],"containerOptions":{"cmafContainerOptions":{"chunkDuration":0,"cmafInterface":0,"#
        + #""segmentDuration":4000},"containerType":0},"ingestMethod":0,"streamUsage":1,"tlsEndpointID":1,"#
        + #""triggerOptions":{"maxPreRollLen":4000,"motionSensitivity":5,"motionTimeControl":{"augmentationDuration":5,"#
        + #""blindDuration":1,"initialDuration":10,"maxDuration":20},"motionZones":[{"zone":1}],"triggerType":1},"#
        + #""url":"\#(url)","videoStreamID":10,"videoStreams":[{"videoStreamID":10,"videoStreamName":"video"}]},"#
        + #""transportStatus":\#(status)}"#
}

@Suite struct CommandTests {
    /// Allocate → find → modify → set status → trigger → deallocate, with the exact bodies; over the router and over
    /// a real socket.
    @Test(arguments: [false, true])
    func roundTrip(live: Bool) async throws {
        try await withAPI(live ? .live : .router) { sidecar, client in
            #expect(try await client.addTLSEndpoint() == 1)

            let allocated = try await client.command("allocatePushTransport", Bodies.allocate(Bodies.motionOptions()))
            #expect(allocated.status == .ok)
            #expect(allocated.headers[.contentType] == "application/json")
            #expect(allocated.text == #"{"transportConfiguration":\#(motionConfiguration())}"#)

            for query in [#"{"connectionID":1}"#, "{}", #"{"connectionID":null}"#, ""] {
                let found = try await client.command("findTransport", query)
                #expect(found.status == .ok, "find \(query)")
                #expect(found.text == #"{"transportConfigurations":[\#(motionConfiguration())]}"#, "find \(query)")
            }

            let newURL = "https://ingest.example.com/streams/9/"
            let modified = try await client.command(
                "modifyPushTransport", #"{"connectionID":1,"transportOptions":\#(Bodies.motionOptions(url: newURL))}"#)
            #expect(modified.status == .ok)
            #expect(modified.text == "{}")

            let activated = try await client.command("setTransportStatus", #"{"connectionID":1,"transportStatus":0}"#)
            #expect(activated.status == .ok)
            #expect(activated.text == "{}")
            let current = try await client.call(.get, "/v1/cameras/cam1/attributes/currentConnections")
            #expect(current.text == #"{"value":[\#(motionConfiguration(status: 0, url: newURL))]}"#)

            let server = try #require(sidecar.servers["cam1"])
            let changes = await server.changes()
            let triggered = try await client.command(
                "manuallyTriggerTransport", #"{"connectionID":1,"activationReason":1,"userDefined":"AQID"}"#)
            #expect(triggered.status == .ok)
            #expect(triggered.text == "{}")

            let deallocated = try await client.command("deallocatePushTransport", #"{"connectionID":1}"#)
            #expect(deallocated.status == .ok)
            #expect(deallocated.text == "{}")
            await server.finishSubscriptions()
            var seen: [TransportChange] = []
            for await change in changes { seen.append(change) }
            // The trigger reached the model with the configured time control and the decoded bytes.
            #expect(seen == [
                .manuallyTriggered(ManualTrigger(
                    connectionID: 1, activationReason: .automation,
                    timeControl: TransportMotionTriggerTimeControlStruct(
                        initialDuration: 10, augmentationDuration: 5, maxDuration: 20, blindDuration: 1),
                    userDefined: Data([1, 2, 3]))),
                .deallocated(connectionID: 1, reason: .command),
            ])

            let gone = try await client.command("findTransport", #"{"connectionID":1}"#)
            #expect(gone.status == .notFound)
            #expect(gone.errorBody == APIErrorBody(
                status: "NOT_FOUND", code: 139, clusterStatus: nil, message: "connectionID: no transport 1 in this fabric"))
            #expect(gone.text.contains(#""clusterStatus":null"#))
        }
    }

    /// Fabric 2 sees nothing of fabric 1's connection: every command answers NOT_FOUND, reads come back empty.
    /// SetTransportStatus without `connectionID` (the Google Home SDK's `setTransportStatus(transportStatus:)` leaves the
    /// optional argument out) acts as null: every connection of the caller's fabric, and no other fabric's.
    @Test(arguments: [#"{"transportStatus":0}"#, #"{"connectionID":null,"transportStatus":0}"#])
    func setTransportStatusWithoutConnectionIDActsOnAll(body: String) async throws {
        try await withAPI { _, client in
            _ = try await client.addTLSEndpoint(fabric: 1)
            _ = try await client.addTLSEndpoint(fabric: 2)
            for fabric: FabricIndex in [1, 1, 2] { _ = try await allocate(client, Bodies.motionOptions(), fabric: fabric) }
            let answer = try await client.command("setTransportStatus", body, fabric: 1)
            #expect(answer.status == .ok && answer.text == "{}", "\(answer.text)")
            for (fabric, active) in [(1, #""transportStatus":0"#), (2, #""transportStatus":1"#)] as [(FabricIndex, String)] {
                let found = try await client.command("findTransport", "{}", fabric: fabric)
                let statuses = found.text.components(separatedBy: #""transportStatus":"#).count - 1
                #expect(statuses == (fabric == 1 ? 2 : 1) && found.text.components(separatedBy: active).count - 1 == statuses,
                        "fabric \(fabric): \(found.text)")
            }
        }
    }

    /// UpdateMotionZoneOptions over HTTP: a field left out keeps its value, null clears the zones, and FeatureMap says
    /// which rules apply (PERZONESENS off on this camera: no per-zone sensitivity, motionSensitivity allowed).
    @Test func updateMotionZoneOptionsKeepsWhatIsLeftOut() async throws {
        try await withAPI { _, client in
            _ = try await client.addTLSEndpoint()
            let id = try await allocate(client, Bodies.motionOptions())
            #expect(try await client.call(.get, "/v1/cameras/cam1/attributes/featureMap").text == #"{"value":0}"#)
            let steps: [(body: String, status: HTTPResponse.Status)] = [
                (#"{"connectionID":\#(id),"motionSensitivity":7}"#, .ok),
                (#"{"connectionID":\#(id),"motionSensitivity":11}"#, .badRequest),  // CONSTRAINT_ERROR
                (#"{"connectionID":\#(id),"motionZones":[{"zone":2},{"zone":1}]}"#, .ok),
                (#"{"connectionID":\#(id),"motionZones":[{"zone":2,"sensitivity":4}]}"#, .badRequest),  // INVALID_COMMAND
                (#"{"connectionID":\#(id),"motionZones":[{"zone":99}]}"#, .unprocessableContent),  // InvalidZone
                (#"{"connectionID":\#(id + 1),"motionSensitivity":3}"#, .notFound),
            ]
            for step in steps {
                let answer = try await client.command("updateMotionZoneOptions", step.body)
                #expect(answer.status == step.status, "\(step.body): \(answer.text)")
            }
            let found = try await client.command("findTransport", #"{"connectionID":\#(id)}"#).text
            #expect(found.contains(#""motionZones":[{"zone":2},{"zone":1}]"#) && found.contains(#""motionSensitivity":7"#), "\(found)")
            #expect(try await client.command("updateMotionZoneOptions", #"{"connectionID":\#(id),"motionZones":null}"#).status == .ok)
            #expect(try await client.command("findTransport", #"{"connectionID":\#(id)}"#).text.contains(#""motionZones":null"#))
        }
    }

    @Test func fabricIsolation() async throws {
        try await withAPI { _, client in
            _ = try await client.addTLSEndpoint(fabric: 1)
            _ = try await client.addTLSEndpoint(fabric: 2)
            #expect(try await allocate(client, Bodies.motionOptions()) == 1)

            let requests: [(String, String)] = [
                ("findTransport", #"{"connectionID":1}"#),
                ("findTransport", "{}"),
                ("modifyPushTransport", #"{"connectionID":1,"transportOptions":\#(Bodies.motionOptions())}"#),
                ("setTransportStatus", #"{"connectionID":1,"transportStatus":0}"#),
                ("setTransportStatus", #"{"connectionID":null,"transportStatus":0}"#),
                ("manuallyTriggerTransport", #"{"connectionID":1,"activationReason":0}"#),
                ("deallocatePushTransport", #"{"connectionID":1}"#),
            ]
            for (name, body) in requests {
                let response = try await client.command(name, body, fabric: 2)
                #expect(response.status == .notFound, "\(name) \(body): \(response.text)")
                #expect(response.errorBody?.status == "NOT_FOUND", "\(name) \(body)")
                #expect(response.errorBody?.code == 139, "\(name) \(body)")
                #expect(response.errorBody?.clusterStatus == nil, "\(name) \(body)")
            }
            let current = try await client.call(.get, "/v1/cameras/cam1/attributes/currentConnections", fabric: "2")
            #expect(current.text == #"{"value":[]}"#)
            // The default fabric is 1, and fabric 1 still has its connection, unchanged (Inactive).
            let own = try await client.command("findTransport", #"{"connectionID":1}"#)
            #expect(own.text == #"{"transportConfigurations":[\#(motionConfiguration())]}"#)
            // Another camera is another cluster instance.
            let otherCamera = try await client.command("findTransport", #"{"connectionID":1}"#, camera: "cam2")
            #expect(otherCamera.status == .notFound)
        }
    }
}
