import Crypto
import Foundation
import Sidecar
import Testing
import TestSupport
import TransportModel

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
        let answer = try await setup.engine.clientCSR(ClientCSRRequest(nonce: nonce), fabric: 1)
        try answer.csr.write(to: setup.file("answer.csr.der"))
        let text = try await setup.openssl("openssl req -inform DER -in answer.csr.der -verify -noout -text 2>&1")
        #expect(text.contains("verify OK") || text.contains("Certificate request self-signature verify OK"), "\(text)")
        #expect(text.contains("Public-Key: (256 bit)") && text.contains("prime256v1"), "\(text)")
        #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256"), "\(text)")

        // nonceSignature: the CSR key's signature over the 32 nonce bytes exactly as received, raw r‖s — what the
        // certification helper verifies (`verify(signature, data=nonce, ECDSA(SHA256))`). Checked by the openssl CLI
        // (DER-wrapping r‖s) as well as swift-crypto.
        let publicKeyPEM = try await setup.openssl("openssl req -inform DER -in answer.csr.der -pubkey -noout")
        let publicKey = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        #expect(answer.nonceSignature.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: answer.nonceSignature)
        #expect(publicKey.isValidSignature(signature, for: nonce))
        #expect(!publicKey.isValidSignature(signature, for: Data(count: 32)))
        try publicKeyPEM.write(to: setup.file("csr-key.pem"), atomically: true, encoding: .utf8)
        try nonce.write(to: setup.file("nonce.bin"))
        try signature.derRepresentation.write(to: setup.file("nonce.sig"))
        let verified = try await setup.openssl(
            "openssl dgst -sha256 -verify csr-key.pem -signature nonce.sig nonce.bin 2>&1")
        #expect(verified.contains("Verified OK"), "\(verified)")
    }

    /// ClientCSR naming a CCDID gives it a new key pair: a new CSR, the old certificate cleared (it certifies the old
    /// key), and a certificate of the new CSR accepted under the same CCDID.
    @Test func clientCSRWithACCDIDRotatesItsKey() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let engine = setup.engine
        let first = try await engine.clientCSR(ClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        try await engine.provisionClientCertificate(
            ProvisionClientCertificateRequest(ccdid: first.ccdid, clientCertificate: try await setup.sign(first.csr, name: "old")),
            fabric: 1)
        #expect(try await engine.findClientCertificates(first.ccdid, fabric: 1).first?.clientCertificate != nil)

        let rotated = try await engine.clientCSR(ClientCSRRequest(nonce: Data(count: 32), ccdid: first.ccdid), fabric: 1)
        #expect(rotated.ccdid == first.ccdid && rotated.csr != first.csr)
        #expect(try await engine.findClientCertificates(first.ccdid, fabric: 1).first?.clientCertificate == nil)
        let old = try Data(contentsOf: setup.file("old.der"))
        await #expect(throws: TransportCommandError.self) {
            try await engine.provisionClientCertificate(ProvisionClientCertificateRequest(ccdid: first.ccdid, clientCertificate: old), fabric: 1)
        }
        try await engine.provisionClientCertificate(
            ProvisionClientCertificateRequest(ccdid: first.ccdid, clientCertificate: try await setup.sign(rotated.csr, name: "new")),
            fabric: 1)
        #expect(try await engine.findClientCertificates(nil, fabric: 1).map(\.ccdid) == [first.ccdid])
    }

    /// Find, Lookup (SHA-256 of the DER), Remove and the attributes, per fabric, for root and client certificates.
    @Test func findLookupRemoveAndAttributes() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let engine = setup.engine
        let caDER = try Data(contentsOf: setup.file("ca.der"))
        let caid = try await engine.provisionRootCertificate(ProvisionRootCertificateRequest(certificate: caDER), fabric: 1)
        let csr = try await engine.clientCSR(ClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        let certificate = try await setup.sign(csr.csr)
        try await engine.provisionClientCertificate(
            ProvisionClientCertificateRequest(ccdid: csr.ccdid, clientCertificate: certificate, intermediateCertificates: [caDER]),
            fabric: 1)

        #expect(try await engine.findRootCertificates(nil, fabric: 1) == [RootCertificateDetails(caid: caid, certificate: caDER)])
        #expect(try await engine.findRootCertificates(caid, fabric: 1).count == 1)
        let found = try #require(try await engine.findClientCertificates(csr.ccdid, fabric: 1).first)
        #expect(found.clientCertificate == certificate && found.intermediateCertificates == [caDER])
        // The fingerprint is the SHA-256 of the DER, computed here by the openssl CLI.
        let caFingerprint = try await setup.openssl("openssl dgst -sha256 -binary ca.der | base64 -w0")
        let clientFingerprint = try await setup.openssl("openssl dgst -sha256 -binary client.der | base64 -w0")
        let caPrint = try #require(Data(base64Encoded: caFingerprint.trimmingCharacters(in: .whitespacesAndNewlines)))
        let clientPrint = try #require(Data(base64Encoded: clientFingerprint.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try await engine.lookupRootCertificate(fingerprint: caPrint, fabric: 1) == caid)
        #expect(try await engine.lookupClientCertificate(fingerprint: clientPrint, fabric: 1) == csr.ccdid)

        let attributes = try await engine.tlsCertificateAttributes(fabric: 1)
        #expect(attributes.provisionedRootCertificates == [RootCertificateDetails(caid: caid, certificate: nil)])
        #expect(attributes.provisionedClientCertificates.map(\.ccdid) == [csr.ccdid])
        #expect(attributes.maxRootCertificates >= 5 && attributes.maxClientCertificates >= 2)
        // Fabric 2 sees none of fabric 1's.
        let other = try await engine.tlsCertificateAttributes(fabric: 2)
        #expect(other.provisionedRootCertificates.isEmpty && other.provisionedClientCertificates.isEmpty)

        try await engine.removeClientCertificate(csr.ccdid, fabric: 1)
        #expect(try await engine.tlsCertificateAttributes(fabric: 1).provisionedClientCertificates.isEmpty)
        // Rotation of a root certificate keeps its CAID.
        #expect(try await engine.provisionRootCertificate(ProvisionRootCertificateRequest(certificate: caDER, caid: caid), fabric: 1) == caid)
    }

    @Test func fullFlowMakesAnEndpointAndKeepsTheKeyOwnerOnly() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let caid = try await setup.engine.provisionRootCertificate(
            ProvisionRootCertificateRequest(certificate: try Data(contentsOf: setup.file("ca.der"))), fabric: 1)
        let answer = try await setup.engine.clientCSR(ClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        let certificate = try await setup.sign(answer.csr)
        try await setup.engine.provisionClientCertificate(
            ProvisionClientCertificateRequest(ccdid: answer.ccdid, clientCertificate: certificate),
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
        #expect(await status { _ = try await engine.clientCSR(ClientCSRRequest(nonce: Data(count: 31)), fabric: 1) }
            == "\(TransportStatus.interactionModel(.constraintError))")
        #expect(await status { _ = try await engine.provisionRootCertificate(ProvisionRootCertificateRequest(certificate: Data([1, 2, 3])), fabric: 1) }
            == "\(TransportStatus.interactionModel(.constraintError))")
        #expect(await status { try await engine.removeRootCertificate(7, fabric: 1) } == "\(TransportStatus.interactionModel(.notFound))")
        #expect(await status {
            try await engine.provisionClientCertificate(.init(ccdid: 9, clientCertificate: Data([1])), fabric: 1)
        } == "\(TransportStatus.interactionModel(.notFound))")

        let notFound = "\(TransportStatus.interactionModel(.notFound))"
        let caDER = try Data(contentsOf: setup.file("ca.der"))
        #expect(await status { _ = try await engine.provisionRootCertificate(.init(certificate: caDER, caid: 4), fabric: 1) } == notFound)
        #expect(await status { _ = try await engine.findRootCertificates(nil, fabric: 1) } == notFound)
        #expect(await status { _ = try await engine.findClientCertificates(3, fabric: 1) } == notFound)
        #expect(await status { _ = try await engine.clientCSR(ClientCSRRequest(nonce: Data(count: 32), ccdid: 5), fabric: 1) } == notFound)
        #expect(await status { try await engine.removeClientCertificate(5, fabric: 1) } == notFound)
        #expect(await status { _ = try await engine.lookupRootCertificate(fingerprint: Data(count: 32), fabric: 1) } == notFound)
        #expect(await status { _ = try await engine.lookupClientCertificate(fingerprint: Data(count: 20), fabric: 1) }
            == "\(TransportStatus.interactionModel(.constraintError))")
        let caid = try await engine.provisionRootCertificate(
            ProvisionRootCertificateRequest(certificate: try Data(contentsOf: setup.file("ca.der"))), fabric: 1)
        let first = try await engine.clientCSR(ClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        let second = try await engine.clientCSR(ClientCSRRequest(nonce: Data(count: 32)), fabric: 1)
        #expect(first.ccdid != second.ccdid)
        // No certificate yet: the endpoint cannot be made.
        #expect(await status { _ = try await engine.provisionEndpoint(.init(hostname: "h", port: 1, caid: caid, ccdid: first.ccdid), fabric: 1) }
            == "\(TransportStatus.interactionModel(.invalidInState))")
        // A certificate of the other key pair's CSR does not certify this CCDID's key.
        let forSecond = try await setup.sign(second.csr, name: "second")
        #expect(await status {
            try await engine.provisionClientCertificate(.init(ccdid: first.ccdid, clientCertificate: forSecond), fabric: 1)
        } == "\(TransportStatus.interactionModel(.dynamicConstraintError))")
        // Another fabric cannot use this fabric's CAID or CCDID.
        #expect(await status { _ = try await engine.provisionEndpoint(.init(hostname: "h", port: 1, caid: caid, ccdid: second.ccdid), fabric: 2) }
            == "\(TransportStatus.interactionModel(.notFound))")
        #expect(await status { _ = try await engine.provisionEndpoint(.init(hostname: "h", port: 1, caid: caid, ccdid: nil), fabric: 1) }
            == "\(TransportStatus.interactionModel(.constraintError))")
    }

    /// The Find commands' NOT_FOUND names what was asked for: one ID and its field, or the fabric's whole list.
    @Test func findNamesWhatItDidNotFind() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        func message(_ body: () async throws -> Void) async -> String? {
            do { try await body(); return nil } catch let error as TransportCommandError { return error.message } catch {
                return "not a command error: \(error)"
            }
        }
        #expect(await message { _ = try await setup.engine.findRootCertificates(nil, fabric: 2) }
            == "fabric 2 has no root certificates")
        #expect(await message { _ = try await setup.engine.findRootCertificates(7, fabric: 1) }
            == "caid: fabric 1 has no root certificate 7")
        #expect(await message { _ = try await setup.engine.findClientCertificates(nil, fabric: 2) }
            == "fabric 2 has no client identities")
        #expect(await message { _ = try await setup.engine.findClientCertificates(3, fabric: 1) }
            == "ccdid: fabric 1 has no client identity 3")
    }
}
