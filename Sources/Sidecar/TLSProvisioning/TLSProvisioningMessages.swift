import Foundation
import TransportModel

// What the TLS Certificate Management and TLS Client Management commands take and give (see
// `TLSProvisioningCommands.swift`) where it is more than one number. The HTTP API's bodies are generated from its
// document and converted to these in `SidecarOperations+TLSCertificates`.

/// `ProvisionRootCertificate`: the ingest server's root CA certificate, DER. `caid` null provisions a new one; a CAID
/// replaces that one's certificate (rotation).
public struct ProvisionRootCertificateRequest: Codable, Sendable, Hashable {
    public var certificate: Data
    public var caid: UInt16?

    public init(certificate: Data, caid: UInt16? = nil) {
        self.certificate = certificate
        self.caid = caid
    }
}

/// `TLSCertStruct`: a root certificate and its CAID (the certificate is left out of the attribute's list).
public struct RootCertificateDetails: Codable, Sendable, Hashable {
    public var caid: UInt16
    public var certificate: Data?

    public init(caid: UInt16, certificate: Data? = nil) {
        self.caid = caid
        self.certificate = certificate
    }
}

/// `ClientCSR`: 32 random bytes the answer signs; `ccdid` null makes a new key pair, a CCDID gives that one a new key
/// pair (rotation).
public struct ClientCSRRequest: Codable, Sendable, Hashable {
    public var nonce: Data
    public var ccdid: UInt16?

    public init(nonce: Data, ccdid: UInt16? = nil) {
        self.nonce = nonce
        self.ccdid = ccdid
    }
}

/// The key pair's CCDID, its CSR (DER PKCS #10, P-256, ecdsa-with-SHA256) and `nonceSignature`: the key's ECDSA
/// P-256/SHA-256 signature (raw r‖s) over the request's 32 nonce bytes exactly as received.
public struct ClientCSRResponse: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public var csr: Data
    public var nonceSignature: Data

    public init(ccdid: UInt16, csr: Data, nonceSignature: Data) {
        self.ccdid = ccdid
        self.csr = csr
        self.nonceSignature = nonceSignature
    }
}

/// `ProvisionClientCertificate`: the certificate signed from the CCDID's CSR, DER, and any intermediates. (The HTTP API
/// also reads the earlier draft's body, where the two certificate fields are inside `clientCertificateDetails`.)
public struct ProvisionClientCertificateRequest: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public var clientCertificate: Data
    public var intermediateCertificates: [Data] = []

    public init(ccdid: UInt16, clientCertificate: Data, intermediateCertificates: [Data] = []) {
        self.ccdid = ccdid
        self.clientCertificate = clientCertificate
        self.intermediateCertificates = intermediateCertificates
    }
}

/// `TLSClientCertificateDetailStruct`: a client identity's CCDID and, once provisioned, its certificate chain (never
/// its key). The certificates are left out of the attribute's list.
public struct ClientCertificateDetails: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public var clientCertificate: Data?
    public var intermediateCertificates: [Data]?

    public init(ccdid: UInt16, clientCertificate: Data? = nil, intermediateCertificates: [Data]? = nil) {
        self.ccdid = ccdid
        self.clientCertificate = clientCertificate
        self.intermediateCertificates = intermediateCertificates
    }
}

/// The TLS Certificate Management cluster's attributes, as the requesting fabric reads them.
public struct TLSCertificateAttributes: Codable, Sendable, Hashable {
    public var maxRootCertificates: Int
    public var provisionedRootCertificates: [RootCertificateDetails]
    public var maxClientCertificates: Int
    public var provisionedClientCertificates: [ClientCertificateDetails]

    public init(
        maxRootCertificates: Int, provisionedRootCertificates: [RootCertificateDetails], maxClientCertificates: Int,
        provisionedClientCertificates: [ClientCertificateDetails]
    ) {
        self.maxRootCertificates = maxRootCertificates
        self.provisionedRootCertificates = provisionedRootCertificates
        self.maxClientCertificates = maxClientCertificates
        self.provisionedClientCertificates = provisionedClientCertificates
    }
}

/// `ProvisionEndpoint`: where the ingest is, the root certificate its chain must reach, the client identity to present.
public struct ProvisionEndpointRequest: Codable, Sendable, Hashable {
    public var hostname: String
    public var port: UInt16
    public var caid: UInt16
    /// Push AV uploads use mutual TLS, so this is required here although the cluster lets it be null.
    public var ccdid: UInt16?

    public init(hostname: String, port: UInt16, caid: UInt16, ccdid: UInt16? = nil) {
        self.hostname = hostname
        self.port = port
        self.caid = caid
        self.ccdid = ccdid
    }
}
