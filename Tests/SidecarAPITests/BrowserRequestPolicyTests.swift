import HTTPTypes
import HummingbirdTesting
import SidecarAPI
import Testing

/// What a browser on the same machine may send, by table: (method, authority, Origin, Content-Type, body?) → refusal.
@Suite struct BrowserRequestPolicyTests {
    typealias Refusal = BrowserRequestPolicy.Refusal
    enum Expected: Sendable { case allowed, misdirected, foreignOrigin, notJSON }

    static let loopback = BrowserRequestPolicy(listenHost: "127.0.0.1", allowedOrigins: ["https://controller.example"])

    static let rows: [(String, HTTPRequest.Method, String?, String?, String?, Bool, Expected)] = [
        ("a script or curl: no Origin", .post, "127.0.0.1:8080", nil, "application/json", true, .allowed),
        ("JSON with a charset", .post, "127.0.0.1:8080", nil, "application/json; charset=utf-8", true, .allowed),
        ("the status page itself", .post, "127.0.0.1:8080", "http://127.0.0.1:8080", "application/json", true, .allowed),
        ("localhost and other loopback names", .get, "localhost:8080", "http://localhost:8080", nil, false, .allowed),
        ("127.0.0.2", .get, "127.0.0.2:8080", nil, nil, false, .allowed),
        ("IPv6 loopback", .get, "[::1]:8080", nil, nil, false, .allowed),
        ("a listed origin", .post, "127.0.0.1:8080", "https://controller.example", "application/json", true, .allowed),
        ("a GET needs no content type", .get, "127.0.0.1:8080", nil, nil, false, .allowed),
        ("an empty POST (findTransport)", .post, "127.0.0.1:8080", nil, nil, false, .allowed),
        ("cross-site fetch, no-cors", .post, "127.0.0.1:8080", "https://attacker.example", "text/plain", true, .foreignOrigin),
        ("cross-site form POST", .post, "127.0.0.1:8080", "http://127.0.0.1:9999", "application/x-www-form-urlencoded", true, .foreignOrigin),
        ("the same host, another port", .get, "127.0.0.1:8080", "http://127.0.0.1:9999", nil, false, .foreignOrigin),
        ("a sandboxed page", .post, "127.0.0.1:8080", "null", "application/json", true, .foreignOrigin),
        ("text/plain without Origin", .post, "127.0.0.1:8080", nil, "text/plain", true, .notJSON),
        ("a body without a type", .put, "127.0.0.1:8080", nil, nil, true, .notJSON),
        ("DNS rebinding", .get, "attacker.example:8080", "http://attacker.example:8080", nil, false, .misdirected),
        ("rebinding to a LAN name", .get, "camera.local", nil, nil, false, .misdirected),
    ]

    @Test(arguments: rows)
    func decides(row: (String, HTTPRequest.Method, String?, String?, String?, Bool, Expected)) {
        let (name, method, authority, origin, contentType, hasBody, expected) = row
        let refusal = Self.loopback.refusal(method: method, authority: authority, origin: origin, contentType: contentType, hasBody: hasBody)
        switch (expected, refusal) {
        case (.allowed, nil), (.misdirected, .misdirected?), (.foreignOrigin, .foreignOrigin?), (.notJSON, .notJSON?):
            break
        default:
            Issue.record("\(name): expected \(expected), got \(String(describing: refusal))")
        }
    }

    /// On a wildcard address any authority may reach it (a token is required off loopback); Origin and body rules stay.
    @Test func wildcardListenAcceptsAnyAuthority() {
        let policy = BrowserRequestPolicy(listenHost: "0.0.0.0")
        #expect(policy.refusal(method: .get, authority: "192.168.1.20:8080", origin: nil, contentType: nil, hasBody: false) == nil)
        #expect(policy.refusal(method: .post, authority: "192.168.1.20:8080", origin: "http://evil.example", contentType: "application/json",
                               hasBody: true) != nil)
    }
}

/// The status page's security headers: a policy that lets only its own script run (by hash), no framing, no sniffing.
@Suite struct StatusPageHeaderTests {
    @Test func pageCarriesItsSecurityHeaders() async throws {
        try await withAPI { _, client in
            let answer = try await client.execute(uri: "/", method: .get)
            #expect(answer.status == .ok)
            let policy = try #require(answer.headers[.contentSecurityPolicy])
            let scriptSources = try #require(policy.split(separator: ";").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("script-src") })
            #expect(scriptSources.contains("'sha256-") && !scriptSources.contains("unsafe-inline"), "\(policy)")
            #expect(policy.contains("frame-ancestors 'none'") && policy.contains("connect-src 'self'"), "\(policy)")
            #expect(answer.headers[.xContentTypeOptions] == "nosniff")
            #expect(answer.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
        }
    }
}
