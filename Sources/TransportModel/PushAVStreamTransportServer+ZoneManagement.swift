import Domain

// Zone Management's commands and events on this endpoint: the rules are `ZoneManagement`'s (a value of its own, with
// its own persistence section); this passes in what they need from the camera (MaxZones, PERZONESENS, which
// transports name a zone) and runs them through `updateRegistries`.
extension PushAVStreamTransportServer {
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
}
