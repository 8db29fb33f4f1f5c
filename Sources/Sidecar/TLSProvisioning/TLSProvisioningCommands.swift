import Crypto
import Foundation
import SwiftASN1
import TransportModel
import X509

// The TLS Certificate Management and TLS Client Management commands, as Matter's certification flow (TC-PAVSTI)
// provisions a camera: the controller installs the ingest's root certificate, asks the camera for a CSR (the key pair
// is made here and its private key never leaves), has it signed, installs the certificate, and names the endpoint that
// AllocatePushTransport's TLSEndpointID refers to. Octet strings travel as base64 in JSON.

/// `ProvisionRootCertificate`: the ingest server's root CA certificate, DER.
public struct ProvisionRootCertificateRequest: Codable, Sendable, Hashable {
    public var certificate: Data
    public init(certificate: Data) { self.certificate = certificate }
}

public struct ProvisionRootCertificateResponse: Codable, Sendable, Hashable {
    public var caid: UInt16
    public init(caid: UInt16) { self.caid = caid }
}

/// `RemoveRootCertificate`.
public struct RemoveRootCertificateRequest: Codable, Sendable, Hashable {
    public var caid: UInt16
    public init(caid: UInt16) { self.caid = caid }
}

/// `TLSClientCSR`: 32 random bytes the answer signs.
public struct TLSClientCSRRequest: Codable, Sendable, Hashable {
    public var nonce: Data
    public init(nonce: Data) { self.nonce = nonce }
}

/// The new key pair's CCDID, its CSR (DER PKCS #10, P-256, ecdsa-with-SHA256) and `nonce`: the key's ECDSA
/// signature (raw r‖s) over the Matter TLV structure {1: csr, 2: the request's nonce}.
public struct TLSClientCSRResponse: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public var csr: Data
    public var nonce: Data
    public init(ccdid: UInt16, csr: Data, nonce: Data) {
        self.ccdid = ccdid
        self.csr = csr
        self.nonce = nonce
    }
}

/// `ProvisionClientCertificate`: the certificate signed from the CCDID's CSR, DER, and any intermediates.
public struct ProvisionClientCertificateRequest: Codable, Sendable, Hashable {
    public struct Details: Codable, Sendable, Hashable {
        public var clientCertificate: Data
        public var intermediateCertificates: [Data]?
        public init(clientCertificate: Data, intermediateCertificates: [Data]? = nil) {
            self.clientCertificate = clientCertificate
            self.intermediateCertificates = intermediateCertificates
        }
    }

    public var ccdid: UInt16
    public var clientCertificateDetails: Details
    public init(ccdid: UInt16, clientCertificateDetails: Details) {
        self.ccdid = ccdid
        self.clientCertificateDetails = clientCertificateDetails
    }
}

/// `ProvisionEndpoint`: where the ingest is, the root certificate its chain must reach, the client identity to present.
public struct ProvisionEndpointRequest: Codable, Sendable, Hashable {
    public var hostname: String
    public var port: UInt16
    public var caid: UInt16
    /// Push AV uploads use mutual TLS, so this is required here although the cluster lets it be null.
    public var ccdid: UInt16?
    public init(hostname: String, port: UInt16, caid: UInt16, ccdid: UInt16?) {
        self.hostname = hostname
        self.port = port
        self.caid = caid
        self.ccdid = ccdid
    }
}

public struct ProvisionEndpointResponse: Codable, Sendable, Hashable {
    public var endpointID: UInt16
    public init(endpointID: UInt16) { self.endpointID = endpointID }
}

/// The key pair and CSR of one `TLSClientCSR` (pure: no storage).
enum ClientCSR {
    static let nonceLength = 32

    static func make(nonce: [UInt8], privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey())
        throws -> (csr: [UInt8], nonceSignature: [UInt8], privateKey: P256.Signing.PrivateKey)
    {
        let request = try CertificateSigningRequest(
            version: .v1, subject: try DistinguishedName { CommonName("pushav camera") },
            privateKey: Certificate.PrivateKey(privateKey), attributes: CertificateSigningRequest.Attributes(),
            signatureAlgorithm: .ecdsaWithSHA256)
        var serializer = DER.Serializer()
        try serializer.serialize(request)
        let csr = serializer.serializedBytes
        let signed = MatterTLV.anonymousStructure(octetStrings: [(1, csr), (2, nonce)])
        let signature = try privateKey.signature(for: signed)
        return (csr, Array(signature.rawRepresentation), privateKey)
    }
}

extension SidecarEngine {
    public func provisionRootCertificate(_ request: ProvisionRootCertificateRequest, fabric: FabricIndex)
        async throws(TransportCommandError) -> UInt16
    {
        do {
            _ = try Certificate(derEncoded: Array(request.certificate))
        } catch {
            throw .im(.constraintError, "certificate: not a DER X.509 certificate (\(error))")
        }
        let caid = try await credentialCall { try $0.addRootCertificate(request.certificate, fabric: fabric) }
        guard let caid else { throw .im(.resourceExhausted, "no free CAID") }
        logger.info("root certificate provisioned", metadata: ["fabric": "\(fabric)", "caid": "\(caid)"])
        return caid
    }

    public func removeRootCertificate(_ caid: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        let removed = try await credentialCall { try $0.removeRootCertificate(caid: caid, fabric: fabric) }
        guard removed else { throw .im(.notFound, "caid: fabric \(fabric) has no root certificate \(caid)") }
    }

    public func tlsClientCSR(_ request: TLSClientCSRRequest, fabric: FabricIndex)
        async throws(TransportCommandError) -> TLSClientCSRResponse
    {
        guard request.nonce.count == ClientCSR.nonceLength else {
            throw .im(.constraintError, "nonce: \(ClientCSR.nonceLength) bytes required, got \(request.nonce.count)")
        }
        let made: (csr: [UInt8], nonceSignature: [UInt8], privateKey: P256.Signing.PrivateKey)
        do {
            made = try ClientCSR.make(nonce: Array(request.nonce))
        } catch {
            throw .im(.failure, "cannot make a CSR: \(error)")
        }
        let key = made.privateKey.rawRepresentation, csr = Data(made.csr)
        let ccdid = try await credentialCall { try $0.addClientIdentity(privateKey: key, csr: csr, fabric: fabric) }
        guard let ccdid else { throw .im(.resourceExhausted, "no free CCDID") }
        logger.info("client key pair made; CSR answered", metadata: ["fabric": "\(fabric)", "ccdid": "\(ccdid)"])
        return TLSClientCSRResponse(ccdid: ccdid, csr: csr, nonce: Data(made.nonceSignature))
    }

    public func provisionClientCertificate(_ request: ProvisionClientCertificateRequest, fabric: FabricIndex)
        async throws(TransportCommandError)
    {
        let ccdid = request.ccdid
        guard let identity = try await credentialCall({ try $0.clientIdentity(ccdid: ccdid, fabric: fabric) }) else {
            throw .im(.notFound, "ccdid: fabric \(fabric) has no client identity \(ccdid)")
        }
        let details = request.clientCertificateDetails
        let chain = [details.clientCertificate] + (details.intermediateCertificates ?? [])
        let leaf: Certificate
        do {
            leaf = try Certificate(derEncoded: Array(details.clientCertificate))
            for intermediate in details.intermediateCertificates ?? [] { _ = try Certificate(derEncoded: Array(intermediate)) }
        } catch {
            throw .im(.constraintError, "clientCertificateDetails: not a DER X.509 certificate (\(error))")
        }
        let key: P256.Signing.PrivateKey
        do { key = try P256.Signing.PrivateKey(rawRepresentation: identity.privateKey) } catch {
            throw .im(.failure, "the stored key of ccdid \(ccdid) is unreadable: \(error)")
        }
        guard leaf.publicKey == Certificate.PublicKey(key.publicKey) else {
            throw .im(.dynamicConstraintError, "clientCertificate: does not certify the key of ccdid \(ccdid)'s CSR")
        }
        try await credentialCall { try $0.setCertificateChain(chain, ccdid: ccdid, fabric: fabric) }
        logger.info("client certificate provisioned", metadata: [
            "fabric": "\(fabric)", "ccdid": "\(ccdid)", "subject": "\(leaf.subject)", "notAfter": "\(leaf.notValidAfter)",
        ])
    }

    /// Builds the endpoint from the stored root certificate and client identity; the key reaches NIOSSL from memory.
    public func provisionEndpoint(_ request: ProvisionEndpointRequest, fabric: FabricIndex)
        async throws(TransportCommandError) -> UInt16
    {
        let caid = request.caid
        guard let root = try await credentialCall({ try $0.rootCertificate(caid: caid, fabric: fabric) }) else {
            throw .im(.notFound, "caid: fabric \(fabric) has no root certificate \(caid)")
        }
        guard let ccdid = request.ccdid else {
            throw .im(.constraintError, "ccdid: required (Push AV uploads use mutual TLS)")
        }
        guard let identity = try await credentialCall({ try $0.clientIdentity(ccdid: ccdid, fabric: fabric) }) else {
            throw .im(.notFound, "ccdid: fabric \(fabric) has no client identity \(ccdid)")
        }
        guard !identity.certificateChain.isEmpty else {
            throw .im(.invalidInState, "ccdid: no certificate provisioned for client identity \(ccdid) yet")
        }
        let pem: (ca: String, chain: String, key: String)
        do {
            let chain = try identity.certificateChain.map { try Certificate(derEncoded: Array($0)).serializeAsPEM().pemString }
            pem = (try Certificate(derEncoded: Array(root)).serializeAsPEM().pemString,
                   chain.joined(separator: "\n"),
                   try P256.Signing.PrivateKey(rawRepresentation: identity.privateKey).pemRepresentation)
        } catch {
            throw .im(.failure, "stored credentials of caid \(caid) / ccdid \(ccdid) are unreadable: \(error)")
        }
        return try await addTLSEndpoint(
            TLSEndpointRequest(hostname: request.hostname, port: request.port, caCertificate: pem.ca,
                               clientCertificate: pem.chain, clientKey: pem.key),
            fabric: fabric)
    }

    private func credentialCall<T: Sendable>(_ body: @escaping @Sendable (TLSCredentialStore) throws -> T)
        async throws(TransportCommandError) -> T
    {
        let credentials = self.credentials
        do {
            return try await offPool { try body(credentials) }
        } catch {
            throw .im(.failure, "TLS credential storage: \(error)")
        }
    }
}
