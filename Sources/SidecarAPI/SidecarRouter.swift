import Foundation
import HTTPTypes
import Hummingbird
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
    public static let prometheusContentType = "text/plain; charset=utf-8; version=0.0.4"
    /// The one route not generated from the document: the document.
    static let documentRoute = RouteSignature(method: .get, path: "/openapi.json")

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
    ) throws -> Router<BasicRequestContext> {
        let operations = SidecarOperations(control: control, logger: logger, eventKeepAlive: eventKeepAlive, metrics: metrics)
        // Registering the generated routes throws only for a server URL the document does not have (it names none).
        let generated = try operations.signatures
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: APIErrorMiddleware(routes: [documentRoute] + generated, logger: logger))
        // After the error middleware, which turns the refusals into the error body; a browser's request is refused
        // before the token is even looked at.
        router.add(middleware: BrowserRequestMiddleware(policy: browserPolicy, logger: logger))
        if let bearerToken { router.add(middleware: BearerTokenMiddleware(token: bearerToken)) }
        // The document itself, byte for byte as bundled: a generated JSON body would decode and re-encode it (and
        // its unsigned 64-bit maxima would come back as floating-point numbers).
        router.on(RouterPath(documentRoute.path), method: documentRoute.method) { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try SidecarAPI.openAPIDocument)))
        }
        try operations.register(on: router)
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

/// Runs a cluster call, turning its refusal into the API's error.
func refusal<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let error as TransportCommandError { throw APIError(error) }
}
