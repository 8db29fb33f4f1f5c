import Foundation
import TransportModel

// The Push AV Stream Transport commands (`/v1/cameras/{camera}/commands/…`), one handler each: the document's body to
// the cluster's arguments (numbers to the cluster's widths, naming the field that does not fit), the cluster's answer
// back. The cluster's structs and enums are the bodies' own types (see Scripts/openapi-generator/config.yaml).
extension SidecarOperations {
    func allocatePushTransport(
        _ input: Operations.AllocatePushTransport.Input
    ) async throws -> Operations.AllocatePushTransport.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let configuration = try await refusal {
            try await transport.allocatePushTransport(body.transportOptions, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init(transportConfiguration: configuration))))
    }

    func modifyPushTransport(_ input: Operations.ModifyPushTransport.Input) async throws -> Operations.ModifyPushTransport.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let connectionID: UInt16 = try Self.integer(body.connectionID, "connectionID")
        try await refusal {
            try await transport.modifyPushTransport(
                connectionID: connectionID, transportOptions: body.transportOptions, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init())))
    }

    /// `connectionID` null or left out: every connection of the caller's fabric.
    func setTransportStatus(_ input: Operations.SetTransportStatus.Input) async throws -> Operations.SetTransportStatus.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let connectionID: UInt16? = try body.connectionID.map { try Self.integer($0, "connectionID") }
        try await refusal {
            try await transport.setTransportStatus(
                connectionID: connectionID, transportStatus: body.transportStatus, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init())))
    }

    func manuallyTriggerTransport(
        _ input: Operations.ManuallyTriggerTransport.Input
    ) async throws -> Operations.ManuallyTriggerTransport.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let connectionID: UInt16 = try Self.integer(body.connectionID, "connectionID")
        try await refusal {
            try await transport.manuallyTriggerTransport(
                connectionID: connectionID, activationReason: body.activationReason, timeControl: body.timeControl,
                userDefined: body.userDefined, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init())))
    }

    /// `connectionID` null or left out: every connection of the caller's fabric.
    func findTransport(_ input: Operations.FindTransport.Input) async throws -> Operations.FindTransport.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let connectionID: UInt16? = try body.connectionID.map { try Self.integer($0, "connectionID") }
        let found = try await refusal {
            try await transport.findTransport(connectionID: connectionID, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init(transportConfigurations: found))))
    }

    /// A field left out keeps its value (the body is the cluster model's ``UpdateMotionZoneOptionsRequest``, which
    /// tells left out from null).
    func updateMotionZoneOptions(
        _ input: Operations.UpdateMotionZoneOptions.Input
    ) async throws -> Operations.UpdateMotionZoneOptions.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        try await refusal {
            try await transport.updateMotionZoneOptions(
                connectionID: body.connectionID, motionZones: body.motionZones, motionSensitivity: body.motionSensitivity,
                fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init())))
    }

    func deallocatePushTransport(
        _ input: Operations.DeallocatePushTransport.Input
    ) async throws -> Operations.DeallocatePushTransport.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let transport = try control.transportServer(camera: input.path.camera)
        let connectionID: UInt16 = try Self.integer(body.connectionID, "connectionID")
        try await refusal {
            try await transport.deallocatePushTransport(connectionID: connectionID, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init())))
    }
}
