import Domain
import Testing
@testable import TransportModel

/// Zone Management over the camera's zone registry: create, update and remove user zones, the manufacturer zones
/// (serve.yaml's) kept out of a controller's reach, and zones in use by a transport.
@Suite struct ZoneManagementTests {
    static func square(_ x: UInt16, name: String = "Zone", use: UInt8 = 0, color: String? = "#00FFFF") -> TwoDCartesianZoneStruct {
        TwoDCartesianZoneStruct(name: name, use: use, vertices: [
            .init(x: x, y: 10), .init(x: x + 10, y: 10), .init(x: x + 10, y: 20), .init(x: x, y: 20),
        ], color: color)
    }

    /// (zone, the status CreateTwoDCartesianZone answers, the field it names)
    static let refusedShapes: [(TwoDCartesianZoneStruct, TransportStatus, String)] = [
        (square(40, name: String(repeating: "n", count: 33)), .interactionModel(.constraintError), "zone.name"),
        (square(40, use: 1), .interactionModel(.constraintError), "zone.use"),
        (TwoDCartesianZoneStruct(name: "two", vertices: [.init(x: 0, y: 0), .init(x: 5, y: 5)]), .interactionModel(.constraintError), "zone.vertices"),
        (TwoDCartesianZoneStruct(name: "many", vertices: (0..<13).map { .init(x: $0, y: $0 * $0) }), .interactionModel(.constraintError), "zone.vertices"),
        (square(40, color: "00FFFF"), .interactionModel(.constraintError), "zone.color"),
        (square(40, color: "#00FFFG"), .interactionModel(.constraintError), "zone.color"),
        (square(10), .interactionModel(.alreadyExists), "zone.vertices"),  // the vertices of zone 4 below
    ]

    @Test(arguments: refusedShapes)
    func createRefuses(zone: TwoDCartesianZoneStruct, status: TransportStatus, field: String) async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 8))
        #expect(try await server.createTwoDCartesianZone(Self.square(10)) == 4)
        await expectStatus(status, field: field) { () async throws(TransportCommandError) in
            _ = try await server.createTwoDCartesianZone(zone)
        }
    }

    @Test func lifecycleOfAUserZone() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 5))
        let id = try await server.createTwoDCartesianZone(Self.square(30, name: "porch"))
        #expect(id == 4)  // the lowest free ID after the manufacturer zones 1…3
        var zones = await server.zoneManagementAttributes.zones
        #expect(zones.map(\.zoneID) == [1, 2, 3, 4] && zones.map(\.zoneSource) == [0, 0, 0, 1])
        #expect(zones.last?.twoDCartesianZone == Self.square(30, name: "porch"))

        // A transport may name it at once; while it does, the zone cannot go.
        var options = motionOptions(zones: .value([.init(zone: .value(id))]))
        let connection = try await server.allocatePushTransport(options, fabric: fabric1).connectionID
        await expectStatus(.interactionModel(.invalidInState), field: "transport \(connection)") { () async throws(TransportCommandError) in
            try await server.removeZone(zoneID: id)
        }
        try await server.updateTwoDCartesianZone(zoneID: id, zone: Self.square(50, name: "porch2"))
        zones = await server.zoneManagementAttributes.zones
        #expect(zones.last?.twoDCartesianZone.name == "porch2" && zones.last?.twoDCartesianZone.vertices.first == .init(x: 50, y: 10))

        options.triggerOptions.motionZones = .value([.init(zone: .value(1))])
        try await server.modifyPushTransport(connectionID: connection, transportOptions: options, fabric: fabric1)
        try await server.removeZone(zoneID: id)
        #expect(await server.zoneManagementAttributes.zones.map(\.zoneID) == [1, 2, 3])
        // Gone: a transport can no longer name it.
        await expectStatus(.cluster(.invalidZone), field: "motionZones") { () async throws(TransportCommandError) in
            _ = try await server.allocatePushTransport(motionOptions(zones: .value([.init(zone: .value(id))])), fabric: fabric1)
        }
    }

    @Test func manufacturerZonesAreNotAControllersToChange() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 5))
        await expectStatus(.interactionModel(.constraintError), field: "serve.yaml") { () async throws(TransportCommandError) in
            try await server.removeZone(zoneID: 1)
        }
        await expectStatus(.interactionModel(.constraintError), field: "serve.yaml") { () async throws(TransportCommandError) in
            try await server.updateTwoDCartesianZone(zoneID: 2, zone: Self.square(60))
        }
        await expectStatus(.interactionModel(.notFound), field: "zoneID") { () async throws(TransportCommandError) in
            try await server.removeZone(zoneID: 9)
        }
    }

    @Test func maxZonesBoundsWhatTheCameraHolds() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 4))
        _ = try await server.createTwoDCartesianZone(Self.square(30))
        await expectStatus(.interactionModel(.resourceExhausted), field: "MaxZones") { () async throws(TransportCommandError) in
            _ = try await server.createTwoDCartesianZone(Self.square(60))
        }
    }

    /// serve.yaml's zones replace the manufacturer zones stored before; user zones stay unless one has a configured ID.
    @Test func configuredZonesReplaceManufacturerZonesAndKeepUserZones() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 8))
        let user = try await server.createTwoDCartesianZone(Self.square(30))
        let other = try await server.createTwoDCartesianZone(Self.square(60))
        let configured = [MotionZone(id: 2, name: "door", polygon: [.init(x: 0, y: 0), .init(x: 9, y: 0), .init(x: 9, y: 9)]),
                          MotionZone(id: other, name: "drive", polygon: [.init(x: 0, y: 0), .init(x: 8, y: 0), .init(x: 8, y: 8)])]
        let replaced = try await server.setManufacturerZones(configured)
        #expect(replaced.map(\.id) == [other])
        let zones = await server.zoneManagementAttributes.zones
        #expect(zones.map(\.zoneID) == [2, user, other] && zones.map(\.zoneSource) == [0, 1, 0])
    }

    // MARK: Triggers and Sensitivity

    static func trigger(_ zone: UInt16, initial: UInt32 = 10, augmentation: UInt32 = 5, max: UInt32 = 30, blind: UInt32 = 30,
                        sensitivity: UInt8? = nil) -> ZoneTriggerControlStruct {
        ZoneTriggerControlStruct(zoneID: zone, initialDuration: initial, augmentationDuration: augmentation, maxDuration: max,
                                 blindDuration: blind, sensitivity: sensitivity)
    }

    /// (per-zone sensitivity, trigger, the status CreateOrUpdateTrigger answers, the field it names)
    static let refusedTriggers: [(Bool, ZoneTriggerControlStruct, TransportStatus, String)] = [
        (false, trigger(9), .interactionModel(.notFound), "trigger.zoneID"),
        (false, trigger(1, initial: 0, augmentation: 0), .interactionModel(.constraintError), "trigger.initialDuration"),
        (false, trigger(1, initial: 65536, max: 70000), .interactionModel(.constraintError), "trigger.initialDuration"),
        (false, trigger(1, initial: 4, augmentation: 5), .interactionModel(.constraintError), "trigger.augmentationDuration"),
        (false, trigger(1, initial: 10, max: 9), .interactionModel(.constraintError), "trigger.maxDuration"),
        (false, trigger(1, sensitivity: 5), .interactionModel(.invalidCommand), "trigger.sensitivity"),
        (true, trigger(1), .interactionModel(.invalidCommand), "trigger.sensitivity"),
        (true, trigger(1, sensitivity: 11), .interactionModel(.constraintError), "trigger.sensitivity"),
        (true, trigger(1, sensitivity: 0), .interactionModel(.constraintError), "trigger.sensitivity"),
    ]

    @Test(arguments: refusedTriggers)
    func triggerRefused(perZone: Bool, trigger: ZoneTriggerControlStruct, status: TransportStatus, field: String) async throws {
        let server = try makeServer(capabilities: TransportCapabilities(features: perZone ? .perZoneSensitivity : [], maxZones: 8))
        await expectStatus(status, field: field) { () async throws(TransportCommandError) in
            try await server.createOrUpdateTrigger(trigger)
        }
        #expect(await server.zoneManagementAttributes.triggers.isEmpty)
    }

    @Test func triggersAreSetReplacedAndRemovedAndHoldTheirZone() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 8))
        let user = try await server.createTwoDCartesianZone(Self.square(30))
        try await server.createOrUpdateTrigger(Self.trigger(user, initial: 5, augmentation: 2, max: 20, blind: 3))
        try await server.createOrUpdateTrigger(Self.trigger(2))
        try await server.createOrUpdateTrigger(Self.trigger(user, initial: 6, augmentation: 2, max: 20, blind: 3))  // update
        #expect(await server.zoneManagementAttributes.triggers == [Self.trigger(2), Self.trigger(user, initial: 6, augmentation: 2, max: 20, blind: 3)])
        // What the detector applies: the durations, and the Sensitivity attribute for each (10 until written).
        #expect(await server.resolvedZoneTriggers.map(\.sensitivity) == [10, 10])
        #expect(await server.resolvedZoneTriggers.last?.timeControl == ClipTimeControl(initial: 6, augmentation: 2, max: 20, blind: 3))

        // A zone with a trigger stays until its trigger goes (as the reference server requires).
        await expectStatus(.interactionModel(.invalidInState), field: "removeTrigger") { () async throws(TransportCommandError) in
            try await server.removeZone(zoneID: user)
        }
        try await server.removeTrigger(zoneID: user)
        try await server.removeZone(zoneID: user)
        await expectStatus(.interactionModel(.notFound), field: "zoneID") { () async throws(TransportCommandError) in
            try await server.removeTrigger(zoneID: user)
        }
        #expect(await server.zoneManagementAttributes.triggers.map(\.zoneID) == [2])

        // A manufacturer zone that leaves the configuration takes its trigger with it.
        try await server.setManufacturerZones([MotionZone(id: 1, polygon: [.init(x: 0, y: 0), .init(x: 9, y: 0), .init(x: 9, y: 9)])])
        #expect(await server.zoneManagementAttributes.triggers.isEmpty)
    }

    @Test func sensitivityAttributeAndFeatureMapFollowPerZoneSensitivity() async throws {
        let plain = try makeServer(capabilities: TransportCapabilities(maxZones: 8))
        var attributes = await plain.zoneManagementAttributes
        #expect(attributes.featureMap == 0b101)  // TWODCART | USERDEFINED
        #expect(attributes.sensitivity == 10 && attributes.sensitivityMax == 10)
        try await plain.setZoneSensitivity(3)
        try await plain.createOrUpdateTrigger(Self.trigger(1))
        #expect(await plain.zoneManagementAttributes.sensitivity == 3)
        #expect(await plain.resolvedZoneTriggers.map(\.sensitivity) == [3])
        for wrong: UInt8 in [0, 11] {
            await expectStatus(.interactionModel(.constraintError), field: "sensitivity") { () async throws(TransportCommandError) in
                try await plain.setZoneSensitivity(wrong)
            }
        }

        let perZone = try makeServer(capabilities: TransportCapabilities(features: .perZoneSensitivity, maxZones: 8))
        attributes = await perZone.zoneManagementAttributes
        #expect(attributes.featureMap == 0b111)  // and PERZONESENS
        #expect(attributes.sensitivity == nil)
        await expectStatus(.interactionModel(.unsupportedAttribute), field: "PERZONESENS") { () async throws(TransportCommandError) in
            try await perZone.setZoneSensitivity(3)
        }
        try await perZone.createOrUpdateTrigger(Self.trigger(2, sensitivity: 7))
        #expect(await perZone.resolvedZoneTriggers.map(\.sensitivity) == [7])
    }

    /// Zone events are logged with the transport events, in one numbering, and every fabric reads them.
    @Test func zoneEventsAreLoggedForEveryFabric() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 8))
        _ = try await server.allocatePushTransport(motionOptions(zones: .null), fabric: fabric2)
        await server.emitZoneEvent(.triggered(zone: 2, at: .seconds(1)))
        await server.emitZoneEvent(.stopped(zone: 2, reason: .timeout, at: .seconds(31)))
        let forFabric1 = try await server.loggedEvents(after: 0, fabric: fabric1, limit: 10).map(\.event)
        #expect(forFabric1 == [.zoneTriggered(ZoneTriggeredEvent(zone: 2)), .zoneStopped(ZoneStoppedEvent(zone: 2, reason: .timeout))])
        let forFabric2 = try await server.loggedEvents(after: 0, fabric: fabric2, limit: 10)
        #expect(forFabric2.map(\.event.name) == ["ZoneTriggered", "ZoneStopped"])
        #expect(forFabric2.map(\.fabricIndex) == [CameraEvent.noFabric, CameraEvent.noFabric])
        #expect(forFabric2[1].number == forFabric2[0].number + 1)
    }
}
