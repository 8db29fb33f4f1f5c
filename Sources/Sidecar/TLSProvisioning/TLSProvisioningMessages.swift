import Foundation
import TransportModel

// The request and response bodies of the TLS Certificate Management and TLS Client Management commands (see
// `TLSProvisioningCommands.swift`). Octet strings travel as base64 in JSON.

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

public struct ProvisionRootCertificateResponse: Codable, Sendable, Hashable {
    public var caid: UInt16
    public init(caid: UInt16) { self.caid = caid }
}

/// `RemoveRootCertificate`.
public struct RemoveRootCertificateRequest: Codable, Sendable, Hashable {
    public var caid: UInt16
    public init(caid: UInt16) { self.caid = caid }
}

/// `FindRootCertificate`: one CAID, or (null) every root certificate of the fabric.
public struct FindRootCertificateRequest: Codable, Sendable, Hashable {
    public var caid: UInt16?
    public init(caid: UInt16? = nil) { self.caid = caid }
}

/// `TLSCertStruct`: a root certificate and its CAID (the certificate is left out of the attribute's list).
public struct RootCertificateDetails: Codable, Sendable, Hashable {
    public var caid: UInt16
    public var certificate: Data?
    public init(caid: UInt16, certificate: Data?) {
        self.caid = caid
        self.certificate = certificate
    }
}

public struct FindRootCertificateResponse: Codable, Sendable, Hashable {
    public var certificateDetails: [RootCertificateDetails]
    public init(certificateDetails: [RootCertificateDetails]) { self.certificateDetails = certificateDetails }
}

/// `LookupRootCertificate` and `LookupClientCertificate`: the SHA-256 of a certificate's DER.
public struct LookupCertificateRequest: Codable, Sendable, Hashable {
    public var fingerprint: Data
    public init(fingerprint: Data) { self.fingerprint = fingerprint }
}

public struct LookupRootCertificateResponse: Codable, Sendable, Hashable {
    public var caid: UInt16
    public init(caid: UInt16) { self.caid = caid }
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

/// `ProvisionClientCertificate`: the certificate signed from the CCDID's CSR, DER, and any intermediates. Also read in
/// the earlier draft's shape, the two fields inside `clientCertificateDetails`.
public struct ProvisionClientCertificateRequest: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public var clientCertificate: Data
    public var intermediateCertificates: [Data]

    public init(ccdid: UInt16, clientCertificate: Data, intermediateCertificates: [Data] = []) {
        self.ccdid = ccdid
        self.clientCertificate = clientCertificate
        self.intermediateCertificates = intermediateCertificates
    }

    private enum CodingKeys: String, CodingKey { case ccdid, clientCertificate, intermediateCertificates, clientCertificateDetails }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        ccdid = try container.decode(UInt16.self, forKey: .ccdid)
        let fields = container.contains(.clientCertificateDetails) && !container.contains(.clientCertificate)
            ? try container.nestedContainer(keyedBy: CodingKeys.self, forKey: .clientCertificateDetails) : container
        clientCertificate = try fields.decode(Data.self, forKey: .clientCertificate)
        intermediateCertificates = try fields.decodeIfPresent([Data].self, forKey: .intermediateCertificates) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ccdid, forKey: .ccdid)
        try container.encode(clientCertificate, forKey: .clientCertificate)
        try container.encode(intermediateCertificates, forKey: .intermediateCertificates)
    }
}

/// `FindClientCertificate`: one CCDID, or (null) every client identity of the fabric.
public struct FindClientCertificateRequest: Codable, Sendable, Hashable {
    public var ccdid: UInt16?
    public init(ccdid: UInt16? = nil) { self.ccdid = ccdid }
}

/// `TLSClientCertificateDetailStruct`: a client identity's CCDID and, once provisioned, its certificate chain (never
/// its key). The certificates are left out of the attribute's list.
public struct ClientCertificateDetails: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public var clientCertificate: Data?
    public var intermediateCertificates: [Data]?
    public init(ccdid: UInt16, clientCertificate: Data?, intermediateCertificates: [Data]?) {
        self.ccdid = ccdid
        self.clientCertificate = clientCertificate
        self.intermediateCertificates = intermediateCertificates
    }
}

public struct FindClientCertificateResponse: Codable, Sendable, Hashable {
    public var certificateDetails: [ClientCertificateDetails]
    public init(certificateDetails: [ClientCertificateDetails]) { self.certificateDetails = certificateDetails }
}

public struct LookupClientCertificateResponse: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public init(ccdid: UInt16) { self.ccdid = ccdid }
}

/// `RemoveClientCertificate`.
public struct RemoveClientCertificateRequest: Codable, Sendable, Hashable {
    public var ccdid: UInt16
    public init(ccdid: UInt16) { self.ccdid = ccdid }
}

/// The TLS Certificate Management cluster's attributes, as the requesting fabric reads them.
public struct TLSCertificateAttributes: Codable, Sendable, Hashable {
    public var maxRootCertificates: Int
    public var provisionedRootCertificates: [RootCertificateDetails]
    public var maxClientCertificates: Int
    public var provisionedClientCertificates: [ClientCertificateDetails]
    public init(maxRootCertificates: Int, provisionedRootCertificates: [RootCertificateDetails], maxClientCertificates: Int,
                provisionedClientCertificates: [ClientCertificateDetails]) {
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
