import Foundation
import NIOSSL
import SidecarDemo
import SwiftASN1
import Testing
import X509

@Suite("LocalPKI") struct LocalPKITests {
    let pki: LocalPKI
    let ca: Certificate

    init() throws {
        pki = try LocalPKI()
        ca = try Certificate(pemEncoded: pki.caCertificatePEM)
    }

    /// Validates `leaf` against the CA alone with RFC 5280's rules (signature, validity, CA constraints) and `policy`.
    func validate(_ leafPEM: String, serverHostname: String? = nil, serverIP: String? = nil,
                  roots: [Certificate]? = nil) async throws -> Bool {
        let leaf = try Certificate(pemEncoded: leafPEM)
        var verifier = Verifier(rootCertificates: CertificateStore(roots ?? [ca])) {
            RFC5280Policy()
            if serverHostname != nil || serverIP != nil {
                ServerIdentityPolicy(serverHostname: serverHostname, serverIP: serverIP)
            }
        }
        if case .validCertificate = await verifier.validate(leaf: leaf, intermediates: CertificateStore()) {
            return true
        }
        return false
    }

    @Test func theClientCertificateChainsToTheCAForClientAuthentication() async throws {
        #expect(try await validate(pki.clientCertificatePEM))
        let client = try Certificate(pemEncoded: pki.clientCertificatePEM)
        #expect(client.issuer == ca.subject)
        #expect(try client.extensions.extendedKeyUsage?.contains(.clientAuth) == true)
        #expect(try client.extensions.basicConstraints == .notCertificateAuthority)
        #expect(try ca.extensions.basicConstraints == .isCertificateAuthority(maxPathLength: 0))
        // Another run's CA does not vouch for it: the chain is to this CA, not to any certificate that looks alike.
        let stranger = try Certificate(pemEncoded: LocalPKI().caCertificatePEM)
        #expect(try await !validate(pki.clientCertificatePEM, roots: [stranger]))
    }

    /// Server certificate: chains to the CA and names localhost (DNS) and 127.0.0.1 (IP), nothing else.
    @Test(arguments: [("localhost", nil), (nil, "127.0.0.1"), ("example.com", nil), (nil, "127.0.0.2")] as [(String?, String?)])
    func theServerCertificateCoversLocalhostAnd127001(hostname: String?, ip: String?) async throws {
        let covered = hostname == "localhost" || ip == "127.0.0.1"
        #expect(try await validate(pki.serverCertificatePEM, serverHostname: hostname, serverIP: ip) == covered)
    }

    @Test func theServerCertificateNamesExactlyLocalhostAnd127001() throws {
        let server = try Certificate(pemEncoded: pki.serverCertificatePEM)
        let names = try #require(try server.extensions.subjectAlternativeNames)
        #expect(Array(names) == [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
        #expect(try server.extensions.extendedKeyUsage?.contains(.serverAuth) == true)
    }

    /// The PEM is what NIOSSL (BoringSSL) loads: the keys match their certificates.
    @Test func keysAndCertificatesLoadIntoNIOSSLAndMatch() throws {
        for (certificatePEM, keyPEM) in [(pki.serverCertificatePEM, pki.serverKeyPEM), (pki.clientCertificatePEM, pki.clientKeyPEM)] {
            _ = try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem)
            _ = try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem)
            let publicKey = try Certificate(pemEncoded: certificatePEM).publicKey
            let fromKey = try Certificate.PrivateKey(pemEncoded: keyPEM).publicKey
            #expect(publicKey == fromKey)
        }
    }

    /// `--host` words: DNS names and IP addresses are names a certificate can carry; anything else is refused.
    @Test(arguments: [
        ("localhost", "localhost"), ("Cam.Local", "cam.local"), ("127.0.0.1", "127.0.0.1"), ("::1", "::1"),
        ("fe80::1", "fe80::1"), ("a-b.example", "a-b.example"),
        ("", nil), ("http://cam", nil), ("cam:8443", nil), ("*.example", nil), ("-cam", nil), ("a..b", nil), ("a b", nil),
    ] as [(String, String?)])
    func serverNamesAreDNSNamesOrAddresses(text: String, parsed: String?) {
        #expect(LocalPKI.ServerName(text)?.description == parsed)
    }

    @Test func theServerCertificateCoversTheNamesAskedFor() async throws {
        let names = ["cam.local", "192.0.2.7", "2001:db8::7"].compactMap(LocalPKI.ServerName.init)
        let custom = try LocalPKI(serverNames: names)
        let roots = [try Certificate(pemEncoded: custom.caCertificatePEM)]
        #expect(try await validate(custom.serverCertificatePEM, serverHostname: "cam.local", roots: roots))
        #expect(try await validate(custom.serverCertificatePEM, serverIP: "192.0.2.7", roots: roots))
        #expect(try await validate(custom.serverCertificatePEM, serverIP: "2001:db8::7", roots: roots))
        #expect(try await !validate(custom.serverCertificatePEM, serverHostname: "localhost", roots: roots))
    }
}
