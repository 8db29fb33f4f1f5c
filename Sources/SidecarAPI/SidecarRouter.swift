import Foundation
import HTTPTypes
import Hummingbird
import NIOPosix
import Logging
import Prometheus
import Sidecar
import TransportModel

/// Builds `pushav serve`'s HTTP API: the Push AV Stream Transport cluster of each camera over HTTP, TLS endpoints,
/// camera status and health, as `openapi.json` describes them.
///
/// The API holds no cluster logic: each route reads the caller's fabric (`X-Fabric-Index`) and the request's JSON,
/// calls the camera's ``PushAVStreamTransportServer`` or the ``SidecarControl``, and maps a refusal's Matter status
/// to HTTP (``APIErrorBody``). Every failure is a 4xx with that body; a 5xx means a bug in this process, except
/// `/ready`'s 503, which is its answer "not ready" (with ``SidecarReadiness``).
public enum SidecarRouter {
    /// Largest request body accepted; a larger one answers 413.
    public static let maxBodyBytes = 64 * 1024
    /// The request header that names the caller's fabric (1…254, default 1).
    public static let fabricHeader = "X-Fabric-Index"
    /// The fabric of a request without `X-Fabric-Index`.
    public static let defaultFabric: FabricIndex = 1
    /// `/metrics`: the Prometheus text exposition format, version 0.0.4.
    public static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The router for `control`. `eventKeepAlive` is how often an idle event stream sends a comment line, which is
    /// also how soon a vanished subscriber is noticed and its subscription dropped. `metrics` is what `/metrics`
    /// renders: the registry behind the process's swift-metrics backend (an empty one when none is given). With a
    /// `bearerToken`, every request must carry it (`Authorization: Bearer <token>`), `/health` and unknown paths
    /// included; without one it answers anyone who can connect — but never a web page in a browser on the same
    /// machine: `browserPolicy` (see ``BrowserRequestPolicy``) refuses cross-origin, rebinding and non-JSON requests.
    public static func router(
        control: some SidecarControl, logger: Logger, eventKeepAlive: Duration = .seconds(15),
        metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), bearerToken: String? = nil,
        browserPolicy: BrowserRequestPolicy = BrowserRequestPolicy(listenHost: "127.0.0.1")
    ) -> Router<BasicRequestContext> {
        let endpoints = SidecarEndpoints(control: control, logger: logger, eventKeepAlive: eventKeepAlive, metrics: metrics)
        let routes = endpoints.routes
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: APIErrorMiddleware(routes: routes.map(\.signature), logger: logger))
        // After the error middleware, which turns the refusals into the error body; a browser's request is refused
        // before the token is even looked at.
        router.add(middleware: BrowserRequestMiddleware(policy: browserPolicy, logger: logger))
        if let bearerToken { router.add(middleware: BearerTokenMiddleware(token: bearerToken)) }
        for route in routes {
            router.on(RouterPath(route.signature.path), method: route.signature.method, use: route.handler)
        }
        return router
    }

    /// The six commands, by the name their route uses.
    public static let commandNames = [
        "allocatePushTransport", "modifyPushTransport", "setTransportStatus", "manuallyTriggerTransport",
        "findTransport", "deallocatePushTransport", "updateMotionZoneOptions",
    ]
}

/// A route's method and path (`{name}` marks a path parameter, as in the OpenAPI document).
struct RouteSignature: Sendable, Hashable {
    var method: HTTPRequest.Method
    var path: String

    /// Whether `requestPath` fits this path, parameters matching any one non-empty segment.
    func matches(path requestPath: String) -> Bool {
        let pattern = path.split(separator: "/")
        let actual = requestPath.split(separator: "/")
        guard pattern.count == actual.count else { return false }
        return zip(pattern, actual).allSatisfy { expected, segment in
            expected.hasPrefix("{") || expected == segment
        }
    }
}

struct Route: Sendable {
    var signature: RouteSignature
    var handler: @Sendable (Request, BasicRequestContext) async throws -> Response
}

/// The handlers, over one ``SidecarControl``.
struct SidecarEndpoints<Control: SidecarControl>: Sendable {
    let control: Control
    let logger: Logger
    let eventKeepAlive: Duration
    let metrics: PrometheusCollectorRegistry

    var routes: [Route] {
        var routes: [Route] = [
            Route(signature: .init(method: .get, path: "/health")) { _, _ in
                try JSONResponse.make(await control.health())
            },
            // Not ready answers 503 (what a load balancer or an orchestrator's readiness probe expects), with the
            // same body: which store or camera source is the reason.
            Route(signature: .init(method: .get, path: "/ready")) { _, _ in
                let readiness = await control.readiness()
                return try JSONResponse.make(readiness, status: readiness.ready ? .ok : .serviceUnavailable)
            },
            Route(signature: .init(method: .get, path: "/metrics")) { _, _ in
                await control.refreshGauges()
                var headers = HTTPFields()
                headers[.contentType] = SidecarRouter.prometheusContentType
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
            },
            Route(signature: .init(method: .get, path: "/openapi.json")) { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = "application/json"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try SidecarAPI.openAPIDocument)))
            },
            Route(signature: .init(method: .get, path: "/")) { _, _ in
                let page = try SidecarAPI.statusPage
                var headers = HTTPFields()
                headers[.contentType] = "text/html; charset=utf-8"
                headers[.contentSecurityPolicy] = try SidecarAPI.statusPageHeaderPolicy
                headers[.xContentTypeOptions] = "nosniff"
                headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
                headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: page)))
            },
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/clips/{connectionID}/{session}")) { request, context in
                try await clip(request, context, bodyless: false)
            },
            // HEAD: the same headers, no body (a player asks the size before its ranges).
            Route(signature: .init(method: .head, path: "/v1/cameras/{camera}/clips/{connectionID}/{session}")) { request, context in
                try await clip(request, context, bodyless: true)
            },
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/clips/{connectionID}/{session}/thumbnail.jpg")) { _, context in
                let (cameraID, _) = try transport(context)
                let connection = try RequestReading.integer(UInt16.self, "connectionID", context)
                let session = try RequestReading.integer(UInt64.self, "session", context)
                guard let jpeg = await control.thumbnail(camera: cameraID, connection: connection, session: session) else {
                    throw APIError.notFound("session: camera \(cameraID) has no thumbnail of connection \(connection) session \(session)")
                }
                // A recording's thumbnail never changes.
                return JPEGResponse.make(jpeg, cacheControl: "private, max-age=3600")
            },
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/snapshot.jpg")) { _, context in
                let (cameraID, _) = try transport(context)
                guard let snapshot = await control.snapshot(camera: cameraID) else {
                    throw APIError.notFound("camera: camera \(cameraID) has not analysed a picture yet")
                }
                var response = JPEGResponse.make(snapshot.jpeg, cacheControl: "no-store")
                response.headers[.lastModified] = JPEGResponse.httpDate(snapshot.taken)
                return response
            },
            Route(signature: .init(method: .get, path: "/v1/cameras")) { _, _ in
                try JSONResponse.make(CameraList(cameras: await control.cameraStatuses()))
            },
            Route(signature: .init(method: .get, path: "/v1/cameras/{camera}/events")) { request, context in
                let fabric = try RequestReading.fabric(of: request)
                let (cameraID, transport) = try transport(context)
                let query = try EventLogQuery.read(request)
                let events = TransportEventStream(
                    transport: transport, fabric: fabric, logger: logger.with(camera: cameraID, fabric: fabric),
                    keepAlive: eventKeepAlive)
                if query.wantsJSON { return try await events.page(after: query.after ?? 0, limit: query.limit) }
                return try await events.response(after: query.after)
            },
        ]
        routes += commandRoutes
        routes += zoneManagementRoutes
        routes += attributeRoutes
        routes += tlsRoutes
        return routes
    }

    // MARK: - Commands

    private var commandRoutes: [Route] {
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
    private func command(
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
    private var zoneManagementRoutes: [Route] {
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

    private func zoneCommand(
        _ name: String, _ run: @escaping @Sendable (PushAVStreamTransportServer, Request) async throws -> Response
    ) -> Route {
        Route(signature: .init(method: .post, path: "/v1/cameras/{camera}/zoneManagement/commands/\(name)")) { request, context in
            let (_, transport) = try transport(context)
            return try await run(transport, request)
        }
    }

    // MARK: - Attributes

    private var attributeRoutes: [Route] {
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

    // MARK: - TLS endpoints

    private var tlsRoutes: [Route] {
        [
            Route(signature: .init(method: .post, path: "/v1/tls/endpoints")) { request, _ in
                let fabric = try RequestReading.fabric(of: request)
                let body = try await RequestReading.json(TLSEndpointRequest.self, from: request)
                let endpointID = try await refusal { try await control.addTLSEndpoint(body, fabric: fabric) }
                var headers = HTTPFields()
                headers[.location] = "/v1/tls/endpoints/\(endpointID)"
                return try JSONResponse.make(TLSEndpointCreated(endpointID: endpointID), status: .created, headers: headers)
            },
            Route(signature: .init(method: .get, path: "/v1/tls/endpoints")) { request, _ in
                let fabric = try RequestReading.fabric(of: request)
                return try JSONResponse.make(TLSEndpointList(endpoints: await control.tlsEndpoints(fabric: fabric)))
            },
            Route(signature: .init(method: .get, path: "/v1/tls/endpoints/{endpointID}")) { request, context in
                let fabric = try RequestReading.fabric(of: request)
                let endpointID = try RequestReading.endpointID(context)
                guard let endpoint = await control.tlsEndpoints(fabric: fabric).first(where: { $0.endpointID == endpointID }) else {
                    throw APIError.notFound("endpointID: no TLS endpoint \(endpointID) in this fabric")
                }
                return try JSONResponse.make(endpoint)
            },
            Route(signature: .init(method: .delete, path: "/v1/tls/endpoints/{endpointID}")) { request, context in
                let fabric = try RequestReading.fabric(of: request)
                let endpointID = try RequestReading.endpointID(context)
                try await refusal { try await control.removeTLSEndpoint(endpointID, fabric: fabric) }
                return Response(status: .noContent)
            },
            Route(signature: .init(method: .get, path: "/v1/tls/attributes")) { request, _ in
                let fabric = try RequestReading.fabric(of: request)
                return try JSONResponse.make(try await refusal { try await control.tlsCertificateAttributes(fabric: fabric) })
            },
        ] + tlsCommandRoutes
    }

    /// `POST /v1/tls/commands/{name}`: the TLS Certificate Management and TLS Client Management commands.
    private var tlsCommandRoutes: [Route] {
        [
            tlsCommand("provisionRootCertificate") { request, fabric in
                let body = try await RequestReading.json(ProvisionRootCertificateRequest.self, from: request)
                let caid = try await refusal { try await control.provisionRootCertificate(body, fabric: fabric) }
                return try JSONResponse.make(ProvisionRootCertificateResponse(caid: caid))
            },
            tlsCommand("removeRootCertificate") { request, fabric in
                let body = try await RequestReading.json(RemoveRootCertificateRequest.self, from: request)
                try await refusal { try await control.removeRootCertificate(body.caid, fabric: fabric) }
                return try JSONResponse.make(EmptyResponse())
            },
            tlsCommand("findRootCertificate") { request, fabric in
                let body = try await RequestReading.json(FindRootCertificateRequest.self, from: request)
                let found = try await refusal { try await control.findRootCertificates(body.caid, fabric: fabric) }
                return try JSONResponse.make(FindRootCertificateResponse(certificateDetails: found))
            },
            tlsCommand("lookupRootCertificate") { request, fabric in
                let body = try await RequestReading.json(LookupCertificateRequest.self, from: request)
                let caid = try await refusal { try await control.lookupRootCertificate(fingerprint: body.fingerprint, fabric: fabric) }
                return try JSONResponse.make(LookupRootCertificateResponse(caid: caid))
            },
            tlsCommand("clientCSR") { request, fabric in
                let body = try await RequestReading.json(ClientCSRRequest.self, from: request)
                return try JSONResponse.make(try await refusal { try await control.clientCSR(body, fabric: fabric) })
            },
            tlsCommand("provisionClientCertificate") { request, fabric in
                let body = try await RequestReading.json(ProvisionClientCertificateRequest.self, from: request)
                try await refusal { try await control.provisionClientCertificate(body, fabric: fabric) }
                return try JSONResponse.make(EmptyResponse())
            },
            tlsCommand("findClientCertificate") { request, fabric in
                let body = try await RequestReading.json(FindClientCertificateRequest.self, from: request)
                let found = try await refusal { try await control.findClientCertificates(body.ccdid, fabric: fabric) }
                return try JSONResponse.make(FindClientCertificateResponse(certificateDetails: found))
            },
            tlsCommand("lookupClientCertificate") { request, fabric in
                let body = try await RequestReading.json(LookupCertificateRequest.self, from: request)
                let ccdid = try await refusal { try await control.lookupClientCertificate(fingerprint: body.fingerprint, fabric: fabric) }
                return try JSONResponse.make(LookupClientCertificateResponse(ccdid: ccdid))
            },
            tlsCommand("removeClientCertificate") { request, fabric in
                let body = try await RequestReading.json(RemoveClientCertificateRequest.self, from: request)
                try await refusal { try await control.removeClientCertificate(body.ccdid, fabric: fabric) }
                return try JSONResponse.make(EmptyResponse())
            },
            tlsCommand("provisionEndpoint") { request, fabric in
                let body = try await RequestReading.json(ProvisionEndpointRequest.self, from: request)
                let endpointID = try await refusal { try await control.provisionEndpoint(body, fabric: fabric) }
                return try JSONResponse.make(ProvisionEndpointResponse(endpointID: endpointID))
            },
        ]
    }

    private func tlsCommand(
        _ name: String, _ run: @escaping @Sendable (Request, FabricIndex) async throws -> Response
    ) -> Route {
        Route(signature: .init(method: .post, path: "/v1/tls/commands/\(name)")) { request, _ in
            try await run(request, try RequestReading.fabric(of: request))
        }
    }

    // MARK: - Shared

    /// A recent clip, whole or a byte range of it (see ``ByteRanges``): the spool's files of its video track (header,
    /// then segments) served one after the other as one fragmented MP4, read from disk as they go out (no copy).
    /// `Accept-Ranges`, a strong ETag (the parts' sizes: they are written once), 206 with `Content-Range`, 416 past the
    /// end.
    private func clip(_ request: Request, _ context: BasicRequestContext, bodyless: Bool) async throws -> Response {
        let (cameraID, _) = try transport(context)
        let connection = try RequestReading.integer(UInt16.self, "connectionID", context)
        let session = try RequestReading.integer(UInt64.self, "session", context)
        // Only integers name a clip, and its files come from the spool's own journal: no path from the request.
        guard let clip = await control.clip(camera: cameraID, connection: connection, session: session), clip.size > 0 else {
            throw APIError.notFound("session: camera \(cameraID) has no recent clip of connection \(connection) session \(session)")
        }
        let size = clip.size
        let etag = "\"\(connection)-\(session)-\(clip.parts.count)-\(size)\""
        var headers = HTTPFields()
        headers[.contentType] = "video/mp4"
        headers[.acceptRanges] = "bytes"
        headers[.eTag] = etag
        headers[.cacheControl] = "private, no-cache"
        switch ByteRanges.answer(range: request.headers[.range], ifRange: request.headers[.ifRange], etag: etag, size: size) {
        case .whole:
            headers[.contentLength] = "\(size)"
            return Response(status: .ok, headers: headers, body: bodyless ? .init() : ConcatenatedFiles.body(clip, range: 0...(size - 1)))
        case .part(let range):
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            headers[.contentLength] = "\(range.count)"
            return Response(status: .partialContent, headers: headers,
                            body: bodyless ? .init() : ConcatenatedFiles.body(clip, range: range))
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(size)"
            headers[.contentLength] = "0"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
    }

    private func transport(_ context: BasicRequestContext) throws -> (String, PushAVStreamTransportServer) {
        let cameraID = context.parameters.get("camera") ?? ""
        guard let transport = control.transport(camera: cameraID) else { throw unknownCamera(cameraID) }
        return (cameraID, transport)
    }

    private func unknownCamera(_ cameraID: String) -> APIError {
        APIError.notFound("camera: no camera \"\(cameraID)\" (cameras: \(control.cameraIDs.joined(separator: ", ")))")
    }
}

/// Runs a cluster call, turning its refusal into the API's error.
private func refusal<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let error as TransportCommandError { throw APIError(error) }
}

/// Reading what a request carries: the fabric header, path parameters, the JSON body.
enum RequestReading {
    static func fabric(of request: Request) throws(APIError) -> FabricIndex {
        let values = request.headers.filter { $0.name.canonicalName == "x-fabric-index" }.map(\.value)
        guard !values.isEmpty else { return SidecarRouter.defaultFabric }
        let text = values.joined(separator: ", ")
        guard values.count == 1, let fabric = UInt8(text.trimmingCharacters(in: .whitespaces)), (1...254).contains(fabric) else {
            throw .invalidCommand("\(SidecarRouter.fabricHeader): must be one fabric index, an integer 1…254; got \"\(text)\"")
        }
        return fabric
    }

    /// The path parameter `name` as a `T`; 400 naming it otherwise.
    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ name: String, _ context: BasicRequestContext) throws(APIError) -> T {
        let text = context.parameters.get(name) ?? ""
        guard let value = T(text) else { throw .invalidCommand("\(name): must be an integer \(T.min)…\(T.max); got \"\(text)\"") }
        return value
    }

    static func endpointID(_ context: BasicRequestContext) throws(APIError) -> UInt16 {
        let text = context.parameters.get("endpointID") ?? ""
        guard let endpointID = UInt16(text) else {
            throw .invalidCommand("endpointID: must be an integer 0…65535; got \"\(text)\"")
        }
        return endpointID
    }

    /// The body as `T`; an empty body reads as `{}`. More than ``SidecarRouter/maxBodyBytes`` throws (→ 413).
    static func json<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        let buffer = try await request.body.collect(upTo: SidecarRouter.maxBodyBytes)
        let data = buffer.readableBytes == 0 ? Data("{}".utf8) : Data(buffer.readableBytesView)
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty,
               let field = NumberRangeProbe.field(decoding: T.self, from: data) {
                throw APIError.invalidCommand("\(field): number out of range for this field")
            }
            throw APIError.invalidCommand(error.fieldMessage)
        }
    }
}

/// Pictures: thumbnails and snapshots, never sniffed as anything else.
enum JPEGResponse {
    static func make(_ jpeg: Data, cacheControl: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "image/jpeg"
        headers[.cacheControl] = cacheControl
        headers[.xContentTypeOptions] = "nosniff"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: jpeg)))
    }

    /// `Last-Modified`'s form (RFC 9110 IMF-fixdate).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

/// JSON answers: keys sorted (stable bodies), dates in ISO 8601, slashes unescaped.
enum JSONResponse {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try encoder().encode(value))))
    }
}

extension APIError {
    var response: Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        let data = (try? JSONResponse.encoder().encode(body)) ?? Data()
        return Response(status: httpStatus, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns every failure into the error body: refused commands and unreadable requests (``APIError``), a body over
/// the limit (413), routes and methods that do not exist (404 / 405). Anything else is a bug: logged, 500.
struct APIErrorMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let routes: [RouteSignature]
    let logger: Logger

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            context.logger.debug("refused \(request.method) \(request.uri.path): \(error)")
            return error.response
        } catch let error as any HTTPResponseError {
            return answer(error.status, to: request).response
        } catch {
            logger.error("\(request.method) \(request.uri.path) failed unexpectedly: \(error)")
            return APIError(httpStatus: .internalServerError, status: .failure, message: "internal error: \(error)").response
        }
    }

    private func answer(_ status: HTTPResponse.Status, to request: Request) -> APIError {
        let path = request.uri.path
        switch status {
        case .contentTooLarge:
            return APIError(httpStatus: .contentTooLarge, status: .invalidCommand,
                            message: "body: larger than \(SidecarRouter.maxBodyBytes) bytes")
        case .notFound:
            let allowed = routes.filter { $0.matches(path: path) }.map(\.method)
            if !allowed.isEmpty {
                var headers = HTTPFields()
                headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
                return APIError(
                    httpStatus: .methodNotAllowed, status: .invalidCommand,
                    message: "\(request.method) is not allowed on \(path); allowed: \(headers[.allow] ?? "")", headers: headers)
            }
            if RouteSignature(method: .post, path: "/v1/cameras/{camera}/commands/{command}").matches(path: path) {
                let name = path.split(separator: "/").last.map(String.init) ?? ""
                return APIError(
                    httpStatus: .notFound, status: .unsupportedCommand,
                    message: "command: no command \"\(name)\" (commands: \(SidecarRouter.commandNames.joined(separator: ", ")))")
            }
            return .notFound("no route \(request.method) \(path)")
        default:
            return APIError(
                httpStatus: status, status: status.code >= 500 ? .failure : .invalidCommand,
                message: "\(status.code) \(status.reasonPhrase)")
        }
    }
}

extension Logger {
    func with(camera: String, fabric: FabricIndex) -> Logger {
        var logger = self
        logger[metadataKey: "camera"] = "\(camera)"
        logger[metadataKey: "fabric"] = "\(fabric)"
        return logger
    }
}
