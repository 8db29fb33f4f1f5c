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
        .ok(.init(body: .json(.init(value: try await cameraAttributes(input.path.camera).recordingMicrophoneMuted))))
    }

    func putRecordingMicrophoneMuted(
        _ input: Operations.PutRecordingMicrophoneMuted.Input
    ) async throws -> Operations.PutRecordingMicrophoneMuted.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let updated = try await update(input.path.camera, CameraAttributesChange(recordingMicrophoneMuted: body.value))
        return .ok(.init(body: .json(.init(value: updated.recordingMicrophoneMuted))))
    }

    func getSoftRecordingPrivacyModeEnabled(
        _ input: Operations.GetSoftRecordingPrivacyModeEnabled.Input
    ) async throws -> Operations.GetSoftRecordingPrivacyModeEnabled.Output {
        .ok(.init(body: .json(.init(value: try await cameraAttributes(input.path.camera).softRecordingPrivacyModeEnabled))))
    }

    func putSoftRecordingPrivacyModeEnabled(
        _ input: Operations.PutSoftRecordingPrivacyModeEnabled.Input
    ) async throws -> Operations.PutSoftRecordingPrivacyModeEnabled.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let updated = try await update(input.path.camera, CameraAttributesChange(softRecordingPrivacyModeEnabled: body.value))
        return .ok(.init(body: .json(.init(value: updated.softRecordingPrivacyModeEnabled))))
    }

    func getSoftLivestreamPrivacyModeEnabled(
        _ input: Operations.GetSoftLivestreamPrivacyModeEnabled.Input
    ) async throws -> Operations.GetSoftLivestreamPrivacyModeEnabled.Output {
        .ok(.init(body: .json(.init(value: try await cameraAttributes(input.path.camera).softLivestreamPrivacyModeEnabled))))
    }

    func putSoftLivestreamPrivacyModeEnabled(
        _ input: Operations.PutSoftLivestreamPrivacyModeEnabled.Input
    ) async throws -> Operations.PutSoftLivestreamPrivacyModeEnabled.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let updated = try await update(input.path.camera, CameraAttributesChange(softLivestreamPrivacyModeEnabled: body.value))
        return .ok(.init(body: .json(.init(value: updated.softLivestreamPrivacyModeEnabled))))
    }

    private func cameraAttributes(_ camera: String) async throws -> CameraAttributes {
        guard let attributes = await control.attributes(camera: camera) else { throw control.unknownCamera(camera) }
        return attributes
    }

    private func update(_ camera: String, _ change: CameraAttributesChange) async throws -> CameraAttributes {
        _ = try control.transportServer(camera: camera)
        return try await refusal { try await control.updateAttributes(camera: camera, change) }
    }
}
