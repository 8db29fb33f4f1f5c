import Foundation
import HTTPTypes
import Hummingbird
import NIOPosix
import Logging
import Prometheus
import Sidecar
import TransportModel

// The Push AV Stream Transport and Zone Management commands, one POST route each.
extension SidecarEndpoints {
    var commandRoutes: [Route] {
        [
            command("allocatePushTransport") { transport, request, fabric in
                let body = try await RequestReading.json(AllocatePushTransportRequest.self, from: request)
                let configuration = try await refusal {
                    try await transport.allocatePushTransport(body.transportOptions, fabric: fabric)
                }
                return try JSONResponse.make(AllocatePushTransportResponse(transportConfiguration: configuration))
            },
            command("modifyPushTransport") { transport, request, fabric in
                let body = try await RequestReading.json(ModifyPushTransportRequest.self, from: request)
                try await refusal {
                    try await transport.modifyPushTransport(
                        connectionID: body.connectionID, transportOptions: body.transportOptions, fabric: fabric)
                }
                return try JSONResponse.make(EmptyResponse())
            },
            command("setTransportStatus") { transport, request, fabric in
                let body = try await RequestReading.json(SetTransportStatusRequest.self, from: request)
                try await refusal {
                    try await transport.setTransportStatus(
                        connectionID: body.connectionID.value, transportStatus: body.transportStatus, fabric: fabric)
                }
                return try JSONResponse.make(EmptyResponse())
            },
            command("manuallyTriggerTransport") { transport, request, fabric in
                let body = try await RequestReading.json(ManuallyTriggerTransportRequest.self, from: request)
                try await refusal {
                    try await transport.manuallyTriggerTransport(
                        connectionID: body.connectionID, activationReason: body.activationReason,
                        timeControl: body.timeControl, userDefined: body.userDefined, fabric: fabric)
                }
                return try JSONResponse.make(EmptyResponse())
            },
            command("findTransport") { transport, request, fabric in
                let body = try await RequestReading.json(FindTransportRequest.self, from: request)
                let found = try await refusal {
                    try await transport.findTransport(connectionID: body.connectionID, fabric: fabric)
                }
                return try JSONResponse.make(FindTransportResponse(transportConfigurations: found))
            },
            command("updateMotionZoneOptions") { transport, request, fabric in
                let body = try await RequestReading.json(UpdateMotionZoneOptionsRequest.self, from: request)
                try await refusal {
                    try await transport.updateMotionZoneOptions(
                        connectionID: body.connectionID, motionZones: body.motionZones,
                        motionSensitivity: body.motionSensitivity, fabric: fabric)
                }
                return try JSONResponse.make(EmptyResponse())
            },
            command("deallocatePushTransport") { transport, request, fabric in
                let body = try await RequestReading.json(DeallocatePushTransportRequest.self, from: request)
                try await refusal {
                    try await transport.deallocatePushTransport(connectionID: body.connectionID, fabric: fabric)
                }
                return try JSONResponse.make(EmptyResponse())
            },
        ]
    }

    /// `POST /v1/cameras/{camera}/commands/{name}`: the fabric, then the camera, then the body.
    func command(
        _ name: String,
        _ run: @escaping @Sendable (PushAVStreamTransportServer, Request, FabricIndex) async throws -> Response
    ) -> Route {
        Route(signature: .init(method: .post, path: "/v1/cameras/{camera}/commands/\(name)")) { request, context in
            let fabric = try RequestReading.fabric(of: request)
            let (_, transport) = try transport(context)
            return try await run(transport, request, fabric)
        }
    }

    // MARK: - Zone Management

    /// The camera's Zone Management cluster: the zones AllocatePushTransport's `motionZones` name and the detector
    /// locates motion in. Not fabric-scoped (zones belong to the camera).
    var zoneManagementRoutes: [Route] {
        [
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/zoneManagement/attributes")) { _, context in
                let (_, transport) = try transport(context)
                return try JSONResponse.make(await transport.zoneManagementAttributes)
            },
            zoneCommand("createTwoDCartesianZone") { transport, request in
                let body = try await RequestReading.json(CreateTwoDCartesianZoneRequest.self, from: request)
                let zoneID = try await refusal { try await transport.createTwoDCartesianZone(body.zone) }
                return try JSONResponse.make(CreateTwoDCartesianZoneResponse(zoneID: zoneID))
            },
            zoneCommand("updateTwoDCartesianZone") { transport, request in
                let body = try await RequestReading.json(UpdateTwoDCartesianZoneRequest.self, from: request)
                try await refusal { try await transport.updateTwoDCartesianZone(zoneID: body.zoneID, zone: body.zone) }
                return try JSONResponse.make(EmptyResponse())
            },
            zoneCommand("removeZone") { transport, request in
                let body = try await RequestReading.json(RemoveZoneRequest.self, from: request)
                try await refusal { try await transport.removeZone(zoneID: body.zoneID) }
                return try JSONResponse.make(EmptyResponse())
            },
            zoneCommand("createOrUpdateTrigger") { transport, request in
                let body = try await RequestReading.json(CreateOrUpdateTriggerRequest.self, from: request)
                try await refusal { try await transport.createOrUpdateTrigger(body.trigger) }
                return try JSONResponse.make(EmptyResponse())
            },
            zoneCommand("removeTrigger") { transport, request in
                let body = try await RequestReading.json(RemoveTriggerRequest.self, from: request)
                try await refusal { try await transport.removeTrigger(zoneID: body.zoneID) }
                return try JSONResponse.make(EmptyResponse())
            },
            // The Sensitivity attribute is writable (Operate privilege); the whole cluster is read above.
            Route(signature: .init(method: .put, path: "/v1/cameras/{camera}/zoneManagement/attributes/sensitivity")) { request, context in
                let (_, transport) = try transport(context)
                let body = try await RequestReading.json(AttributeValue<UInt8>.self, from: request)
                try await refusal { try await transport.setZoneSensitivity(body.value) }
                return try JSONResponse.make(AttributeValue(value: body.value))
            },
        ]
    }

    func zoneCommand(
        _ name: String, _ run: @escaping @Sendable (PushAVStreamTransportServer, Request) async throws -> Response
    ) -> Route {
        Route(signature: .init(method: .post, path: "/v1/cameras/{camera}/zoneManagement/commands/\(name)")) { request, context in
            let (_, transport) = try transport(context)
            return try await run(transport, request)
        }
    }
}
