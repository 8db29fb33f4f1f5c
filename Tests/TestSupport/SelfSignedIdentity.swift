import Foundation

/// A throwaway P-256 certificate and its key (openssl, PEM), for tests that need a TLS endpoint's material to load
/// but never connect with it. Written as `cert.pem` and `key.pem` in `directory`.
public struct SelfSignedIdentity: Sendable {
    public let certificate: Data
    public let key: Data

    public var certificatePEM: String { String(decoding: certificate, as: UTF8.self) }
    public var keyPEM: String { String(decoding: key, as: UTF8.self) }

    public static func make(in directory: URL) async throws -> SelfSignedIdentity {
        try await Shell.run("""
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem -out cert.pem \\
              -days 2 -subj /CN=camera 2>/dev/null
            """, in: directory)
        return SelfSignedIdentity(certificate: try Data(contentsOf: directory.appendingPathComponent("cert.pem")),
                                  key: try Data(contentsOf: directory.appendingPathComponent("key.pem")))
    }
}
