import Foundation
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime
import Sidecar
import Synchronization
import TransportModel

/// The operations of `openapi.json` whose types and routes are generated from it (`Scripts/generate-api`): the
/// generated `APIProtocol`, implemented over a ``SidecarControl``. The generated server reads the path, headers and
/// JSON body into the document's types and writes the answer; a handler only converts between those and the control's
/// values, and throws ``APIError`` for what it refuses, as the hand-routed ``SidecarEndpoints`` do.
///
/// The routes not yet generated are still in ``SidecarEndpoints``; they move here a feature at a time (one
/// `SidecarOperations+Feature.swift` each), each taking its operation IDs into `Scripts/openapi-generator/config.yaml`.
struct SidecarOperations<Control: SidecarControl>: APIProtocol {
    let control: Control

    /// Registers the generated routes on `router`, behind ``APIConventionsMiddleware``.
    func register(on router: Router<BasicRequestContext>) throws {
        try registerHandlers(
            on: router.group().add(middleware: APIConventionsMiddleware()), configuration: Self.configuration)
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
            throw .invalidCommand("\(field): must be an integer \(T.min)…\(T.max); got \(value)")
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
/// - `X-Fabric-Index` and the integer path parameters checked with the API's own messages (the runtime's decoding
///   error names neither the header nor the parameter);
/// - a `Location` as the URI reference it is: the runtime writes every header value URI-encoded (the OpenAPI "simple"
///   style), which would turn `/v1/tls/endpoints/3` into `%2Fv1%2Ftls%2Fendpoints%2F3`.
struct APIConventionsMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        _ = try RequestReading.fabric(of: request)
        if context.parameters.get("endpointID") != nil { _ = try RequestReading.endpointID(context) }
        var request = request
        if [.post, .put, .patch].contains(request.method) {
            let buffer = try await request.body.collect(upTo: SidecarRouter.maxBodyBytes)
            request.body = .init(buffer: buffer.readableBytes == 0 ? ByteBuffer(string: "{}") : buffer)
        }
        var response = try await next(request, context)
        if let location = response.headers[.location], let decoded = location.removingPercentEncoding {
            response.headers[.location] = decoded
        }
        return response
    }
}
