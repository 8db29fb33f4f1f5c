import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
@testable import SidecarAPI
import Testing

private let token = "s3cret-token-0123456789abcdef"

/// An `Authorization` header (or none, or several) and whether the API must let it through.
struct Credential: Sendable, CustomStringConvertible {
    var name: String
    var values: [String]
    /// nil: accepted; else the `error=` the challenge carries ("" for a challenge without one).
    var refusal: String?

    var description: String { name }
}

let credentials: [Credential] = [
    Credential(name: "none", values: [], refusal: ""),
    Credential(name: "right token", values: ["Bearer \(token)"], refusal: nil),
    Credential(name: "scheme in lower case", values: ["bearer \(token)"], refusal: nil),
    Credential(name: "extra spaces", values: ["Bearer   \(token) "], refusal: nil),
    Credential(name: "wrong token", values: ["Bearer \(token)x"], refusal: "invalid_token"),
    Credential(name: "a prefix of the token", values: ["Bearer \(token.prefix(8))"], refusal: "invalid_token"),
    Credential(name: "empty token", values: ["Bearer "], refusal: "invalid_request"),
    Credential(name: "scheme only", values: ["Bearer"], refusal: "invalid_request"),
    Credential(name: "basic auth", values: ["Basic dXNlcjpwYXNz"], refusal: "invalid_request"),
    Credential(name: "token without scheme", values: [token], refusal: "invalid_request"),
    Credential(name: "two headers", values: ["Bearer \(token)", "Bearer \(token)"], refusal: "invalid_request"),
]

@Suite struct BearerTokenTests {
    /// Each credential on a route that answers 200 with it: refused ones get 401, the challenge and the error body.
    @Test(arguments: credentials)
    func credentialIsAcceptedOrRefused(_ credential: Credential) async throws {
        try await withAPI(.live, bearerToken: token) { _, client in
            var headers = HTTPFields()
            for value in credential.values { headers.append(HTTPField(name: .authorization, value: value)) }
            let response = try await client.execute(uri: "/v1/cameras", method: .get, headers: headers, body: nil)
            guard let refusal = credential.refusal else {
                #expect(response.status == .ok, "\(response.text)")
                return
            }
            #expect(response.status == .unauthorized)
            let challenge = try #require(response.headers[.wwwAuthenticate])
            #expect(challenge.hasPrefix("Bearer realm=\"pushav\""))
            #expect(refusal.isEmpty ? !challenge.contains("error=") : challenge.hasSuffix("error=\"\(refusal)\""), "\(challenge)")
            #expect(response.headers[.contentType] == "application/json")
            let body = try #require(response.errorBody, "\(response.text)")
            #expect(body.status == "UNSUPPORTED_ACCESS" && body.code == 0x7E && body.clusterStatus == nil)
            #expect(body.message.hasPrefix("Authorization: "))
            #expect(!body.message.contains(token), "the message must not echo the token")
        }
    }

    /// Every route (and a path that is no route) refuses a request without the token before doing anything: no
    /// command runs, no body is read; with the token the same request gets past the check.
    @Test func everyRouteNeedsTheToken() async throws {
        let routes = try SidecarRouter.router(control: try TestSidecar(), logger: Logger(label: "routes")).routes
        let paths: [(HTTPRequest.Method, String)] = routes.map { ($0.method, Self.concrete("\($0.path)")) } + [(.get, "/v2/nothing")]
        #expect(paths.count == 50)
        try await withAPI(bearerToken: token) { sidecar, client in
            for (method, path) in paths {
                let refused = try await client.call(method, path, json: method == .post || method == .put ? "{}" : nil)
                #expect(refused.status == .unauthorized, "\(method) \(path): \(refused.status)")
                #expect(refused.headers[.wwwAuthenticate] != nil, "\(method) \(path)")
            }
            #expect(await sidecar.tlsEndpoints(fabric: 1).isEmpty)
            #expect(try await client.execute(uri: "/health", method: .get, headers: [.authorization: "Bearer \(token)"]).status == .ok)
            let missing = try await client.execute(uri: "/v2/nothing", method: .get, headers: [.authorization: "Bearer \(token)"])
            #expect(missing.status == .notFound)
        }
    }

    /// Without a configured token the API does not ask for one (the loopback default).
    @Test func noTokenConfiguredNoChallenge() async throws {
        try await withAPI { _, client in
            let response = try await client.call(.get, "/health")
            #expect(response.status == .ok)
            #expect(response.headers[.wwwAuthenticate] == nil)
        }
    }

    @Test(arguments: [
        ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER  abc  ", "abc"), (" Bearer abc", "abc"),
        ("Bearer", nil), ("Bearer ", nil), ("Basic abc", nil), ("Bearerabc", nil), ("", nil),
    ] as [(String, String?)])
    func bearerTokenParsing(header: String, expected: String?) {
        #expect(BearerTokenMiddleware.bearerToken(header).map(String.init) == expected)
    }

    /// `{camera}` → cam1, `{endpointID}` → 1.
    private static func concrete(_ path: String) -> String {
        path.replacingOccurrences(of: "{camera}", with: "cam1").replacingOccurrences(of: "{endpointID}", with: "1")
    }
}
