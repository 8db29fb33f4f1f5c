import Crypto
import Foundation
import SwiftASN1
import TransportModel
import X509

// The TLS Certificate Management and TLS Client Management commands, as Matter's certification flow (TC-PAVSTI)
// provisions a camera: the controller installs the ingest's root certificate, asks the camera for a CSR (the key pair
// is made here and its private key never leaves), has it signed, installs the certificate, and names the endpoint that
// AllocatePushTransport's TLSEndpointID refers to. Octet strings travel as base64 in JSON. The released form
// (`ClientCSR` with `nonceSignature` over the raw nonce; `../shared`'s digest and the reference server agree) is the
// one implemented; the earlier draft's `TLSClientCSR`, which signed a TLV structure, is not answered.

extension SidecarEngine {
    /// MaxRootCertificates and MaxClientCertificates, per fabric (the cluster's minimum is 5 and 2).
    static let maxRootCertificates = 10
    static let maxClientCertificates = 10

    public func provisionRootCertificate(_ request: ProvisionRootCertificateRequest, fabric: FabricIndex)
        async throws(TransportCommandError) -> UInt16
    {
        do {
            _ = try Certificate(derEncoded: Array(request.certificate))
        } catch {
            throw .im(.constraintError, "certificate: not a DER X.509 certificate (\(error))")
        }
        let certificate = request.certificate
        if let caid = request.caid {
            let replaced = try await credentialCall { try $0.replaceRootCertificate(caid: caid, with: certificate, fabric: fabric) }
            guard replaced else { throw .im(.notFound, "caid: fabric \(fabric) has no root certificate \(caid)") }
            logger.info("root certificate replaced", metadata: ["fabric": "\(fabric)", "caid": "\(caid)"])
            return caid
        }
        let caid = try await credentialCall {
            try $0.addRootCertificate(certificate, fabric: fabric, limit: Self.maxRootCertificates)
        }
        guard let caid else {
            throw .im(.resourceExhausted, "fabric \(fabric) has \(Self.maxRootCertificates) root certificates, the most it may have")
        }
        logger.info("root certificate provisioned", metadata: ["fabric": "\(fabric)", "caid": "\(caid)"])
        return caid
    }

    public func removeRootCertificate(_ caid: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        let removed = try await credentialCall { try $0.removeRootCertificate(caid: caid, fabric: fabric) }
        guard removed else { throw .im(.notFound, "caid: fabric \(fabric) has no root certificate \(caid)") }
    }

    /// `FindRootCertificate`: NOT_FOUND for an unknown CAID, or when the fabric has none (the answer lists at least one).
    public func findRootCertificates(_ caid: UInt16?, fabric: FabricIndex)
        async throws(TransportCommandError) -> [RootCertificateDetails]
    {
        let all = try await credentialCall { try $0.rootCertificates(fabric: fabric) }
        return try Self.found(all.filter { caid == nil || $0.caid == caid }, asked: caid, field: "caid",
                              noun: ("root certificate", "root certificates"), fabric: fabric)
            .map { RootCertificateDetails(caid: $0.caid, certificate: $0.certificate) }
    }

    /// `LookupRootCertificate`: the CAID whose certificate's SHA-256 is `fingerprint`.
    public func lookupRootCertificate(fingerprint: Data, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        try Self.checkFingerprint(fingerprint)
        let all = try await credentialCall { try $0.rootCertificates(fabric: fabric) }
        guard let match = all.first(where: { Data(SHA256.hash(data: $0.certificate)) == fingerprint }) else {
            throw .im(.notFound, "fingerprint: fabric \(fabric) has no root certificate of that fingerprint")
        }
        return match.caid
    }

    public func clientCSR(_ request: ClientCSRRequest, fabric: FabricIndex)
        async throws(TransportCommandError) -> ClientCSRResponse
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
        let ccdid: UInt16
        if let existing = request.ccdid {
            let replaced = try await credentialCall { try $0.replaceKey(ccdid: existing, privateKey: key, csr: csr, fabric: fabric) }
            guard replaced else { throw .im(.notFound, "ccdid: fabric \(fabric) has no client identity \(existing)") }
            ccdid = existing
            logger.info("client key pair replaced; CSR answered", metadata: ["fabric": "\(fabric)", "ccdid": "\(ccdid)"])
        } else {
            let added = try await credentialCall {
                try $0.addClientIdentity(privateKey: key, csr: csr, fabric: fabric, limit: Self.maxClientCertificates)
            }
            guard let added else {
                throw .im(.resourceExhausted, "fabric \(fabric) has \(Self.maxClientCertificates) client identities, the most it may have")
            }
            ccdid = added
            logger.info("client key pair made; CSR answered", metadata: ["fabric": "\(fabric)", "ccdid": "\(ccdid)"])
        }
        return ClientCSRResponse(ccdid: ccdid, csr: csr, nonceSignature: Data(made.nonceSignature))
    }

    public func provisionClientCertificate(_ request: ProvisionClientCertificateRequest, fabric: FabricIndex)
        async throws(TransportCommandError)
    {
        let ccdid = request.ccdid
        guard let identity = try await credentialCall({ try $0.clientIdentity(ccdid: ccdid, fabric: fabric) }) else {
            throw .im(.notFound, "ccdid: fabric \(fabric) has no client identity \(ccdid)")
        }
        let chain = [request.clientCertificate] + request.intermediateCertificates
        let leaf: Certificate
        do {
            leaf = try Certificate(derEncoded: Array(request.clientCertificate))
            for intermediate in request.intermediateCertificates { _ = try Certificate(derEncoded: Array(intermediate)) }
        } catch {
            throw .im(.constraintError, "clientCertificate, intermediateCertificates: not a DER X.509 certificate (\(error))")
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

    /// `FindClientCertificate`: NOT_FOUND for an unknown CCDID, or when the fabric has none.
    public func findClientCertificates(_ ccdid: UInt16?, fabric: FabricIndex)
        async throws(TransportCommandError) -> [ClientCertificateDetails]
    {
        let all = try await credentialCall { try $0.clientIdentities(fabric: fabric) }
        return try Self.found(all.filter { ccdid == nil || $0.ccdid == ccdid }, asked: ccdid, field: "ccdid",
                              noun: ("client identity", "client identities"), fabric: fabric)
            .map(Self.details)
    }

    /// `LookupClientCertificate`: the CCDID whose provisioned certificate's SHA-256 is `fingerprint`.
    public func lookupClientCertificate(fingerprint: Data, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        try Self.checkFingerprint(fingerprint)
        let all = try await credentialCall { try $0.clientIdentities(fabric: fabric) }
        guard let match = all.first(where: { $0.certificateChain.first.map { Data(SHA256.hash(data: $0)) } == fingerprint }) else {
            throw .im(.notFound, "fingerprint: fabric \(fabric) has no client certificate of that fingerprint")
        }
        return match.ccdid
    }

    /// `RemoveClientCertificate`: the key pair and its certificates are deleted. An endpoint provisioned from them keeps
    /// its own copy until it is removed.
    public func removeClientCertificate(_ ccdid: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        let removed = try await credentialCall { try $0.removeClientIdentity(ccdid: ccdid, fabric: fabric) }
        guard removed else { throw .im(.notFound, "ccdid: fabric \(fabric) has no client identity \(ccdid)") }
        logger.info("client identity removed", metadata: ["fabric": "\(fabric)", "ccdid": "\(ccdid)"])
    }

    /// The attributes as `fabric` reads them (fabric-sensitive: only its own entries; IDs without the certificates).
    public func tlsCertificateAttributes(fabric: FabricIndex) async throws(TransportCommandError) -> TLSCertificateAttributes {
        let (roots, clients) = try await credentialCall { (try $0.rootCertificates(fabric: fabric), try $0.clientIdentities(fabric: fabric)) }
        return TLSCertificateAttributes(
            maxRootCertificates: Self.maxRootCertificates,
            provisionedRootCertificates: roots.map { RootCertificateDetails(caid: $0.caid, certificate: nil) },
            maxClientCertificates: Self.maxClientCertificates,
            provisionedClientCertificates: clients.map {
                ClientCertificateDetails(ccdid: $0.ccdid, clientCertificate: nil, intermediateCertificates: nil)
            })
    }

    private static func details(_ identity: TLSCredentialStore.ClientIdentity) -> ClientCertificateDetails {
        ClientCertificateDetails(ccdid: identity.ccdid, clientCertificate: identity.certificateChain.first,
                                 intermediateCertificates: identity.certificateChain.isEmpty ? nil : Array(identity.certificateChain.dropFirst()))
    }

    /// The Find commands' one rule: what was asked for (one ID, or every one of the fabric's), and NOT_FOUND naming
    /// the field when that is nothing.
    private static func found<T>(
        _ matches: [T], asked id: UInt16?, field: String, noun: (one: String, all: String), fabric: FabricIndex
    ) throws(TransportCommandError) -> [T] {
        guard matches.isEmpty else { return matches }
        throw .im(.notFound, id.map { "\(field): fabric \(fabric) has no \(noun.one) \($0)" } ?? "fabric \(fabric) has no \(noun.all)")
    }

    private static func checkFingerprint(_ fingerprint: Data) throws(TransportCommandError) {
        guard fingerprint.count == SHA256.byteCount else {
            throw .im(.constraintError, "fingerprint: the SHA-256 of the certificate's DER, 32 bytes; got \(fingerprint.count)")
        }
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
