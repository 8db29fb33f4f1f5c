import Domain
import Foundation
import Motion
import Recorder
import Testing
import Timeline
import TransportModel
import TransportRecording

/// Which sensitivity a Motion transport's clips match motion at: its own `motionSensitivity`, else (null) the Zone
/// Management Sensitivity attribute; for a zone it names, the zone's own configured sensitivity first (serve.yaml),
/// then the same chain; PERZONESENS entries carry their own.
struct MotionSensitivityResolutionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var motionSensitivity: UInt8?
        var zones: [TransportZoneOptionsStruct]?
        var zoneManagementSensitivity: UInt8
        /// The filter's transport-wide sensitivity, and each zone entry's.
        var expected: (Int, [Int])
        var testDescription: String { name }
    }

    static let configuredZones = [
        MotionZone(id: 1, polygon: [.init(x: 0, y: 0), .init(x: 9, y: 0), .init(x: 9, y: 9)], sensitivity: 4),
        MotionZone(id: 2, polygon: [.init(x: 20, y: 0), .init(x: 29, y: 0), .init(x: 29, y: 9)]),
    ]

    static let cases: [Case] = [
        Case(name: "own sensitivity wins", motionSensitivity: 7, zones: nil, zoneManagementSensitivity: 3, expected: (7, [])),
        Case(name: "null follows the Zone Management Sensitivity", motionSensitivity: nil, zones: nil, zoneManagementSensitivity: 3,
             expected: (3, [])),
        Case(name: "a configured zone's own sensitivity, else the attribute", motionSensitivity: nil,
             zones: [.init(zone: .value(1)), .init(zone: .value(2))], zoneManagementSensitivity: 6, expected: (6, [4, 6])),
        Case(name: "per-zone entries carry their own", motionSensitivity: nil,
             zones: [.init(zone: .value(2), sensitivity: 9)], zoneManagementSensitivity: 2, expected: (2, [9])),
    ]

    @Test(arguments: cases)
    func resolved(_ c: Case) throws {
        var options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data("""
            {"streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": 1, "url": "https://localhost:9/", "ingestMethod": 0,
             "triggerOptions": {"triggerType": 1, "motionZones": null, "motionSensitivity": null, "maxPreRollLen": 2000,
               "motionTimeControl": {"initialDuration": 2, "augmentationDuration": 1, "maxDuration": 4, "blindDuration": 0}},
             "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0}}}
            """.utf8))
        options.triggerOptions.motionSensitivity = c.motionSensitivity.map { .value($0) } ?? .null
        options.triggerOptions.motionZones = c.zones.map { .value($0) } ?? .null
        let policy = ClipPolicy(transport: options, zones: Self.configuredZones, zoneManagementSensitivity: c.zoneManagementSensitivity,
                                output: URL(fileURLWithPath: "/tmp"), continuousSessionLength: .seconds(300))
        #expect(policy.motionFilter.sensitivity == c.expected.0)
        #expect(policy.motionFilter.zones.map(\.sensitivity) == c.expected.1)
    }
}
