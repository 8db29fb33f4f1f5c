import Domain

// The node's other clusters: each is a value with its own rules (`TLSClientEndpoints`, `ZoneManagement`,
// `CameraAVStreams`); these entry points only run a command on it through `updateRegistries`, which stores the result
// before it takes effect and tells the cameras. What a command needs from the Push AV Stream Transport side (the
// camera's capabilities, which transports name a zone, a fabric's connections) is passed in here.
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

    // MARK: - TLS Client Management

    public func setTLSEndpoint(_ endpoint: TLSEndpoint) throws(TransportCommandError) {
        try updateRegistries { $0.tls.set(endpoint) }
    }

    /// Stores `endpoint` under the lowest endpoint ID its fabric does not use yet, and returns that ID. Choosing and
    /// storing is one step of this actor, so two endpoints created at the same time never get the same ID (choosing
    /// from a list read earlier would let both pick it, and the second overwrite the first).
    public func addTLSEndpointUnderFreeID(_ endpoint: TLSEndpoint) throws(TransportCommandError) -> UInt16 {
        try updateRegistries { registries throws(TransportCommandError) in try registries.tls.addUnderFreeID(endpoint) }
    }

    public func removeTLSEndpoint(fabricIndex: FabricIndex, endpointID: UInt16) throws(TransportCommandError) {
        try updateRegistries { $0.tls.remove(TLSEndpointKey(fabricIndex: fabricIndex, endpointID: endpointID)) }
    }

    // MARK: - Zone Management

    private var perZoneSensitivity: Bool { capabilities.features.contains(.perZoneSensitivity) }

    /// The Zone Management attributes (PERZONESENS on both clusters or neither).
    public var zoneManagementAttributes: ZoneManagementAttributes {
        registries.zoneManagement.attributes(maxZones: capabilities.maxZones, perZoneSensitivity: perZoneSensitivity)
    }

    /// The triggers the detector applies, sensitivities resolved.
    public var resolvedZoneTriggers: [ZoneTrigger] { registries.zoneManagement.resolvedTriggers }

    /// The camera's configured zones (`serve.yaml`); returns the user zones that gave way to them.
    @discardableResult
    public func setManufacturerZones(_ zones: [MotionZone]) throws(TransportCommandError) -> [MotionZone] {
        try updateRegistries { $0.zoneManagement.setManufacturerZones(zones) }
    }

    /// CreateOrUpdateTrigger. The running analysis follows at once.
    public func createOrUpdateTrigger(_ trigger: ZoneTriggerControlStruct) throws(TransportCommandError) {
        let perZone = perZoneSensitivity
        try updateRegistries { registries throws(TransportCommandError) in
            try registries.zoneManagement.createOrUpdateTrigger(trigger, perZoneSensitivity: perZone)
        }
    }

    /// RemoveTrigger. A zone triggered now stops (ZoneStopped, ActionStopped).
    public func removeTrigger(zoneID: UInt16) throws(TransportCommandError) {
        try updateRegistries { registries throws(TransportCommandError) in try registries.zoneManagement.removeTrigger(zoneID: zoneID) }
    }

    /// Writes the Sensitivity attribute. Triggers and transports without a sensitivity of their own follow it at once.
    public func setZoneSensitivity(_ value: UInt8) throws(TransportCommandError) {
        let perZone = perZoneSensitivity
        try updateRegistries { registries throws(TransportCommandError) in
            try registries.zoneManagement.setSensitivity(value, perZoneSensitivity: perZone)
        }
    }

    /// CreateTwoDCartesianZone: a user zone under the lowest free ZoneID.
    public func createTwoDCartesianZone(_ zone: TwoDCartesianZoneStruct) throws(TransportCommandError) -> UInt16 {
        let maxZones = capabilities.maxZones
        return try updateRegistries { registries throws(TransportCommandError) in
            try registries.zoneManagement.createTwoDCartesianZone(zone, maxZones: maxZones)
        }
    }

    /// UpdateTwoDCartesianZone. Transports naming the zone follow the new shape at once.
    public func updateTwoDCartesianZone(zoneID: UInt16, zone: TwoDCartesianZoneStruct) throws(TransportCommandError) {
        try updateRegistries { registries throws(TransportCommandError) in
            try registries.zoneManagement.updateTwoDCartesianZone(zoneID: zoneID, zone: zone)
        }
    }

    /// RemoveZone, refused while a transport of any fabric names the zone in its `motionZones`.
    public func removeZone(zoneID: UInt16) throws(TransportCommandError) {
        let naming = connections.values.filter { connection in
            connection.transportOptions.triggerOptions.motionZones?.value?.contains { $0.zone.value == zoneID } ?? false
        }.map(\.connectionID)
        try updateRegistries { registries throws(TransportCommandError) in
            try registries.zoneManagement.removeZone(zoneID: zoneID, namedByTransports: naming)
        }
    }

    /// A ZoneTriggered or ZoneStopped the camera's analysis produced: numbered and logged like every event of this
    /// endpoint. Zone events belong to no fabric (zones are the camera's), so every fabric reads them.
    public func emitZoneEvent(_ event: ZoneEvent) {
        switch event {
        case .triggered(let zone, _):
            emit(.zoneTriggered(ZoneTriggeredEvent(zone: zone)), fabric: CameraEvent.noFabric)
        case .stopped(let zone, let reason, _):
            emit(.zoneStopped(ZoneStoppedEvent(zone: zone, reason: reason)), fabric: CameraEvent.noFabric)
        }
    }

    // MARK: - Camera AV Stream Management

    public func setAllocatedVideoStream(_ stream: AllocatedVideoStream) throws(TransportCommandError) {
        try updateRegistries { $0.streams.video[stream.videoStreamID] = stream }
    }

    public func removeAllocatedVideoStream(_ videoStreamID: UInt16) throws(TransportCommandError) {
        try updateRegistries { $0.streams.video[videoStreamID] = nil }
    }

    public func setAllocatedAudioStream(_ stream: AllocatedAudioStream) throws(TransportCommandError) {
        try updateRegistries { $0.streams.audio[stream.audioStreamID] = stream }
    }

    public func removeAllocatedAudioStream(_ audioStreamID: UInt16) throws(TransportCommandError) {
        try updateRegistries { $0.streams.audio[audioStreamID] = nil }
    }

    /// Sets the privacy switches; the cameras end the recordings they now forbid (and refuse new ones).
    public func setPrivacyModes(_ modes: PrivacyModes) throws(TransportCommandError) {
        try updateRegistries { $0.streams.privacy = modes }
    }
}
