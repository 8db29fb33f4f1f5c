import Crypto
import Foundation
import Hummingbird
import TransportModel

/// Refuses every request that does not carry the configured token as `Authorization: Bearer <token>` (RFC 6750):
/// 401 with `WWW-Authenticate: Bearer` and the API's error body. It runs before routing, so an unknown path is 401
/// too and the routes cannot be probed without the token.
///
/// The token is compared as a SHA-256 digest: digest equality is constant-time in swift-crypto, and both digests
/// have the same length whatever was sent, so the answer's timing says nothing about how much of a guess was right.
struct BearerTokenMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    /// The token's SHA-256 digest (the digest type is not Sendable; its bytes are).
    private let expected: [UInt8]

    init(token: String) {
        expected = Array(SHA256.hash(data: Data(token.utf8)))
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let values = request.headers[values: .authorization]
        guard !values.isEmpty else {
            throw Self.unauthorized("Authorization: a bearer token is required (Authorization: Bearer <token>)", error: nil)
        }
        guard values.count == 1, let presented = Self.bearerToken(values[0]) else {
            throw Self.unauthorized("Authorization: expected one \"Bearer <token>\"", error: "invalid_request")
        }
        // Digest == bytes is swift-crypto's constant-time comparison.
        guard SHA256.hash(data: Data(presented.utf8)) == expected else {
            throw Self.unauthorized("Authorization: the bearer token is not valid", error: "invalid_token")
        }
        return try await next(request, context)
    }

    /// The token of a `Bearer` credential (the scheme is case-insensitive); nil for any other scheme or none.
    static func bearerToken(_ value: String) -> Substring? {
        let trimmed = value.drop { $0 == " " }
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "bearer" else { return nil }
        let token = trimmed[space...].drop { $0 == " " }
        let end = token.lastIndex { $0 != " " }.map { token.index(after: $0) } ?? token.startIndex
        return token[..<end].isEmpty ? nil : token[..<end]
    }

    /// 401 UNSUPPORTED_ACCESS (Matter's answer to a caller without the privilege), with the challenge RFC 6750 asks
    /// for; `error` is its error code when a credential was sent but is wrong or malformed.
    static func unauthorized(_ message: String, error: String?) -> APIError {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Bearer realm=\"pushav\"" + (error.map { ", error=\"\($0)\"" } ?? "")
        return APIError(httpStatus: .unauthorized, status: .unsupportedAccess, message: message, headers: headers)
    }
}
