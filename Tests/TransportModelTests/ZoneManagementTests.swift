import Motion
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
        (square(40, name: String(repeating: "n", count: 17)), .interactionModel(.constraintError), "zone.name"),
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
}
