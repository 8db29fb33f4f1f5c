import Domain
import Foundation
import Testing
@testable import TransportModel

/// The node's other clusters as values, without a node: each command is a mutating function on its cluster, so its
/// rules are tables here (the node's tests check only that it stores, publishes and passes its capabilities in).
@Suite struct ClusterValueTests {
    static func triangle(_ x: Double, source: MotionZone.ZoneSource = .user, id: ZoneID) -> MotionZone {
        MotionZone(id: id, polygon: [.init(x: x, y: 0), .init(x: x + 10, y: 0), .init(x: x, y: 10)], source: source)
    }

    static func zoneStruct(_ x: UInt16) -> TwoDCartesianZoneStruct {
        TwoDCartesianZoneStruct(name: "z\(x)", vertices: [.init(x: x, y: 0), .init(x: x + 10, y: 0), .init(x: x, y: 10)])
    }

    /// Manufacturer zone 1, user zones 2 and 5: IDs 3 and 4 are free.
    static var cluster: ZoneManagement {
        ZoneManagement(zones: [triangle(0, source: .manufacturer, id: 1), triangle(20, id: 2), triangle(50, id: 5)])
    }

    /// (what the command does, the status it answers or nil for success, the zone IDs afterwards)
    static let commands: [(String, @Sendable (inout ZoneManagement) throws -> Void, TransportStatus?, [ZoneID])] = [
        ("create takes the lowest free ID", { _ = try $0.createTwoDCartesianZone(zoneStruct(80), maxZones: 8) }, nil, [1, 2, 3, 5]),
        ("create at MaxZones", { _ = try $0.createTwoDCartesianZone(zoneStruct(80), maxZones: 3) }, .interactionModel(.resourceExhausted), [1, 2, 5]),
        ("create over an existing shape", { _ = try $0.createTwoDCartesianZone(zoneStruct(20), maxZones: 8) }, .interactionModel(.alreadyExists), [1, 2, 5]),
        ("update a manufacturer zone", { try $0.updateTwoDCartesianZone(zoneID: 1, zone: zoneStruct(80)) }, .interactionModel(.constraintError), [1, 2, 5]),
        ("update an unknown zone", { try $0.updateTwoDCartesianZone(zoneID: 9, zone: zoneStruct(80)) }, .interactionModel(.notFound), [1, 2, 5]),
        ("update onto another zone's shape", { try $0.updateTwoDCartesianZone(zoneID: 2, zone: zoneStruct(50)) }, .interactionModel(.alreadyExists), [1, 2, 5]),
        ("remove a user zone", { try $0.removeZone(zoneID: 5, namedByTransports: []) }, nil, [1, 2]),
        ("remove a zone a transport names", { try $0.removeZone(zoneID: 5, namedByTransports: [7]) }, .interactionModel(.invalidInState), [1, 2, 5]),
        ("remove a manufacturer zone", { try $0.removeZone(zoneID: 1, namedByTransports: []) }, .interactionModel(.constraintError), [1, 2, 5]),
    ]

    @Test(arguments: commands)
    func zoneCommand(_ name: String, command: @Sendable (inout ZoneManagement) throws -> Void,
                     status: TransportStatus?, zonesAfter: [ZoneID]) {
        var cluster = Self.cluster
        do {
            try command(&cluster)
            #expect(status == nil, "\(name): succeeded")
        } catch {
            #expect((error as? TransportCommandError)?.status == status, "\(name): \(error)")
        }
        #expect(cluster.sortedZones.map(\.id) == zonesAfter, "\(name)")
    }

    @Test func triggersFollowTheirZonesAndTheSensitivity() throws {
        var cluster = Self.cluster
        let trigger = ZoneTriggerControlStruct(zoneID: 2, initialDuration: 5, augmentationDuration: 2, maxDuration: 20, blindDuration: 3)
        try cluster.createOrUpdateTrigger(trigger, perZoneSensitivity: false)
        #expect(throws: TransportCommandError.self) {
            try cluster.createOrUpdateTrigger(ZoneTriggerControlStruct(zoneID: 9, initialDuration: 5, augmentationDuration: 2, maxDuration: 20, blindDuration: 3), perZoneSensitivity: false)
        }
        // A zone with a trigger cannot go until the trigger does.
        #expect(throws: TransportCommandError.self) { try cluster.removeZone(zoneID: 2, namedByTransports: []) }
        try cluster.setSensitivity(4, perZoneSensitivity: false)
        #expect(cluster.resolvedTriggers == [ZoneTrigger(zone: 2, timeControl: trigger.timeControl, sensitivity: 4)])
        #expect(throws: TransportCommandError.self) { try cluster.setSensitivity(4, perZoneSensitivity: true) }
        #expect(throws: TransportCommandError.self) { try cluster.setSensitivity(11, perZoneSensitivity: false) }

        // The configuration takes ID 2 for a manufacturer zone: the user zone gives way, its trigger stays on the ID
        // (the zone exists), and manufacturer zone 1, no longer configured, goes.
        let replaced = cluster.setManufacturerZones([Self.triangle(90, id: 2)])
        #expect(replaced.map(\.id) == [2])
        #expect(cluster.sortedZones.map(\.id) == [2, 5] && cluster.zones[2]?.source == .manufacturer)
        _ = cluster.setManufacturerZones([])
        #expect(cluster.triggers.isEmpty, "a trigger goes with its zone")
        #expect(cluster.attributes(maxZones: 8, perZoneSensitivity: false).sensitivity == 4)
        #expect(cluster.attributes(maxZones: 8, perZoneSensitivity: true).sensitivity == nil)
    }

    @Test func tlsEndpointsTakeTheLowestFreeIDOfTheirFabric() throws {
        var endpoints = TLSClientEndpoints([tlsEndpoint(fabric: fabric1, id: 1), tlsEndpoint(fabric: fabric1, id: 3),
                                            tlsEndpoint(fabric: fabric2, id: 1)])
        #expect(try endpoints.addUnderFreeID(tlsEndpoint(fabric: fabric1, id: 99)) == 2)
        #expect(try endpoints.addUnderFreeID(tlsEndpoint(fabric: fabric1, id: 99)) == 4)
        #expect(try endpoints.addUnderFreeID(tlsEndpoint(fabric: fabric2, id: 99)) == 2)
        endpoints.removeFabric(fabric1)
        #expect(endpoints.endpoints.keys.map(\.endpointID).sorted() == [1, 2])
        #expect(endpoints.endpoints.keys.allSatisfy { $0.fabricIndex == fabric2 })
    }

    /// (a change, the sections it touches)
    static let changes: [(String, @Sendable (inout TransportRegistries) -> Void, RegistrySections)] = [
        ("nothing", { _ in }, []),
        ("a TLS endpoint", { $0.tls.set(tlsEndpoint(fabric: fabric1, id: 7)) }, .tlsClient),
        ("a zone", { $0.zoneManagement.zones[9] = triangle(70, id: 9) }, .zoneManagement),
        ("the sensitivity", { $0.zoneManagement.sensitivity = 3 }, .zoneManagement),
        ("privacy", { $0.streams.privacy.hardPrivacyModeOn = true }, .streams),
        ("a stream and a zone", { $0.streams.audio[audioStreamID] = nil; $0.zoneManagement.zones[1] = nil }, [.streams, .zoneManagement]),
    ]

    @Test(arguments: changes)
    func sectionsDifferingFrom(_ name: String, change: @Sendable (inout TransportRegistries) -> Void, sections: RegistrySections) {
        let before = standardRegistries()
        var after = before
        change(&after)
        #expect(after.sections(differingFrom: before) == sections, "\(name)")
    }
}
