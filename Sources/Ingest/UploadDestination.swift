import Crypto
import Foundation

/// Where the objects of a recording go, as it was when the recording was made: the ingest URL, the fabric, and the
/// TLS material (trust roots and client chain, and a *reference* to the private key, never the key itself).
///
/// Why a value of its own: objects wait in the spool, sometimes for hours, while a controller may modify the
/// connection (another URL, another TLS endpoint), deallocate it or replace its TLS endpoint. Each object must still
/// reach the endpoint its recording was made for, with the certificates it was made with — delivering it anywhere else
/// is a privacy fault. So the spool keys objects by destination, not by connection, and keeps each destination's
/// description until its last object is delivered or given up; a restart rebuilds the upload from that description.
///
/// Two descriptions with the same contents are the same destination (``key`` is derived from them): a Modify that
/// changes only trigger options keeps uploading in the same lane, and a connection moved back to an ingest it used
/// before finds its earlier objects there, still in order.
public struct UploadDestination: Sendable, Hashable {
    /// What the destination belongs to, for reports and grouping: `camera/connection` in `pushav serve`.
    public var owner: String
    /// The CMAF publishing point URL; it ends with `/`.
    public var url: String
    /// The Matter fabric of the connection it was recorded for (nil outside Matter).
    public var fabric: UInt8?
    /// Trust roots for the ingest's certificate (PEM or DER); nil trusts the system roots.
    public var trustedCertificates: [UInt8]?
    /// The client certificate chain presented (PEM blocks, or one DER certificate); empty for none.
    public var certificateChain: [UInt8]
    /// Names the private key in the owner-only credential store (its SHA-256 there); nil without a client certificate.
    public var privateKeyReference: String?
    /// The spool's label for this destination's objects: `owner@digest`.
    public let key: String

    public init(owner: String, url: String, fabric: UInt8?, trustedCertificates: [UInt8]?, certificateChain: [UInt8],
                privateKeyReference: String?, key: String? = nil) {
        self.owner = owner
        self.url = url.hasSuffix("/") ? url : url + "/"
        self.fabric = fabric
        self.trustedCertificates = trustedCertificates
        self.certificateChain = certificateChain
        self.privateKeyReference = privateKeyReference
        self.key = key ?? Self.key(owner: owner, url: self.url, fabric: fabric, trusted: trustedCertificates,
                                   chain: certificateChain, privateKeyReference: privateKeyReference)
    }

    /// `owner@` and the first 12 hex digits of the SHA-256 over every field that decides where and how objects go.
    /// SHA-256 rather than a fast hash: two destinations sharing a key would share a lane, and a URL is the
    /// controller's input.
    static func key(owner: String, url: String, fabric: UInt8?, trusted: [UInt8]?, chain: [UInt8],
                    privateKeyReference: String?) -> String {
        var hasher = SHA256()
        func field(_ bytes: [UInt8]) {
            withUnsafeBytes(of: UInt64(bytes.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
        }
        field(Array(url.utf8))
        field(fabric.map { [1, $0] } ?? [0])
        field(trusted.map { [1] + $0 } ?? [0])
        field(chain)
        field(Array((privateKeyReference ?? "").utf8))
        let digest = hasher.finalize().prefix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return "\(owner)@\(digest)"
    }

    /// The owner part of a spool label (`cam1/3` of `cam1/3@0a1b2c3d4e5f`); a label without `@` (a spool written
    /// before destinations, or a CLI upload) is its own owner.
    public static func owner(ofKey key: String) -> String {
        key.lastIndex(of: "@").map { String(key[..<$0]) } ?? key
    }

    /// Metric labels of a spool label: `connection` (the owner) and, for a destination, `destination` (its digest):
    /// dashboards keep grouping by connection, and a connection modified while its ingest was down shows its two
    /// queues apart.
    public static func metricDimensions(ofKey key: String) -> [(String, String)] {
        guard let at = key.lastIndex(of: "@") else { return [("connection", key)] }
        return [("connection", String(key[..<at])), ("destination", String(key[key.index(after: at)...]))]
    }

    /// The upload endpoint, once the private key is found (`privateKey` empty without a client certificate).
    public func endpoint(privateKey: [UInt8]) -> UploadEndpoint {
        let tls: ClientTLSMaterial? = if trustedCertificates == nil && certificateChain.isEmpty {
            nil
        } else {
            ClientTLSMaterial(trustedCertificates: trustedCertificates, certificateChain: certificateChain,
                              privateKey: certificateChain.isEmpty ? [] : privateKey)
        }
        return UploadEndpoint(url: url, connection: key, tls: tls)
    }
}

/// A destination as the spool holds it: how much still waits for it, and since when it is retired (no connection
/// records for it any more; it only finishes what it holds).
public struct StoredDestination: Sendable, Hashable {
    public var destination: UploadDestination
    /// Objects not yet delivered or given up.
    public var pending: Int
    /// When it stopped being any connection's current destination; nil while one records for it.
    public var retiredAt: Date?
}
