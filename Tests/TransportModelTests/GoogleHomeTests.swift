import Foundation
import Testing
@testable import TransportModel

/// Google Home's camera settings (digest §5): partial `modifyPushTransport` and `setTransportStatus` with a nil ID.
@Suite("Google Home flows")
struct GoogleHomeTests {
    /// What the Google sample app sends: only the setting it changes, everything it leaves out nil.
    /// `streamIDs` says how its nil stream IDs reach us: absent, or explicit null.
    private func partialModify(
        stored: TransportOptionsStruct, sensitivity: UInt8? = nil, maxDuration: UInt32? = nil, nullStreamIDs: Bool
    ) -> TransportOptionsStruct {
        TransportOptionsStruct(
            streamUsage: .recording,
            videoStreamID: nullStreamIDs ? .null : nil, audioStreamID: nullStreamIDs ? .null : nil,
            tlsEndpointID: stored.tlsEndpointID, url: stored.url,
            triggerOptions: TransportTriggerOptionsStruct(
                triggerType: .motion, motionZones: nil, motionSensitivity: sensitivity.map { .value($0) },
                motionTimeControl: maxDuration.map { maxDuration in
                    var copy = stored.triggerOptions.motionTimeControl!
                    copy.maxDuration = maxDuration
                    return copy
                },
                maxPreRollLen: nil),
            ingestMethod: .cmafIngest, containerOptions: ContainerOptionsStruct(containerType: .cmaf, cmafContainerOptions: nil),
            expiryTime: nil)
    }

    private func recordingTransport(on server: PushAVStreamTransportServer, timeControl: TransportMotionTriggerTimeControlStruct) async throws -> TransportConfigurationStruct {
        var options = motionOptions(timeControl: timeControl)
        options.expiryTime = 3600
        return try await server.allocatePushTransport(options, fabric: fabric1)
    }

    @Test("Wake-up sensitivity Low/Medium/High changes only motionSensitivity",
          arguments: [UInt8(1), 5, 10], [false, true])
    func wakeUpSensitivity(sensitivity: UInt8, nullStreamIDs: Bool) async throws {
        let server = try makeServer()
        let allocated = try await recordingTransport(on: server, timeControl: defaultTimeControl)
        let stored = try #require(allocated.transportOptions)
        try await server.modifyPushTransport(
            connectionID: allocated.connectionID,
            transportOptions: partialModify(stored: stored, sensitivity: sensitivity, nullStreamIDs: nullStreamIDs), fabric: fabric1)
        let found = try #require(try await server.findTransport(connectionID: nil, fabric: fabric1)
            .first { $0.transportOptions?.streamUsage == .recording }?.transportOptions)
        var expected = stored
        expected.triggerOptions.motionSensitivity = .value(sensitivity)
        #expect(found == expected)
    }

    @Test("Max event length 10…180 s changes only motionTimeControl.maxDuration",
          arguments: [UInt32(10), 15, 30, 60, 120, 180], [false, true])
    func maxEventLength(seconds: UInt32, nullStreamIDs: Bool) async throws {
        let server = try makeServer()
        let timeControl = TransportMotionTriggerTimeControlStruct(initialDuration: 10, augmentationDuration: 5, maxDuration: 30, blindDuration: 2)
        let allocated = try await recordingTransport(on: server, timeControl: timeControl)
        let stored = try #require(allocated.transportOptions)
        try await server.modifyPushTransport(
            connectionID: allocated.connectionID,
            transportOptions: partialModify(stored: stored, maxDuration: seconds, nullStreamIDs: nullStreamIDs), fabric: fabric1)
        let found = try #require(try await server.findTransport(connectionID: allocated.connectionID, fabric: fabric1).first?.transportOptions)
        var expected = stored
        expected.triggerOptions.motionTimeControl?.maxDuration = seconds
        #expect(found == expected)
    }

    @Test("A max event length shorter than the stored InitialDuration → CONSTRAINT_ERROR (our MaxDuration rule)")
    func maxEventLengthBelowInitial() async throws {
        let server = try makeServer()
        let timeControl = TransportMotionTriggerTimeControlStruct(initialDuration: 30, augmentationDuration: 5, maxDuration: 60, blindDuration: 2)
        let allocated = try await recordingTransport(on: server, timeControl: timeControl)
        let request = partialModify(stored: allocated.transportOptions!, maxDuration: 10, nullStreamIDs: false)
        await expectStatus(.constraintError, field: "maxDuration") { () async throws(TransportCommandError) in
            try await server.modifyPushTransport(connectionID: allocated.connectionID, transportOptions: request, fabric: fabric1)
        }
    }

    @Test("setTransportStatus with a nil ID toggles every transport of the fabric, and only those")
    func recordingToggle() async throws {
        let server = try makeServer()
        let a = try await server.allocatePushTransport(motionOptions(), fabric: fabric1).connectionID
        let b = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        let other = try await server.allocatePushTransport(continuousOptions(), fabric: fabric2).connectionID
        func isRecording(_ fabric: FabricIndex) async -> Bool {
            await server.currentConnections(fabric: fabric).contains { $0.transportStatus == .active }
        }
        #expect(await isRecording(fabric1) == false)
        try await server.setTransportStatus(connectionID: nil, transportStatus: .active, fabric: fabric1)
        #expect(await server.currentConnections(fabric: fabric1).map(\.transportStatus) == [.active, .active])
        #expect(await isRecording(fabric1))
        #expect(await isRecording(fabric2) == false, "another fabric's transport is untouched")
        try await server.setTransportStatus(connectionID: nil, transportStatus: .inactive, fabric: fabric1)
        #expect(await isRecording(fabric1) == false)
        #expect(await server.allConnections().map(\.connectionID) == [a, b, other])
    }

    @Test("Google's partial modify decoded from JSON with absent fields")
    func partialModifyFromJSON() async throws {
        let server = try makeServer()
        let allocated = try await recordingTransport(on: server, timeControl: defaultTimeControl)
        let json = """
            {"containerOptions":{"containerType":0},"ingestMethod":0,"streamUsage":1,"tlsEndpointID":1,
             "triggerOptions":{"motionSensitivity":10,"triggerType":1},"url":"https://localhost:1234/streams/1/"}
            """
        let request = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data(json.utf8))
        try await server.modifyPushTransport(connectionID: allocated.connectionID, transportOptions: request, fabric: fabric1)
        let found = try #require(try await server.findTransport(connectionID: allocated.connectionID, fabric: fabric1).first?.transportOptions)
        #expect(found.triggerOptions.motionSensitivity == .value(10))
        #expect(found.triggerOptions.motionTimeControl == defaultTimeControl)
        #expect(found.videoStreams == allocated.transportOptions?.videoStreams)
        #expect(found.expiryTime == 3600)
    }
}
