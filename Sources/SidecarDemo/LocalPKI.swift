import Crypto
import Foundation
import SwiftASN1
import X509

/// A private CA and the two certificates a mutual-TLS upload needs, made in memory: a server certificate for the
/// ingest's names and a client certificate for the camera, both signed by the CA (P-256, ECDSA-SHA256).
///
/// `pushav serve --demo` makes one at every start and never writes it; `pushav certificates make` writes one for a
/// user who has no PKI of their own (issue 51: every TLS example assumed `ca.pem`, `server.pem`, `client.pem` and
/// `client.key` existed). The CA's key is not kept: nothing more can be signed with it, so a stolen copy of the
/// folder cannot mint certificates the ingest trusts.
public struct LocalPKI: Sendable {
    /// PEM. The CA both sides trust: the server's clients must chain to it, and it signs the server's certificate.
    public let caCertificatePEM: String
    public let serverCertificatePEM: String
    /// PEM (PKCS #8).
    public let serverKeyPEM: String
    public let clientCertificatePEM: String
    /// PEM (PKCS #8).
    public let clientKeyPEM: String

    /// A name the server certificate covers: a DNS name or an IP address (v4 or v6).
    public enum ServerName: Sendable, Hashable, CustomStringConvertible {
        case dns(String)
        case ip([UInt8])

        /// `localhost`, `cam.local`, `127.0.0.1`, `::1`; nil for anything else (a URL, a port, a wildcard, spaces).
        public init?(_ text: String) {
            var v4 = in_addr(), v6 = in6_addr()
            if inet_pton(AF_INET, text, &v4) == 1 {
                self = .ip(withUnsafeBytes(of: &v4) { Array($0) })
            } else if inet_pton(AF_INET6, text, &v6) == 1 {
                self = .ip(withUnsafeBytes(of: &v6) { Array($0) })
            } else {
                let labels = text.split(separator: ".", omittingEmptySubsequences: false)
                let valid = !text.isEmpty && text.count <= 253 && labels.allSatisfy { label in
                    (1...63).contains(label.count) && label.first != "-" && label.last != "-"
                        && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
                }
                guard valid else { return nil }
                self = .dns(text.lowercased())
            }
        }

        public var description: String {
            switch self {
            case .dns(let name): return name
            case .ip(let bytes):
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                let family = bytes.count == 4 ? AF_INET : AF_INET6
                _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
                return String(cString: text)
            }
        }

        var generalName: GeneralName {
            switch self {
            case .dns(let name): .dnsName(name)
            case .ip(let bytes): .ipAddress(ASN1OctetString(contentBytes: ArraySlice(bytes)))
            }
        }
    }

    /// What the demo's server certificate covers: this machine's loopback names.
    public static let loopbackNames: [ServerName] = [.dns("localhost"), .ip([127, 0, 0, 1])]

    /// Makes a new CA and the two leaf certificates it signs.
    /// Makes a new CA and the two leaf certificates it signs; the server certificate covers `serverNames` (its common
    /// name is the first).
    public init(commonNamePrefix: String = "pushav demo", serverNames: [ServerName] = Self.loopbackNames,
                validity: TimeInterval = 2 * 86_400, now: Date = Date()) throws {
        // Started an hour back so that a clock a little behind still accepts them.
        let notBefore = now.addingTimeInterval(-3600)
        let notAfter = now.addingTimeInterval(validity)

        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("\(commonNamePrefix) CA") }
        let caPublicKey = Certificate.PublicKey(caKey.publicKey)
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: caPublicKey,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: caPublicKey)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))

        func leaf(_ name: String, usage: ExtendedKeyUsage.Usage, alternativeNames: [GeneralName])
            throws -> (certificate: Certificate, key: P256.Signing.PrivateKey)
        {
            let key = P256.Signing.PrivateKey()
            let certificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
                notValidBefore: notBefore, notValidAfter: notAfter, issuer: caName,
                subject: try DistinguishedName { CommonName(name) },
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([usage])
                    AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: caPublicKey).keyIdentifier)
                    if !alternativeNames.isEmpty { SubjectAlternativeNames(alternativeNames) }
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey))
            return (certificate, key)
        }

        let server = try leaf(serverNames.first?.description ?? "localhost", usage: .serverAuth,
                              alternativeNames: serverNames.map(\.generalName))
        let client = try leaf("\(commonNamePrefix) camera", usage: .clientAuth, alternativeNames: [])
        caCertificatePEM = try ca.serializeAsPEM().pemString
        serverCertificatePEM = try server.certificate.serializeAsPEM().pemString
        serverKeyPEM = server.key.pemRepresentation
        clientCertificatePEM = try client.certificate.serializeAsPEM().pemString
        clientKeyPEM = client.key.pemRepresentation
    }
}
