import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificates for a mutual-TLS exchange on this machine, made in memory and never written anywhere: a CA, a server
/// certificate for `localhost` and `127.0.0.1`, and a client certificate, all signed by that CA (P-256, ECDSA-SHA256).
/// For demos and tests only: the keys live as long as the process, and the certificates expire in `validity`.
public struct ThrowawayPKI: Sendable {
    /// PEM. The CA both sides trust: the server's clients must chain to it, and it signs the server's certificate.
    public let caCertificatePEM: String
    public let serverCertificatePEM: String
    /// PEM (PKCS #8).
    public let serverKeyPEM: String
    public let clientCertificatePEM: String
    /// PEM (PKCS #8).
    public let clientKeyPEM: String

    /// Names the server certificate covers.
    public static let serverDNSName = "localhost"
    public static let serverIPv4: [UInt8] = [127, 0, 0, 1]

    /// Makes a new CA and the two leaf certificates it signs.
    public init(commonNamePrefix: String = "pushav demo", validity: TimeInterval = 2 * 86_400, now: Date = Date()) throws {
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

        let server = try leaf("localhost", usage: .serverAuth, alternativeNames: [
            .dnsName(Self.serverDNSName), .ipAddress(ASN1OctetString(contentBytes: ArraySlice(Self.serverIPv4))),
        ])
        let client = try leaf("\(commonNamePrefix) camera", usage: .clientAuth, alternativeNames: [])
        caCertificatePEM = try ca.serializeAsPEM().pemString
        serverCertificatePEM = try server.certificate.serializeAsPEM().pemString
        serverKeyPEM = server.key.pemRepresentation
        clientCertificatePEM = try client.certificate.serializeAsPEM().pemString
        clientKeyPEM = client.key.pemRepresentation
    }
}
