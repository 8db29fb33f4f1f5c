import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import Sidecar

/// What keeps a web page in a browser on the same machine from using the API, which listens on loopback without a
/// token by default (right for a Matter stack beside it; but every local browser can reach loopback too):
///
/// - **CSRF**: a browser sends a "simple" cross-site request (a form POST, `fetch` with `mode: "no-cors"` and a
///   `text/plain` body) without asking first. A body must be `application/json` (415 otherwise), which a page can only
///   send after a CORS preflight this API never approves; and a request whose `Origin` is not the API's own origin
///   (nor one listed in `allowedOrigins`) is refused (403).
/// - **DNS rebinding**: a page on `attacker.example` whose name is re-pointed at 127.0.0.1 talks to the API as its own
///   origin; its requests carry `Host: attacker.example`. The authority must name a loopback address, `localhost` or
///   the listen address (421 otherwise). Listening on a wildcard address accepts any authority: off loopback a
///   bearer token is required, which a rebinding page does not have.
///
/// Pure: the middleware only reads the request's head and throws the refusal.
public struct BrowserRequestPolicy: Sendable, Hashable {
    /// The configured listen host (`127.0.0.1`, `::1`, `0.0.0.0`, a name …).
    public var listenHost: String
    /// Origins (`scheme://host[:port]`) whose pages may use the API, e.g. a controller's web UI.
    public var allowedOrigins: Set<String> = []

    public init(listenHost: String, allowedOrigins: Set<String> = []) {
        self.listenHost = listenHost
        self.allowedOrigins = allowedOrigins
    }

    public enum Refusal: Sendable, Hashable {
        case misdirected(String)
        case foreignOrigin(String)
        case notJSON(String)
    }

    /// Why a request with this head is refused; nil when it may go on.
    public func refusal(method: HTTPRequest.Method, authority: String?, origin: String?, contentType: String?,
                        hasBody: Bool) -> Refusal? {
        if let authority, !acceptsAuthority(authority) {
            return .misdirected("Host: \(authority) is not this API's address (a loopback address, localhost or \(listenHost))")
        }
        if let origin, !acceptsOrigin(origin, authority: authority) {
            return .foreignOrigin("Origin: \(origin) may not use this API (only its own origin and serve.yaml's allowedOrigins)")
        }
        if hasBody, [.post, .put, .patch, .delete].contains(method) {
            let mediaType = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard mediaType == "application/json" else {
                return .notJSON("Content-Type: a body must be application/json (curl: -H 'Content-Type: application/json', or --json), "
                                + "got \(contentType.map { "\"\($0)\"" } ?? "none")")
            }
        }
        return nil
    }

    func acceptsAuthority(_ authority: String) -> Bool {
        if ["0.0.0.0", "::", ""].contains(listenHost) { return true }
        let host = Self.host(of: authority).lowercased()
        return host == listenHost.lowercased() || ListenAddress(host: host, port: 0).isLoopback
    }

    func acceptsOrigin(_ origin: String, authority: String?) -> Bool {
        if allowedOrigins.contains(origin) { return true }
        guard let authority else { return false }
        return origin == "http://\(authority)" || origin == "https://\(authority)"
    }

    /// The host of `host[:port]` or `[v6]:port`, without brackets.
    static func host(of authority: String) -> String {
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<end])
        }
        return String(authority.split(separator: ":", maxSplits: 1).first ?? "")
    }
}

extension BrowserRequestPolicy.Refusal {
    /// The `reason` label of `pushav_api_requests_refused_total`: which rule refused it.
    var metricReason: String {
        switch self {
        case .misdirected: "host"
        case .foreignOrigin: "origin"
        case .notJSON: "content_type"
        }
    }
}

/// Applies ``BrowserRequestPolicy`` before routing (so a refused request reaches no handler and reads no body).
struct BrowserRequestMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let policy: BrowserRequestPolicy
    /// A refused request is logged as a warning: a page trying the API is an attack an operator wants to see.
    let logger: Logger

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let hasBody = request.headers[.contentLength].map { $0 != "0" } ?? (request.headers[.transferEncoding] != nil)
        let refusal = policy.refusal(
            method: request.method, authority: request.head.authority, origin: request.headers[.origin],
            contentType: request.headers[.contentType], hasBody: hasBody)
        if let refusal {
            // Not "browser": most refusals are of local programs (a curl without a Content-Type is `notJSON`); the
            // rules exist because of browsers, the refusal names which one applied.
            logger.warning("API request refused by the cross-site request rules", metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)", "refusal": "\(refusal)",
            ])
            Counter(label: "pushav_api_requests_refused_total", dimensions: [("reason", refusal.metricReason)]).increment()
        }
        switch refusal {
        case .misdirected(let message):
            throw APIError(httpStatus: .misdirectedRequest, status: .unsupportedAccess, message: message)
        case .foreignOrigin(let message):
            throw APIError(httpStatus: .forbidden, status: .unsupportedAccess, message: message)
        case .notJSON(let message):
            throw APIError(httpStatus: .unsupportedMediaType, status: .invalidCommand, message: message)
        case nil:
            var response = try await next(request, context)
            // JSON is never run as a script or sniffed into something else by a page that includes an API URL in a
            // `<script>` or `<img>` (the browser blocks it instead).
            if response.headers[.xContentTypeOptions] == nil { response.headers[.xContentTypeOptions] = "nosniff" }
            return response
        }
    }
}
