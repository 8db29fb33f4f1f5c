import Foundation
import TransportModel

// The camera's Zone Management cluster (`/v1/cameras/{camera}/zoneManagement/…`): the zones AllocatePushTransport's
// `motionZones` name and the detector locates motion in, and the zone triggers. Not fabric-scoped: zones belong to the
// camera.
extension SidecarOperations {
    func zoneManagementAttributes(
        _ input: Operations.ZoneManagementAttributes.Input
    ) async throws -> Operations.ZoneManagementAttributes.Output {
        .ok(.init(body: .json(try await control.transportServer(camera: input.path.camera).zoneManagementAttributes)))
    }

    func createTwoDCartesianZone(
        _ input: Operations.CreateTwoDCartesianZone.Input
    ) async throws -> Operations.CreateTwoDCartesianZone.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let zoneID = try await refusal { try await transport.createTwoDCartesianZone(body.zone) }
        return .ok(.init(body: .json(.init(zoneID: Int(zoneID)))))
    }

    func updateTwoDCartesianZone(
        _ input: Operations.UpdateTwoDCartesianZone.Input
    ) async throws -> Operations.UpdateTwoDCartesianZone.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let zoneID: UInt16 = try Self.integer(body.zoneID, "zoneID")
        try await refusal { try await transport.updateTwoDCartesianZone(zoneID: zoneID, zone: body.zone) }
        return .ok(.init(body: .json(.init())))
    }

    func removeZone(_ input: Operations.RemoveZone.Input) async throws -> Operations.RemoveZone.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let zoneID: UInt16 = try Self.integer(body.zoneID, "zoneID")
        try await refusal { try await transport.removeZone(zoneID: zoneID) }
        return .ok(.init(body: .json(.init())))
    }

    func createOrUpdateTrigger(
        _ input: Operations.CreateOrUpdateTrigger.Input
    ) async throws -> Operations.CreateOrUpdateTrigger.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        try await refusal { try await transport.createOrUpdateTrigger(body.trigger) }
        return .ok(.init(body: .json(.init())))
    }

    func removeTrigger(_ input: Operations.RemoveTrigger.Input) async throws -> Operations.RemoveTrigger.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let zoneID: UInt16 = try Self.integer(body.zoneID, "zoneID")
        try await refusal { try await transport.removeTrigger(zoneID: zoneID) }
        return .ok(.init(body: .json(.init())))
    }

    /// The Sensitivity attribute is writable (Operate privilege); the whole cluster is read above.
    func putZoneSensitivity(_ input: Operations.PutZoneSensitivity.Input) async throws -> Operations.PutZoneSensitivity.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let value: UInt8 = try Self.integer(body.value, "value")
        try await refusal { try await transport.setZoneSensitivity(value) }
        return .ok(.init(body: .json(.init(value: Int(value)))))
    }
}
