import Sidecar
import TransportModel

// A camera's cluster attributes (`/v1/cameras/{camera}/attributes/…`): the Push AV Stream Transport's
// CurrentConnections, SupportedFormats and FeatureMap, and the three CameraAvStreamManagement attributes a controller
// writes. The cluster's own structs are the bodies (the document's schemas of them are generated as those types).
extension SidecarOperations {
    func currentConnections(_ input: Operations.CurrentConnections.Input) async throws -> Operations.CurrentConnections.Output {
        let transport = try control.transportServer(camera: input.path.camera)
        let connections = await transport.currentConnections(fabric: Self.fabric(input.headers.xFabricIndex))
        return .ok(.init(body: .json(.init(value: connections))))
    }

    func supportedFormats(_ input: Operations.SupportedFormats.Input) async throws -> Operations.SupportedFormats.Output {
        .ok(.init(body: .json(.init(value: try control.transportServer(camera: input.path.camera).supportedFormats))))
    }

    /// Bit 0 PERZONESENS (serve.yaml `perZoneSensitivity`), bit 1 METADATA (never set here).
    func featureMap(_ input: Operations.FeatureMap.Input) async throws -> Operations.FeatureMap.Output {
        let features = try control.transportServer(camera: input.path.camera).capabilities.features
        return .ok(.init(body: .json(.init(value: Int(features.rawValue)))))
    }

    func getRecordingMicrophoneMuted(
        _ input: Operations.GetRecordingMicrophoneMuted.Input
    ) async throws -> Operations.GetRecordingMicrophoneMuted.Output {
        .ok(.init(body: .json(try await read(\.recordingMicrophoneMuted, camera: input.path.camera))))
    }

    func putRecordingMicrophoneMuted(
        _ input: Operations.PutRecordingMicrophoneMuted.Input
    ) async throws -> Operations.PutRecordingMicrophoneMuted.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let change = CameraAttributesChange(recordingMicrophoneMuted: body.value)
        return .ok(.init(body: .json(try await write(change, \.recordingMicrophoneMuted, camera: input.path.camera))))
    }

    func getSoftRecordingPrivacyModeEnabled(
        _ input: Operations.GetSoftRecordingPrivacyModeEnabled.Input
    ) async throws -> Operations.GetSoftRecordingPrivacyModeEnabled.Output {
        .ok(.init(body: .json(try await read(\.softRecordingPrivacyModeEnabled, camera: input.path.camera))))
    }

    func putSoftRecordingPrivacyModeEnabled(
        _ input: Operations.PutSoftRecordingPrivacyModeEnabled.Input
    ) async throws -> Operations.PutSoftRecordingPrivacyModeEnabled.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let change = CameraAttributesChange(softRecordingPrivacyModeEnabled: body.value)
        return .ok(.init(body: .json(try await write(change, \.softRecordingPrivacyModeEnabled, camera: input.path.camera))))
    }

    func getSoftLivestreamPrivacyModeEnabled(
        _ input: Operations.GetSoftLivestreamPrivacyModeEnabled.Input
    ) async throws -> Operations.GetSoftLivestreamPrivacyModeEnabled.Output {
        .ok(.init(body: .json(try await read(\.softLivestreamPrivacyModeEnabled, camera: input.path.camera))))
    }

    func putSoftLivestreamPrivacyModeEnabled(
        _ input: Operations.PutSoftLivestreamPrivacyModeEnabled.Input
    ) async throws -> Operations.PutSoftLivestreamPrivacyModeEnabled.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let change = CameraAttributesChange(softLivestreamPrivacyModeEnabled: body.value)
        return .ok(.init(body: .json(try await write(change, \.softLivestreamPrivacyModeEnabled, camera: input.path.camera))))
    }

    /// One of the camera's written attributes.
    private func read(_ attribute: KeyPath<CameraAttributes, Bool>, camera: String) async throws -> Components.Schemas.BooleanValue {
        guard let attributes = await control.attributes(camera: camera) else { throw control.unknownCamera(camera) }
        return .init(value: attributes[keyPath: attribute])
    }

    /// Writes `change` and answers the attribute's value after the write.
    private func write(
        _ change: CameraAttributesChange, _ attribute: KeyPath<CameraAttributes, Bool>, camera: String
    ) async throws -> Components.Schemas.BooleanValue {
        _ = try control.transportServer(camera: camera)
        let updated = try await refusal { try await control.updateAttributes(camera: camera, change) }
        return .init(value: updated[keyPath: attribute])
    }
}
