import Foundation
import NIOSSL

/// Mutual-TLS material held in memory (PEM or DER bytes). It is handed to NIOSSL directly and never written to a
/// file by the uploader.
public struct ClientTLSMaterial: Sendable, Hashable {
    /// Root certificate(s) the server's chain must lead to; nil trusts the system roots.
    public var trustedCertificates: [UInt8]?
    /// The client certificate chain, leaf first (several PEM blocks, or one DER certificate).
    public var certificateChain: [UInt8]
    public var privateKey: [UInt8]

    public init(trustedCertificates: [UInt8]? = nil, certificateChain: [UInt8], privateKey: [UInt8]) {
        self.trustedCertificates = trustedCertificates
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }

    /// A client TLS configuration: these trust roots, this certificate and key, TLS ≥ 1.2, ALPN h2 + http/1.1.
    public func makeTLSConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let trustedCertificates {
            configuration.trustRoots = .certificates(try Self.certificates(trustedCertificates))
        }
        // Empty chain and key: server authentication only (e.g. `--ca` without `--cert`).
        if !certificateChain.isEmpty {
            configuration.certificateChain = try Self.certificates(certificateChain).map { .certificate($0) }
            configuration.privateKey = .privateKey(
                try NIOSSLPrivateKey(bytes: privateKey, format: Self.isPEM(privateKey) ? .pem : .der))
        }
        return configuration
    }

    static func certificates(_ bytes: [UInt8]) throws -> [NIOSSLCertificate] {
        Self.isPEM(bytes) ? try NIOSSLCertificate.fromPEMBytes(bytes) : [try NIOSSLCertificate(bytes: bytes, format: .der)]
    }

    public static func isPEM(_ bytes: some Collection<UInt8>) -> Bool {
        let marker = Array("-----BEGIN".utf8)
        let head = Array(bytes.prefix(4096))
        guard head.count >= marker.count else { return false }
        return (0...(head.count - marker.count)).contains { Array(head[$0..<($0 + marker.count)]) == marker }
    }
}

/// Where one transport connection uploads to.
public struct UploadEndpoint: Sendable, Hashable {
    /// The CMAF publishing point URL; it ends with `/` (object paths are appended).
    public var url: String
    /// The spool and metrics label of this connection (the Matter connection ID, or the URL for the CLI).
    public var connection: String
    /// Client certificate and trust roots; nil for a plain-HTTP or server-auth-only endpoint.
    public var tls: ClientTLSMaterial?

    public init(url: String, connection: String, tls: ClientTLSMaterial?) {
        self.url = url.hasSuffix("/") ? url : url + "/"
        self.connection = connection
        self.tls = tls
    }
}
