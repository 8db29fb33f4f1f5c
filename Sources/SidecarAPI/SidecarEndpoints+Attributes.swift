import Foundation
import HTTPTypes
import Hummingbird
import NIOPosix
import Logging
import Prometheus
import Sidecar
import TransportModel

// The cluster attributes and the camera's status, read with GET.
extension SidecarEndpoints {
    var attributeRoutes: [Route] {
        var routes = [
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/attributes/currentConnections")) { request, context in
                let fabric = try RequestReading.fabric(of: request)
                let (_, transport) = try transport(context)
                return try JSONResponse.make(AttributeValue(value: await transport.currentConnections(fabric: fabric)))
            },
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/attributes/supportedFormats")) { _, context in
                let (_, transport) = try transport(context)
                return try JSONResponse.make(AttributeValue(value: transport.supportedFormats))
            },
            // FeatureMap: bit 0 PERZONESENS (serve.yaml `perZoneSensitivity`), bit 1 METADATA (never set here).
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/attributes/featureMap")) { _, context in
                let (_, transport) = try transport(context)
                return try JSONResponse.make(AttributeValue(value: transport.capabilities.features.rawValue))
            },
        ]
        typealias Field = (
            name: String, change: @Sendable (Bool) -> CameraAttributesChange, read: @Sendable (CameraAttributes) -> Bool
        )
        let cameraAttributes: [Field] = [
            ("recordingMicrophoneMuted", { CameraAttributesChange(recordingMicrophoneMuted: $0) }, \.recordingMicrophoneMuted),
            ("softRecordingPrivacyModeEnabled", { CameraAttributesChange(softRecordingPrivacyModeEnabled: $0) },
             \.softRecordingPrivacyModeEnabled),
            ("softLivestreamPrivacyModeEnabled", { CameraAttributesChange(softLivestreamPrivacyModeEnabled: $0) },
             \.softLivestreamPrivacyModeEnabled),
        ]
        for (name, change, read) in cameraAttributes {
            let path = "/v1/cameras/{camera}/attributes/\(name)"
            routes.append(Route(signature: .init(method: .get, path: path)) { _, context in
                let (cameraID, _) = try transport(context)
                guard let attributes = await control.attributes(camera: cameraID) else { throw unknownCamera(cameraID) }
                return try JSONResponse.make(AttributeValue(value: read(attributes)))
            })
            routes.append(Route(signature: .init(method: .put, path: path)) { request, context in
                let (cameraID, _) = try transport(context)
                let body = try await RequestReading.json(AttributeValue<Bool>.self, from: request)
                let updated = try await refusal { try await control.updateAttributes(camera: cameraID, change(body.value)) }
                return try JSONResponse.make(AttributeValue(value: read(updated)))
            })
        }
        return routes
    }
}
