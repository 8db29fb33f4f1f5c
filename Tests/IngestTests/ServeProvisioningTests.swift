import Crypto
import Foundation
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// The certification flow (TC-PAVSTI) through `pushav serve`'s API: the ingest's root certificate is provisioned,
    /// the service makes a key pair and answers a CSR whose nonce signature verifies, the ingest's CA (the openssl
    /// CLI) signs it, the certificate and the endpoint are provisioned, and a manual trigger's clip reaches an ingest
    /// that accepts only client certificates of that CA. The private key never appears in any answer.
    @Test func provisionedIdentityUploadsAManualTriggersClip() async throws {
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve = try await Serve(directory: ingest.directory, media: "a_720p30_h264_main.mp4")
        do {
            try await serve.waitUntilStreaming()
            let pki = ingest.pki.directory
            let caDER = try await Shell.run("openssl x509 -in '\(pki.path)/ca.pem' -outform DER | base64 -w0")
            let caid = try #require(try await serve.json(.POST, "/v1/tls/commands/provisionRootCertificate",
                                                         JSON.text(["certificate": caDER]))["caid"] as? Int)

            let nonce = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            let answer = try await serve.json(.POST, "/v1/tls/commands/clientCSR",
                                              JSON.text(["nonce": nonce.base64EncodedString()]))
            let ccdid = try #require(answer["ccdid"] as? Int)
            let csr = try #require((answer["csr"] as? String).flatMap { Data(base64Encoded: $0) })
            let signature = try #require((answer["nonceSignature"] as? String).flatMap { Data(base64Encoded: $0) })
            #expect(!JSON.text(answer).contains("PRIVATE KEY") && answer.count == 3, "\(answer.keys)")

            // The CA signs the CSR (after checking its self-signature); the nonce signature is the CSR key's, over the
            // nonce bytes exactly as sent (the released cluster; the certification helper verifies just that).
            let work = ingest.directory.appendingPathComponent("csr")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            try csr.write(to: work.appendingPathComponent("camera.csr.der"))
            let publicKeyPEM = try await Shell.run("""
                cd '\(work.path)'
                openssl req -inform DER -in camera.csr.der -verify -noout 2>/dev/null
                printf 'extendedKeyUsage=clientAuth\\n' > client.ext
                openssl req -inform DER -in camera.csr.der -out camera.csr.pem
                openssl x509 -req -in camera.csr.pem -CA '\(pki.path)/ca.pem' -CAkey '\(pki.path)/ca.key' \
                  -CAcreateserial -days 2 -extfile client.ext -outform DER -out camera.der 2>/dev/null
                openssl req -inform DER -in camera.csr.der -pubkey -noout
                """)
            let key = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
            #expect(key.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature), for: nonce))
            let certificate = try Data(contentsOf: work.appendingPathComponent("camera.der"))
            _ = try await serve.json(.POST, "/v1/tls/commands/provisionClientCertificate", JSON.text([
                "ccdid": ccdid, "clientCertificate": certificate.base64EncodedString(), "intermediateCertificates": [String](),
            ]))
            let endpointID = try #require(try await serve.json(.POST, "/v1/tls/commands/provisionEndpoint", JSON.text([
                "hostname": "localhost", "port": server.port, "caid": caid, "ccdid": ccdid,
            ]))["endpointID"] as? Int)

            let events = try await serve.subscribe()
            let id = try await serve.allocate(TransportJSON.options(
                endpointID: endpointID, ingestPort: server.port, path: "provisioned/", trigger: .command(preRollMs: 2000)))
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 2, max: 4)
            try await events.wait("Begin and End", timeout: .seconds(20)) { $0.count >= 2 }
            try await Fixtures.waitUntil("the clip at the ingest", timeout: .seconds(20)) {
                let stored = ingest.stored(under: "provisioned/session_1/video/")
                return stored.keys.contains { $0.hasSuffix("video.init") } && stored.keys.contains { $0.hasSuffix(".m4s") }
            }
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }
}
