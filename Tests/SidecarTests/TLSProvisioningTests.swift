import Crypto
import Foundation
import Sidecar
import Testing
import TestSupport
import TransportModel

/// The Matter TLV the CSR answer signs: the shortest length form, as the controller re-encodes it to verify.
@Suite struct MatterTLVTests {
    @Test(arguments: [
        (0, [0x30, 0x01, 0x00]),
        (32, [0x30, 0x01, 0x20]),
        (255, [0x30, 0x01, 0xFF]),
        (256, [0x31, 0x01, 0x00, 0x01]),
        (300, [0x31, 0x01, 0x2C, 0x01]),
        (65_536, [0x32, 0x01, 0x00, 0x00, 0x01, 0x00]),
    ])
    func octetStringUsesTheShortestLength(length: Int, prefix: [UInt8]) {
        let value = [UInt8](repeating: 0xAB, count: length)
        let tagged = MatterTLV.octetString(tag: 1, value)
        #expect(Array(tagged.prefix(prefix.count)) == prefix)
        #expect(tagged.count == prefix.count + length)
    }

    @Test func csrNonceStructure() {
        let encoded = MatterTLV.anonymousStructure(octetStrings: [(1, [0x01, 0x02]), (2, [0x03])])
        #expect(encoded == [0x15, 0x30, 0x01, 0x02, 0x01, 0x02, 0x30, 0x02, 0x01, 0x03, 0x18])
    }
}

/// The TC-PAVSTI provisioning flow on the engine, checked by the openssl CLI (an independent X.509 implementation)
/// and swift-crypto: the CSR, the nonce signature, the certificate check, the refusals, and the key's file.
@Suite struct TLSProvisioningTests {
    /// A state folder with one (not running) camera, and an openssl CA.
    struct Setup {
        let directory: URL
        let engine: SidecarEngine

        init(_ label: String = #function) async throws {
            directory = try TestPaths.scratchDirectory(label)
            let configuration = ServeConfiguration(
                state: directory.appendingPathComponent("state").path,
                cameras: [CameraConfiguration(id: "cam1", source: TestPaths.media("a_720p30_h264_main.mp4").path)])
            engine = try await SidecarEngine(configuration: configuration)
            try await openssl("""
                openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
                  -days 2 -subj /CN=ingest-ca -addext basicConstraints=critical,CA:TRUE \
                  -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
                openssl x509 -in ca.pem -outform DER -out ca.der
                """)
        }

        func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

        /// Runs a shell script in the scratch folder; throws with its output when it fails.
        @discardableResult
        func openssl(_ script: String) async throws -> String {
            try await Shell.run(script, in: directory)
        }

        /// Signs `csr` (DER) with the test CA as a TLS client certificate; returns the certificate, DER.
        func sign(_ csr: Data, name: String = "client") async throws -> Data {
            try csr.write(to: file("\(name).csr.der"))
            try await openssl("""
                printf 'extendedKeyUsage=clientAuth\\n' > client.ext
                openssl req -inform DER -in \(name).csr.der -out \(name).csr.pem
                openssl x509 -req -in \(name).csr.pem -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
                  -extfile client.ext -outform DER -out \(name).der 2>/dev/null
                """)
            return try Data(contentsOf: file("\(name).der"))
        }
    }

    @Test func csrIsP256SignedWithECDSASHA256AndTheNonceSignatureVerifies() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let nonce = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        let answer = try await setup.engine.tlsClientCSR(TLSClientCSRRequest(nonce: nonce), fabric: 1)
        try answer.csr.write(to: setup.file("answer.csr.der"))
        let text = try await setup.openssl("openssl req -inform DER -in answer.csr.der -verify -noout -text 2>&1")
        #expect(text.contains("verify OK") || text.contains("Certificate request self-signature verify OK"), "\(text)")
        #expect(text.contains("Public-Key: (256 bit)") && text.contains("prime256v1"), "\(text)")
        #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256"), "\(text)")

        // The nonce field: the CSR key's signature over TLV {1: csr, 2: nonce}, raw r‖s.
        let publicKeyPEM = try await setup.openssl("openssl req -inform DER -in answer.csr.der -pubkey -noout")
        let publicKey = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        #expect(answer.nonce.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: answer.nonce)
        let signed = MatterTLV.anonymousStructure(octetStrings: [(1, Array(answer.csr)), (2, Array(nonce))])
        #expect(publicKey.isValidSignature(signature, for: signed))
        #expect(!publicKey.isValidSignature(signature, for: MatterTLV.anonymousStructure(octetStrings: [(1, Array(answer.csr)), (2, [UInt8](repeating: 0, count: 32))])))
    }

    @Test func fullFlowMakesAnEndpointAndKeepsTheKeyOwnerOnly() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let caid = try await setup.engine.provisionRootCertificate(
            ProvisionRootCertificateRequest(certificate: try Data(contentsOf: setup.file("ca.der"))), fabric: 1)
        let answer = try await setup.engine.tlsClientCSR(TLSClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        let certificate = try await setup.sign(answer.csr)
        try await setup.engine.provisionClientCertificate(
            ProvisionClientCertificateRequest(ccdid: answer.ccdid, clientCertificateDetails: .init(clientCertificate: certificate)),
            fabric: 1)
        let endpointID = try await setup.engine.provisionEndpoint(
            ProvisionEndpointRequest(hostname: "localhost", port: 8443, caid: caid, ccdid: answer.ccdid), fabric: 1)
        let endpoints = await setup.engine.tlsEndpoints(fabric: 1)
        let endpoint = try #require(endpoints.first { $0.endpointID == endpointID })
        #expect(endpoint.hostname == "localhost" && endpoint.port == 8443)
        // The endpoint presents the certificate the CA signed, and chains to the provisioned root.
        try endpoint.clientCertificate.write(to: setup.file("endpoint-client.pem"), atomically: true, encoding: .utf8)
        let verified = try await setup.openssl("openssl verify -CAfile ca.pem endpoint-client.pem")
        #expect(verified.contains("endpoint-client.pem: OK"), "\(verified)")
        // Another fabric sees none of it.
        #expect(await setup.engine.tlsEndpoints(fabric: 2).isEmpty)

        let tls = setup.directory.appendingPathComponent("state/tls")
        let folder = try FileManager.default.attributesOfItem(atPath: tls.path)[.posixPermissions] as? Int
        let file = try FileManager.default.attributesOfItem(atPath: tls.appendingPathComponent("credentials.sqlite").path)[.posixPermissions] as? Int
        #expect(folder == 0o700 && file == 0o600)
        let state = try FileManager.default.attributesOfItem(atPath: setup.directory.appendingPathComponent("state").path)[.posixPermissions] as? Int
        #expect(state == 0o700)
    }

    /// Each refusal answers the Matter status a controller expects, naming the field.
    @Test func refusals() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let engine = setup.engine
        func status(_ body: () async throws -> Void) async -> String? {
            do { try await body(); return nil } catch let error as TransportCommandError { return "\(error.status)" } catch {
                return "not a command error: \(error)"
            }
        }
        #expect(await status { _ = try await engine.tlsClientCSR(TLSClientCSRRequest(nonce: Data(count: 31)), fabric: 1) }
            == "\(TransportStatus.interactionModel(.constraintError))")
        #expect(await status { _ = try await engine.provisionRootCertificate(ProvisionRootCertificateRequest(certificate: Data([1, 2, 3])), fabric: 1) }
            == "\(TransportStatus.interactionModel(.constraintError))")
        #expect(await status { try await engine.removeRootCertificate(7, fabric: 1) } == "\(TransportStatus.interactionModel(.notFound))")
        #expect(await status {
            try await engine.provisionClientCertificate(.init(ccdid: 9, clientCertificateDetails: .init(clientCertificate: Data([1]))), fabric: 1)
        } == "\(TransportStatus.interactionModel(.notFound))")

        let caid = try await engine.provisionRootCertificate(
            ProvisionRootCertificateRequest(certificate: try Data(contentsOf: setup.file("ca.der"))), fabric: 1)
        let first = try await engine.tlsClientCSR(TLSClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        let second = try await engine.tlsClientCSR(TLSClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        #expect(first.ccdid != second.ccdid)
        // No certificate yet: the endpoint cannot be made.
        #expect(await status { _ = try await engine.provisionEndpoint(.init(hostname: "h", port: 1, caid: caid, ccdid: first.ccdid), fabric: 1) }
            == "\(TransportStatus.interactionModel(.invalidInState))")
        // A certificate of the other key pair's CSR does not certify this CCDID's key.
        let forSecond = try await setup.sign(second.csr, name: "second")
        #expect(await status {
            try await engine.provisionClientCertificate(.init(ccdid: first.ccdid, clientCertificateDetails: .init(clientCertificate: forSecond)), fabric: 1)
        } == "\(TransportStatus.interactionModel(.dynamicConstraintError))")
        // Another fabric cannot use this fabric's CAID or CCDID.
        #expect(await status { _ = try await engine.provisionEndpoint(.init(hostname: "h", port: 1, caid: caid, ccdid: second.ccdid), fabric: 2) }
            == "\(TransportStatus.interactionModel(.notFound))")
        #expect(await status { _ = try await engine.provisionEndpoint(.init(hostname: "h", port: 1, caid: caid, ccdid: nil), fabric: 1) }
            == "\(TransportStatus.interactionModel(.constraintError))")
    }
}
