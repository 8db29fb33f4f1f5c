import Foundation
import Testing
import TestSupport
@testable import TransportModel

@Suite("TC-PAVST-2.4")
struct ModifyTests {
    @Test("Wrong ID and another fabric's ID → NOT_FOUND")
    func notFound() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(continuousOptions(expiryTime: 10), fabric: fabric1).connectionID
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.modifyPushTransport(connectionID: id + 1, transportOptions: continuousOptions(), fabric: fabric1)
        }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.modifyPushTransport(connectionID: id, transportOptions: continuousOptions(), fabric: fabric2)
        }
    }

    @Test("Same options with ExpiryTime + 120 → SUCCESS; CurrentConnections shows the ID and new ExpiryTime")
    func expiryChange() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(continuousOptions(expiryTime: 10), fabric: fabric1).connectionID
        try await server.modifyPushTransport(connectionID: id, transportOptions: continuousOptions(expiryTime: 130), fabric: fabric1)
        let current = await server.currentConnections(fabric: fabric1)
        #expect(current.map(\.connectionID) == [id])
        #expect(current.first?.transportOptions?.expiryTime == 130)
    }

    @Test("Validation runs before the lookup: an invalid request for an unknown ID answers the validation status")
    func validationBeforeLookup() async throws {
        let server = try makeServer()
        var options = continuousOptions()
        options.streamUsage = .init(rawValue: 9)
        await expectStatus(.constraintError, field: "streamUsage") { () async throws(TransportCommandError) in
            try await server.modifyPushTransport(connectionID: 42, transportOptions: options, fabric: fabric1)
        }
    }

    @Test("Segments waiting to upload → BUSY, nothing changes")
    func busy() async throws {
        let uploads = UploadQueueProbe()
        let server = try makeServer(uploads: uploads)
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        uploads.setPending(id, true)
        await expectStatus(.busy, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.modifyPushTransport(connectionID: id, transportOptions: continuousOptions(expiryTime: 5), fabric: fabric1)
        }
        #expect(await server.currentConnections(fabric: fabric1).first?.transportOptions?.expiryTime == nil)
        uploads.setPending(id, false)
        try await server.modifyPushTransport(connectionID: id, transportOptions: continuousOptions(expiryTime: 5), fabric: fabric1)
    }

    @Test("Modify re-checks the registries: an unprovisioned TLS endpoint → InvalidTLSEndpoint")
    func registriesRechecked() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        var options = continuousOptions()
        options.tlsEndpointID = 5
        await expectStatus(.cluster(.invalidTLSEndpoint), field: "tlsEndpointID") { () async throws(TransportCommandError) in
            try await server.modifyPushTransport(connectionID: id, transportOptions: options, fabric: fabric1)
        }
    }

    @Test("Writing back what FindTransport returned (lists plus mirrored IDs) → SUCCESS")
    func echoOfNormalisedOptions() async throws {
        let server = try makeServer()
        let allocated = try await server.allocatePushTransport(motionOptions(), fabric: fabric1)
        let readBack = try #require(try await server.findTransport(connectionID: allocated.connectionID, fabric: fabric1).first?.transportOptions)
        try await server.modifyPushTransport(connectionID: allocated.connectionID, transportOptions: readBack, fabric: fabric1)
        #expect(try await server.findTransport(connectionID: allocated.connectionID, fabric: fabric1).first?.transportOptions == readBack)
    }

    @Test("Switching to Motion without the motion fields the stored Continuous transport lacks → INVALID_COMMAND")
    func mergeOnlyFromStored() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        var options = continuousOptions()
        options.triggerOptions = TransportTriggerOptionsStruct(triggerType: .motion, motionZones: .null, motionSensitivity: .null, maxPreRollLen: 0)
        await expectStatus(.invalidCommand, field: "motionTimeControl") { () async throws(TransportCommandError) in
            try await server.modifyPushTransport(connectionID: id, transportOptions: options, fabric: fabric1)
        }
    }

    @Test("ExpiryTime on Modify restarts the TTL from the Modify; without it the deadline stays")
    func expiryRestart() async throws {
        let clock = ManualClock()
        let server = try makeServer(clock: clock)
        let id = try await server.allocatePushTransport(continuousOptions(expiryTime: 10), fabric: fabric1).connectionID
        clock.advance(by: 8)
        try await server.modifyPushTransport(connectionID: id, transportOptions: continuousOptions(expiryTime: 10), fabric: fabric1)
        clock.advance(by: 9)  // 17 s after allocation, 9 s after the Modify
        #expect(await server.currentConnections(fabric: fabric1).count == 1)
        try await server.modifyPushTransport(connectionID: id, transportOptions: continuousOptions(), fabric: fabric1)
        #expect(await server.currentConnections(fabric: fabric1).first?.transportOptions?.expiryTime == 10, "absent ExpiryTime keeps the TTL")
        clock.advance(by: 2)  // 11 s after the Modify that carried ExpiryTime
        #expect(await server.currentConnections(fabric: fabric1).isEmpty)
    }
}

@Suite("TC-PAVST-2.5")
struct DeallocateTests {
    @Test("Wrong ID / other fabric → NOT_FOUND; BUSY while uploading; valid → SUCCESS and CurrentConnections empty")
    func flow() async throws {
        let uploads = UploadQueueProbe()
        let server = try makeServer(uploads: uploads)
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.deallocatePushTransport(connectionID: id + 1, fabric: fabric1)
        }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.deallocatePushTransport(connectionID: id, fabric: fabric2)
        }
        uploads.setPending(id, true)
        await expectStatus(.busy, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.deallocatePushTransport(connectionID: id, fabric: fabric1)
        }
        uploads.setPending(id, false)
        try await server.deallocatePushTransport(connectionID: id, fabric: fabric1)
        #expect(await server.currentConnections(fabric: fabric1).isEmpty)
    }
}

@Suite("TC-PAVST-2.6")
struct SetTransportStatusTests {
    @Test("Wrong ID / other fabric → NOT_FOUND; unknown status → CONSTRAINT_ERROR")
    func refusals() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.setTransportStatus(connectionID: id + 1, transportStatus: .active, fabric: fabric1)
        }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric2)
        }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.setTransportStatus(connectionID: nil, transportStatus: .active, fabric: fabric2)
        }
        await expectStatus(.constraintError, field: "transportStatus") { () async throws(TransportCommandError) in
            try await server.setTransportStatus(connectionID: id, transportStatus: .init(rawValue: 2), fabric: fabric1)
        }
    }

    @Test("Going Active with a privacy mode on → INVALID_IN_STATE", arguments: [
        PrivacyModes(hardPrivacyModeOn: true),
        PrivacyModes(softRecordingPrivacyModeEnabled: true),
        PrivacyModes(softLivestreamPrivacyModeEnabled: true),
    ])
    func privacy(modes: PrivacyModes) async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        try await server.setPrivacyModes(modes)
        await expectStatus(.invalidInState, field: "privacy") { () async throws(TransportCommandError) in
            try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
        }
        try await server.setPrivacyModes(PrivacyModes())
        try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
    }

    @Test("Toggle → Begin for the connection; null ID + Inactive → SUCCESS, the recorder's End; Modify → SUCCESS; reads Inactive")
    func toggle() async throws {
        let server = try makeServer()
        let changes = await server.changes()
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        let events = try await events(of: server) {
            try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
            // What the recorder does on `.statusChanged(id, .active)` for a Continuous transport.
            let session = try await server.recordingStarted(connectionID: id, trigger: .continuous)
            #expect(session == 1)
            try await server.setTransportStatus(connectionID: nil, transportStatus: .inactive, fabric: fabric1)
            // The cluster ends nothing itself: the recorder's machine sees Inactive and ends the recording.
            #expect(await server.runningSessionNumber(connectionID: id) == 1)
            #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
            try await server.modifyPushTransport(connectionID: id, transportOptions: continuousOptions(expiryTime: 60), fabric: fabric1)
        }
        #expect(events == [
            .pushTransportBegin(PushTransportBegin(connectionID: id, triggerType: .continuous, containerType: .cmaf, cmafSessionNumber: 1)),
            .pushTransportEnd(PushTransportEnd(connectionID: id, containerType: .cmaf, cmafSessionNumber: 1)),
        ])
        #expect(await server.currentConnections(fabric: fabric1).map(\.transportStatus) == [.inactive])
        let seen = await collect(changes)
        #expect(seen.contains(.statusChanged(connectionID: id, .active)))
        #expect(seen.contains(.statusChanged(connectionID: id, .inactive)))
    }
}

@Suite("TC-PAVST-2.7")
struct ManuallyTriggerTests {
    @Test("Continuous transport: NOT_FOUND, InvalidTransportStatus while Inactive, InvalidTriggerType while Active")
    func continuous() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: id + 1, activationReason: .userInitiated, fabric: fabric1)
        }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated, fabric: fabric2)
        }
        await expectStatus(.cluster(.invalidTransportStatus), field: "Inactive") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated, fabric: fabric1)
        }
        try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
        await expectStatus(.cluster(.invalidTriggerType), field: "continuously") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated, fabric: fabric1)
        }
    }

    @Test("Command transport: no TimeControl → DYNAMIC_CONSTRAINT_ERROR; privacy → INVALID_IN_STATE; BUSY; then SUCCESS")
    func command() async throws {
        let uploads = UploadQueueProbe()
        let server = try makeServer(uploads: uploads)
        let id = try await server.allocatePushTransport(commandOptions(maxPreRollLen: 4000), fabric: fabric1).connectionID
        try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
        let timeControl = TransportMotionTriggerTimeControlStruct(initialDuration: 30, augmentationDuration: 10, maxDuration: 120, blindDuration: 1)
        await expectStatus(.dynamicConstraintError, field: "timeControl") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated, fabric: fabric1)
        }
        try await server.setPrivacyModes(PrivacyModes(softRecordingPrivacyModeEnabled: true))
        await expectStatus(.invalidInState, field: "privacy") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated, timeControl: timeControl, fabric: fabric1)
        }
        try await server.setPrivacyModes(PrivacyModes(softLivestreamPrivacyModeEnabled: true))  // not this usage
        uploads.setPending(id, true)
        await expectStatus(.busy, field: "connectionID") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated, timeControl: timeControl, fabric: fabric1)
        }
        uploads.setPending(id, false)

        let changes = await server.changes()
        let events = try await events(of: server) {
            try await server.manuallyTriggerTransport(
                connectionID: id, activationReason: .doorbellPressed, timeControl: timeControl, userDefined: Data([1, 2]), fabric: fabric1)
            // The recorder starts the clip it was asked for.
            _ = try await server.recordingStarted(connectionID: id, trigger: .command(.doorbellPressed))
        }
        #expect(events == [.pushTransportBegin(PushTransportBegin(
            connectionID: id, triggerType: .command, activationReason: .doorbellPressed, containerType: .cmaf, cmafSessionNumber: 1))])
        #expect(await collect(changes) == [.manuallyTriggered(ManualTrigger(
            connectionID: id, activationReason: .doorbellPressed, timeControl: timeControl, userDefined: Data([1, 2])))])
    }

    @Test("Argument checks come first: unknown reason, bad TimeControl, oversized UserDefined")
    func argumentChecks() async throws {
        let server = try makeServer()
        await expectStatus(.constraintError, field: "activationReason") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: 99, activationReason: .init(rawValue: 9), fabric: fabric1)
        }
        let zeroInitial = TransportMotionTriggerTimeControlStruct(initialDuration: 0, augmentationDuration: 0, maxDuration: 5, blindDuration: 0)
        await expectStatus(.constraintError, field: "timeControl.initialDuration") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: 99, activationReason: .automation, timeControl: zeroInitial, fabric: fabric1)
        }
        await expectStatus(.constraintError, field: "userDefined") { () async throws(TransportCommandError) in
            try await server.manuallyTriggerTransport(connectionID: 99, activationReason: .automation, userDefined: Data(count: 257), fabric: fabric1)
        }
    }

    @Test("A Motion transport without TimeControl uses its configured MotionTimeControl")
    func motionUsesConfigured() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(motionOptions(), fabric: fabric1).connectionID
        try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
        let changes = await server.changes()
        try await server.manuallyTriggerTransport(connectionID: id, activationReason: .emergency, fabric: fabric1)
        await server.finishSubscriptions()
        #expect(await collect(changes) == [.manuallyTriggered(ManualTrigger(
            connectionID: id, activationReason: .emergency, timeControl: defaultTimeControl, userDefined: nil))])
    }
}

@Suite("TC-PAVST-2.8")
struct FindTransportTests {
    @Test("Wrong ID / other fabric → NOT_FOUND; by ID → that configuration; null → all of the fabric")
    func flow() async throws {
        let server = try makeServer()
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            _ = try await server.findTransport(connectionID: nil, fabric: fabric1)
        }
        let mine = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
        let theirs = try await server.allocatePushTransport(continuousOptions(), fabric: fabric2)
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            _ = try await server.findTransport(connectionID: 77, fabric: fabric1)
        }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in
            _ = try await server.findTransport(connectionID: theirs.connectionID, fabric: fabric1)
        }
        #expect(try await server.findTransport(connectionID: mine.connectionID, fabric: fabric1) == [mine])
        #expect(try await server.findTransport(connectionID: nil, fabric: fabric1) == [mine])
        #expect(try await server.findTransport(connectionID: nil, fabric: fabric2) == [theirs])
    }
}

@Suite("TC-PAVST-2.9")
struct ExpiryTests {
    @Test("ExpiryTime 5 → present and Inactive; 6 s later → CurrentConnections empty")
    func expires() async throws {
        let clock = ManualClock()
        let server = try makeServer(clock: clock)
        _ = try await server.allocatePushTransport(continuousOptions(expiryTime: 5), fabric: fabric1)
        #expect(await server.currentConnections(fabric: fabric1).map(\.transportStatus) == [.inactive])
        clock.advance(by: 4.9)
        #expect(await server.currentConnections(fabric: fabric1).count == 1)
        clock.advance(by: 1.1)
        #expect(await server.currentConnections(fabric: fabric1).isEmpty)
    }

    @Test("Expiry deallocates; the running recording's End still goes out once, when the recorder ends it")
    func expiryEndsRecording() async throws {
        let clock = ManualClock()
        let server = try makeServer(clock: clock)
        let id = try await server.allocatePushTransport(continuousOptions(expiryTime: 5), fabric: fabric1).connectionID
        let changes = await server.changes()
        let events = try await events(of: server) {
            try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
            let session = try await server.recordingStarted(connectionID: id, trigger: .continuous)
            clock.advance(by: 6)
            #expect(try await server.removeExpiredConnections() == [id])
            #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
            #expect(await server.recordingEnded(connectionID: id, sessionNumber: session) == false)
        }
        #expect(events.compactMap(\.begin).count == 1)
        #expect(events.compactMap(\.end) == [PushTransportEnd(connectionID: id, containerType: .cmaf, cmafSessionNumber: 1)])
        let seen = await collect(changes)
        #expect(seen.contains(.deallocated(connectionID: id, reason: .expired)))
    }

    @Test("The expiry timer removes a connection without any command arriving")
    func timer() async throws {
        let clock = ManualClock()
        let server = try makeServer(clock: clock)
        let changes = await server.changes()
        let id = try await server.allocatePushTransport(continuousOptions(expiryTime: 5), fabric: fabric1).connectionID
        let timer = Task { await server.runExpiryTimer() }
        for await change in changes {
            if case .deallocated(let gone, .expired) = change {
                #expect(gone == id)
                break
            }
        }
        timer.cancel()
        await timer.value
        #expect(await server.allConnections().isEmpty)
    }
}

@Suite("TC-PAVST-2.15")
struct UpdateMotionZoneOptionsTests {
    @Test("NOT_FOUND, ALREADY_EXISTS, DYNAMIC_CONSTRAINT_ERROR, InvalidZone, empty and two zones, sensitivity rules")
    func flow() async throws {
        let server = try makeServer()
        let id = try await server.allocatePushTransport(motionOptions(), fabric: fabric1).connectionID
        func update(_ zones: [TransportZoneOptionsStruct], sensitivity: Nullable<UInt8>? = nil, fabric: FabricIndex = fabric1, connectionID: UInt16? = nil) async throws(TransportCommandError) {
            try await server.updateMotionZoneOptions(connectionID: connectionID ?? id, motionZones: .value(zones), motionSensitivity: sensitivity, fabric: fabric)
        }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in try await update([], connectionID: id + 1) }
        await expectStatus(.notFound, field: "connectionID") { () async throws(TransportCommandError) in try await update([], fabric: fabric2) }
        await expectStatus(.alreadyExists, field: "motionZones") { () async throws(TransportCommandError) in
            try await update([.init(zone: .value(1)), .init(zone: .value(1))])
        }
        await expectStatus(.dynamicConstraintError, field: "MaxZones") { () async throws(TransportCommandError) in
            try await update([1, 2, 3].map { .init(zone: .value($0)) } + [.init(zone: .null)])
        }
        await expectStatus(.cluster(.invalidZone), field: "motionZones") { () async throws(TransportCommandError) in
            try await update([.init(zone: .value(14))])
        }
        try await update([])
        #expect(try await server.findTransport(connectionID: id, fabric: fabric1).first?.transportOptions?.triggerOptions.motionZones == .value([]))
        try await update([.init(zone: .value(1)), .init(zone: .value(2))])
        #expect(try await server.findTransport(connectionID: id, fabric: fabric1).first?.transportOptions?.triggerOptions.motionZones
            == .value([.init(zone: .value(1)), .init(zone: .value(2))]))
        await expectStatus(.constraintError, field: "motionSensitivity") { () async throws(TransportCommandError) in
            try await update([], sensitivity: .value(11))
        }
        try await update([], sensitivity: .value(5))
        #expect(try await server.findTransport(connectionID: id, fabric: fabric1).first?.transportOptions?.triggerOptions.motionSensitivity == .value(5))
        // Steps 12–13 send the sensitivity alone: the zones stay as they are.
        try await update([.init(zone: .value(2))])
        try await server.updateMotionZoneOptions(connectionID: id, motionZones: nil, motionSensitivity: .value(7), fabric: fabric1)
        let trigger = try await server.findTransport(connectionID: id, fabric: fabric1).first?.transportOptions?.triggerOptions
        #expect(trigger?.motionZones == .value([.init(zone: .value(2))]) && trigger?.motionSensitivity == .value(7))
    }

    @Test("PERZONESENS: MotionSensitivity given → INVALID_COMMAND")
    func perZone() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(features: .perZoneSensitivity, maxZones: 3))
        let id = try await server.allocatePushTransport(perZoneMotionOptions(), fabric: fabric1).connectionID
        await expectStatus(.invalidCommand, field: "motionSensitivity") { () async throws(TransportCommandError) in
            try await server.updateMotionZoneOptions(
                connectionID: id, motionZones: .value([.init(zone: .value(2), sensitivity: 3)]), motionSensitivity: .value(5), fabric: fabric1)
        }
        try await server.updateMotionZoneOptions(connectionID: id, motionZones: .value([.init(zone: .value(2), sensitivity: 3)]), fabric: fabric1)
    }
}
