import Domain

// The node's other clusters, each a value with its own rules and persistence section (`TLSClientEndpoints`,
// `ZoneManagement`, `CameraAVStreams`) and its commands in a file of its own (`+TLSClientManagement`,
// `+ZoneManagement`, `+CameraAVStreams`), run through `updateRegistries`, which stores the result before it takes
// effect and tells the cameras. They share this actor because their rules cross: an allocation validates against the
// zones, streams and TLS endpoints, and a zone a transport names cannot be removed. Here: what spans them all.
extension PushAVStreamTransportServer {
    /// What the commands validate against.
    public var currentRegistries: TransportRegistries { registries }

    /// Replaces all registries at once (service start-up configuration).
    public func setRegistries(_ newRegistries: TransportRegistries) throws(TransportCommandError) {
        try updateRegistries { $0 = newRegistries }
    }

    /// A fabric left the node: its connections are deallocated (recordings ended) and its TLS endpoints forgotten.
    public func removeFabric(_ fabric: FabricIndex) throws(TransportCommandError) {
        let owned = connections(of: fabric).map(\.connectionID)
        if !owned.isEmpty { try remove(owned, reason: .fabricRemoved) }
        try updateRegistries { $0.tls.removeFabric(fabric) }
    }
}
