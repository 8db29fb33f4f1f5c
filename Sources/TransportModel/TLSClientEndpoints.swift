import Domain
import Foundation

/// A TLS Client Management endpoint provisioned by one fabric: where to connect and the material for mutual TLS.
public struct TLSEndpoint: Codable, Sendable, Hashable {
    public var fabricIndex: FabricIndex
    public var endpointID: UInt16
    public var hostname: String
    public var port: UInt16
    /// The root certificate (DER or PEM bytes) the server's chain must lead to (the endpoint's TLSCAID).
    public var caCertificate: Data
    /// The client certificate chain, leaf first (the endpoint's TLSCCDID).
    public var clientCertificateChain: [Data]
    /// The client certificate's private key.
    public var privateKey: Data

    public init(
        fabricIndex: FabricIndex, endpointID: UInt16, hostname: String, port: UInt16, caCertificate: Data,
        clientCertificateChain: [Data], privateKey: Data
    ) {
        self.fabricIndex = fabricIndex
        self.endpointID = endpointID
        self.hostname = hostname
        self.port = port
        self.caCertificate = caCertificate
        self.clientCertificateChain = clientCertificateChain
        self.privateKey = privateKey
    }
}

/// Identifies a TLS endpoint: endpoint IDs are per fabric.
extension TLSEndpoint {
    /// Its fabric and endpoint ID: how the registry and the stores find it.
    public var key: TLSEndpointKey { TLSEndpointKey(fabricIndex: fabricIndex, endpointID: endpointID) }
}

public struct TLSEndpointKey: Sendable, Hashable {
    public var fabricIndex: FabricIndex
    public var endpointID: UInt16

    public init(fabricIndex: FabricIndex, endpointID: UInt16) {
        self.fabricIndex = fabricIndex
        self.endpointID = endpointID
    }
}

/// The TLS Client Management cluster's endpoints, of every fabric: where each transport's uploads connect, and with
/// which certificates. A value the node holds beside the other clusters (see `ZoneManagement`).
public struct TLSClientEndpoints: Sendable, Hashable {
    public var endpoints: [TLSEndpointKey: TLSEndpoint]

    public init(_ endpoints: [TLSEndpoint] = []) {
        self.endpoints = Dictionary(endpoints.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// The TLS endpoint `connection` uploads through (its fabric's `tlsEndpointID`); nil when it is gone.
    public func endpoint(for connection: StoredConnection) -> TLSEndpoint? {
        endpoints[TLSEndpointKey(fabricIndex: connection.fabricIndex, endpointID: connection.transportOptions.tlsEndpointID)]
    }

    /// Stores `endpoint` under its own key, replacing one stored there before.
    public mutating func set(_ endpoint: TLSEndpoint) {
        endpoints[endpoint.key] = endpoint
    }

    /// Stores `endpoint` under the lowest endpoint ID its fabric does not use yet, and returns that ID.
    /// RESOURCE_EXHAUSTED when the fabric uses every ID.
    public mutating func addUnderFreeID(_ endpoint: TLSEndpoint) throws(TransportCommandError) -> UInt16 {
        let used = Set(endpoints.keys.filter { $0.fabricIndex == endpoint.fabricIndex }.map(\.endpointID))
        guard let endpointID = (UInt16(1)...UInt16.max - 1).lowestFree(isUsed: used.contains) else {
            throw .im(.resourceExhausted, "no free TLS endpoint ID")
        }
        var stored = endpoint
        stored.endpointID = endpointID
        set(stored)
        return endpointID
    }

    public mutating func remove(_ key: TLSEndpointKey) {
        endpoints[key] = nil
    }

    /// A fabric left the node: its endpoints go with it.
    public mutating func removeFabric(_ fabric: FabricIndex) {
        endpoints = endpoints.filter { $0.key.fabricIndex != fabric }
    }
}
