import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OpenAPIHummingbird
import OpenAPIRuntime
import Prometheus
import Sidecar
import Synchronization
import TransportModel

/// The operations of `openapi.json`, whose types and routes are generated from it (`Scripts/generate-api`): the
/// generated `APIProtocol`, implemented over a ``SidecarControl``, one `SidecarOperations+Feature.swift` per feature.
/// The generated server reads the path, headers and body into the document's types and writes the answer; a handler
/// only converts between those and the control's values, and throws ``APIError`` for what it refuses. Every operation
/// but the document itself (``SidecarRouter/documentRoute``, served byte for byte) is here.
struct SidecarOperations<Control: SidecarControl>: APIProtocol {
    let control: Control
    var logger = Logger(label: "pushav.api")
    /// How often an idle event stream sends a comment line (see ``EventFrames``).
    var eventKeepAlive: Duration = .seconds(15)
    /// What `/metrics` renders: the registry behind the process's swift-metrics backend.
    var metrics = PrometheusCollectorRegistry()

    /// Registers the generated routes on `router`, behind ``APIConventionsMiddleware``.
    func register(on router: Router<BasicRequestContext>) throws {
        try registerHandlers(
            on: router.group().add(middleware: APIConventionsMiddleware(control: control)), configuration: Self.configuration)
    }

    /// JSON written as the hand-routed answers write it (``JSONResponse``): compact, keys sorted, `/` unescaped.
    static var configuration: Configuration { Configuration(jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes]) }

    /// The generated routes' methods and paths (for the 405 answers of ``APIErrorMiddleware``).
    var signatures: [RouteSignature] {
        get throws {
            let recorder = RouteSignatureRecorder()
            try registerHandlers(on: recorder)
            return recorder.signatures
        }
    }

    /// The caller's fabric: `X-Fabric-Index`, already checked by ``APIConventionsMiddleware``.
    static func fabric(_ header: Int?) -> FabricIndex {
        header.flatMap(FabricIndex.init(exactly:)) ?? SidecarRouter.defaultFabric
    }

    /// A number of the document's `integer` type (an `Int` in the generated code) as the control's `T`; 400 naming
    /// the field otherwise, as the hand-routed bodies answer.
    static func integer<T: FixedWidthInteger>(_ value: Int, _ field: String, as type: T.Type = T.self) throws(APIError) -> T {
        guard let exact = T(exactly: value) else {
            throw .invalidCommand(NumberRangeProbe.integerRefusal(field, min: T.min, max: T.max, got: "\(value)"))
        }
        return exact
    }
}

/// Collects what the generated `registerHandlers` registers, without serving it: the generated routes' methods and
/// paths, so the API's 405 answers know them as they know the hand-written ones.
final class RouteSignatureRecorder: ServerTransport, Sendable {
    private let recorded = Mutex<[RouteSignature]>([])
    var signatures: [RouteSignature] { recorded.withLock { $0 } }

    func register(
        _ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
        method: HTTPRequest.Method, path: String
    ) throws {
        recorded.withLock { $0.append(RouteSignature(method: method, path: path)) }
    }
}

/// The API's conventions that the generated server does not keep, kept for the generated routes:
/// - the body's size limit (the OpenAPI runtime collects a JSON body without one), and an empty body reading as `{}`
///   (so a missing field is named, as on the hand routes);
/// - the order of the checks: `X-Fabric-Index`, then the camera, then the body (the generated server reads the body
///   before the handler runs, so an unknown camera would otherwise answer for its body instead of as unknown);
/// - the event log's Accept rule (JSON only when named, the stream otherwise), found by its path: the generated
///   registration puts one middleware before every route, so what is one route's is chosen here;
/// - `X-Fabric-Index`, the integer path parameters and the event log's query checked with the API's own messages
///   (the runtime's decoding error names neither the header nor the parameter);
/// - a number that does not fit its field named, with the field's range (Foundation's JSONDecoder on Linux reports it
///   as "not valid JSON" at no path; ``NumberRangeProbe`` finds both with the operation's body type,
///   ``RequestBodyTypes``);
/// - `Content-Type: application/json` as the hand routes write it (the runtime adds `; charset=utf-8`);
/// - `Location`, `Cache-Control`, `Last-Modified`, `ETag`, `Content-Range` and the page's `Content-Security-Policy` as
///   the plain text they are: the runtime writes every header value URI-encoded (the OpenAPI "simple" style), which
///   would turn `/v1/tls/endpoints/3` into `%2Fv1%2Ftls%2Fendpoints%2F3` and `no-store, max-age=0` into
///   `no-store%2C%20max-age%3D0`.
struct APIConventionsMiddleware<Control: SidecarControl>: RouterMiddleware {
    typealias Context = BasicRequestContext
    let control: Control
    /// The generated routes' response headers, written back as text (none of their values has a `%` of its own).
    static var plainHeaders: [HTTPField.Name] { [.location, .cacheControl, .lastModified, .eTag, .contentRange, .contentSecurityPolicy] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        _ = try RequestReading.fabric(of: request)
        if let camera = context.parameters.get("camera") { _ = try control.transportServer(camera: camera) }
        if context.parameters.get("endpointID") != nil { _ = try RequestReading.endpointID(context) }
        if context.parameters.get("connectionID") != nil { _ = try RequestReading.integer(UInt16.self, "connectionID", context) }
        if context.parameters.get("session") != nil { _ = try RequestReading.integer(UInt64.self, "session", context) }
        var request = request
        if context.endpointPath?.hasSuffix("/events") == true {
            // The event log's query and Last-Event-ID, with its messages (a value given twice is refused, not one
            // taken); and its Accept rule: JSON only when asked for by name, the stream otherwise (an EventSource, a
            // client without Accept, `*/*`) — the generated server would read a missing Accept as "either".
            let query = try EventLogQuery.read(request)
            var head = request.head
            head.headerFields[.accept] = query.wantsJSON ? "application/json" : "text/event-stream"
            request = Request(head: head, body: request.body)
        }
        var body: ByteBuffer?
        if [.post, .put, .patch].contains(request.method) {
            let buffer = try await request.body.collect(upTo: SidecarRouter.maxBodyBytes)
            body = buffer.readableBytes == 0 ? ByteBuffer(string: "{}") : buffer
            request.body = .init(buffer: body!)
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as ServerError {
            if case DecodingError.dataCorrupted(let corrupted)? = error.underlyingError as? DecodingError,
               corrupted.codingPath.isEmpty, let body, let decode = RequestBodyTypes.decoders[error.operationID],
               let refusal = NumberRangeProbe.refusal(decoding: decode, from: Data(body.readableBytesView)) {
                throw APIError.invalidCommand(refusal)
            }
            throw error
        }
        for name in Self.plainHeaders {
            if let value = response.headers[name], let decoded = value.removingPercentEncoding { response.headers[name] = decoded }
        }
        // JSON has no charset parameter (RFC 8259 §11); every answer of the API says `application/json` alike.
        if response.headers[.contentType] == "application/json; charset=utf-8" {
            response.headers[.contentType] = "application/json"
        }
        return response
    }
}

/// Each generated operation's JSON body type, by operation ID: what ``NumberRangeProbe`` decodes again to find the
/// field of a number that does not fit.
enum RequestBodyTypes {
    static let decoders: [String: @Sendable (Data) throws -> Void] = [
        Operations.AddTLSEndpoint.id: decoder(Components.Schemas.TLSEndpointRequest.self),
        Operations.ProvisionRootCertificate.id: decoder(Components.Schemas.ProvisionRootCertificateRequest.self),
        Operations.RemoveRootCertificate.id: decoder(Components.Schemas.RemoveRootCertificateRequest.self),
        Operations.FindRootCertificate.id: decoder(Components.Schemas.FindRootCertificateRequest.self),
        Operations.LookupRootCertificate.id: decoder(Components.Schemas.LookupCertificateRequest.self),
        Operations.ClientCSR.id: decoder(Components.Schemas.ClientCSRRequest.self),
        Operations.ProvisionClientCertificate.id: decoder(Components.Schemas.ProvisionClientCertificateRequest.self),
        Operations.FindClientCertificate.id: decoder(Components.Schemas.FindClientCertificateRequest.self),
        Operations.LookupClientCertificate.id: decoder(Components.Schemas.LookupCertificateRequest.self),
        Operations.RemoveClientCertificate.id: decoder(Components.Schemas.RemoveClientCertificateRequest.self),
        Operations.ProvisionEndpoint.id: decoder(Components.Schemas.ProvisionEndpointRequest.self),
        Operations.PutRecordingMicrophoneMuted.id: decoder(Components.Schemas.BooleanValue.self),
        Operations.PutSoftRecordingPrivacyModeEnabled.id: decoder(Components.Schemas.BooleanValue.self),
        Operations.PutSoftLivestreamPrivacyModeEnabled.id: decoder(Components.Schemas.BooleanValue.self),
        Operations.AllocatePushTransport.id: decoder(Components.Schemas.AllocatePushTransportRequest.self),
        Operations.ModifyPushTransport.id: decoder(Components.Schemas.ModifyPushTransportRequest.self),
        Operations.SetTransportStatus.id: decoder(Components.Schemas.SetTransportStatusRequest.self),
        Operations.ManuallyTriggerTransport.id: decoder(Components.Schemas.ManuallyTriggerTransportRequest.self),
        Operations.FindTransport.id: decoder(Components.Schemas.FindTransportRequest.self),
        Operations.UpdateMotionZoneOptions.id: decoder(Components.Schemas.UpdateMotionZoneOptionsRequest.self),
        Operations.DeallocatePushTransport.id: decoder(Components.Schemas.DeallocatePushTransportRequest.self),
        Operations.CreateTwoDCartesianZone.id: decoder(Components.Schemas.CreateTwoDCartesianZoneRequest.self),
        Operations.UpdateTwoDCartesianZone.id: decoder(Components.Schemas.UpdateTwoDCartesianZoneRequest.self),
        Operations.RemoveZone.id: decoder(Components.Schemas.RemoveZoneRequest.self),
        Operations.CreateOrUpdateTrigger.id: decoder(Components.Schemas.CreateOrUpdateTriggerRequest.self),
        Operations.RemoveTrigger.id: decoder(Components.Schemas.RemoveTriggerRequest.self),
        Operations.PutZoneSensitivity.id: decoder(Components.Schemas.SensitivityValue.self),
    ]

    private static func decoder<T: Decodable>(_ type: T.Type) -> @Sendable (Data) throws -> Void {
        { data in _ = try JSONDecoder().decode(T.self, from: data) }
    }
}
