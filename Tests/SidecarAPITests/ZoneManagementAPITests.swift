import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import TransportModel

/// Zone Management over HTTP: the attributes, and each command's refusal at its HTTP status (the full create → use →
/// remove cycle runs against the model in ZoneManagementTests and through `pushav serve` in the end-to-end suite).
@Suite struct ZoneManagementAPITests {
    static let zone = ##"{"name":"porch","use":0,"vertices":[{"x":30,"y":10},{"x":40,"y":10},{"x":40,"y":20}],"color":"#FF00FF"}"##

    @Test func attributesListTheCamerasZones() async throws {
        try await withAPI { _, client in
            let answer = try await client.call(.get, "/v1/cameras/cam1/zoneManagement/attributes")
            #expect(answer.status == .ok)
            let attributes = try JSONDecoder().decode(ZoneManagementAttributes.self, from: Data(answer.text.utf8))
            #expect(attributes.maxZones == 3 && attributes.featureMap == 0b101 && attributes.sensitivityMax == 10 && attributes.sensitivity == 10)
            #expect(attributes.zones.map(\.zoneID) == [1, 2, 3] && attributes.zones.allSatisfy { $0.zoneSource == 0 })
            #expect(attributes.zones[0].twoDCartesianZone.vertices == [.init(x: 10, y: 10), .init(x: 20, y: 10), .init(x: 20, y: 20)])
        }
    }

    @Test(arguments: [
        ("createTwoDCartesianZone", #"{"zone":\#(zone)}"#, HTTPResponse.Status.conflict, "RESOURCE_EXHAUSTED"),  // 3 of MaxZones 3
        ("createTwoDCartesianZone", #"{"zone":{"name":"x","use":1,"vertices":[{"x":1,"y":1},{"x":2,"y":1},{"x":2,"y":2}]}}"#,
         .badRequest, "CONSTRAINT_ERROR"),
        ("updateTwoDCartesianZone", #"{"zoneID":1,"zone":\#(zone)}"#, .badRequest, "CONSTRAINT_ERROR"),  // serve.yaml's
        ("updateTwoDCartesianZone", #"{"zoneID":7,"zone":\#(zone)}"#, .notFound, "NOT_FOUND"),
        ("removeZone", #"{"zoneID":2}"#, .badRequest, "CONSTRAINT_ERROR"),
        ("removeZone", #"{"zoneID":"two"}"#, .badRequest, "INVALID_COMMAND"),
    ])
    func commandsAnswerTheClustersStatus(command: String, body: String, status: HTTPResponse.Status, matter: String) async throws {
        try await withAPI { _, client in
            let answer = try await client.call(.post, "/v1/cameras/cam1/zoneManagement/commands/\(command)", json: body)
            #expect(answer.status == status, "\(answer.text)")
            #expect(answer.text.contains(#""status":"\#(matter)""#), "\(answer.text)")
        }
    }
}
