import Domain

// TLS Client Management's commands on this endpoint: the rules are `TLSClientEndpoints`' (a value of its own, with
// its own persistence section); this only runs them through `updateRegistries` (stored, then the cameras told).
extension PushAVStreamTransportServer {
    public func setTLSEndpoint(_ endpoint: TLSEndpoint) throws(TransportCommandError) {
        try updateRegistries { $0.tls.set(endpoint) }
    }

    /// Stores `endpoint` under the lowest endpoint ID its fabric does not use yet, and returns that ID. Choosing and
    /// storing is one step of this actor, so two endpoints created at the same time never get the same ID (choosing
    /// from a list read earlier would let both pick it, and the second overwrite the first).
    public func addTLSEndpointUnderFreeID(_ endpoint: TLSEndpoint) throws(TransportCommandError) -> UInt16 {
        try updateRegistries { registries throws(TransportCommandError) in try registries.tls.addUnderFreeID(endpoint) }
    }

    /// Removes the endpoint unless a connection of this camera uses it: the check and the removal are one step of
    /// this actor, so an Allocate or Modify naming it cannot slip in between (it is refused, or the removal is).
    public func removeUnusedTLSEndpoint(fabricIndex: FabricIndex, endpointID: UInt16) throws(TransportCommandError) {
        if connections.values.contains(where: { $0.fabricIndex == fabricIndex && $0.transportOptions.tlsEndpointID == endpointID }) {
            throw .im(.invalidInState, "endpointID: TLS endpoint \(endpointID) is used by a connection")
        }
        try removeTLSEndpoint(fabricIndex: fabricIndex, endpointID: endpointID)
    }

    public func removeTLSEndpoint(fabricIndex: FabricIndex, endpointID: UInt16) throws(TransportCommandError) {
        try updateRegistries { $0.tls.remove(TLSEndpointKey(fabricIndex: fabricIndex, endpointID: endpointID)) }
    }
}
