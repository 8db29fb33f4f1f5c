import Domain

/// The Zone Management cluster of the camera's endpoint: its zones (the camera's own from `serve.yaml` and the
/// controllers' user zones), the zone triggers and the Sensitivity attribute, with the commands that change them.
///
/// A value, not an actor: the node (`PushAVStreamTransportServer`) holds it with the other clusters and runs every
/// command on a copy, persisting the copy before it replaces the original, so a failed write changes nothing. What
/// the command needs from outside this cluster comes in as an argument (MaxZones, PERZONESENS, which transports name
/// a zone), so the rules here are tested as tables without a node.
public struct ZoneManagement: Sendable, Hashable {
    /// The Zones attribute, by ZoneID.
    public var zones: [ZoneID: MotionZone]
    /// The Triggers attribute, by zone.
    public var triggers: [ZoneID: ZoneTriggerControlStruct]
    /// The Sensitivity attribute (ignored under PERZONESENS).
    public var sensitivity: UInt8

    public init(zones: [MotionZone] = [], triggers: [ZoneTriggerControlStruct] = [],
                sensitivity: UInt8 = ZoneManagement.defaultSensitivity) {
        self.zones = Dictionary(zones.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        self.triggers = Dictionary(triggers.map { ($0.zoneID, $0) }, uniquingKeysWith: { _, last in last })
        self.sensitivity = sensitivity
    }

    /// The zones by ID: the order the detector and the Zones attribute list them in.
    public var sortedZones: [MotionZone] { zones.values.sorted { $0.id < $1.id } }
    /// The triggers by zone ID, as the Triggers attribute lists them.
    public var sortedTriggers: [ZoneTriggerControlStruct] { triggers.values.sorted { $0.zoneID < $1.zoneID } }

    /// The attributes a controller reads: FeatureMap, MaxZones (what a transport may name, and how many zones the
    /// camera holds), MaxUserDefinedZones, the zones, the triggers and the Sensitivity (absent under PERZONESENS).
    public func attributes(maxZones: UInt8, perZoneSensitivity: Bool) -> ZoneManagementAttributes {
        ZoneManagementAttributes(
            featureMap: Self.featureMap(perZoneSensitivity: perZoneSensitivity), maxZones: maxZones,
            maxUserDefinedZones: maxZones, sensitivityMax: Self.sensitivityMax,
            sensitivity: perZoneSensitivity ? nil : sensitivity,
            zones: sortedZones.map(ZoneInformationStruct.init), triggers: sortedTriggers)
    }

    /// The triggers the detector applies, each with its sensitivity resolved (its own under PERZONESENS, else the
    /// Sensitivity attribute).
    public var resolvedTriggers: [ZoneTrigger] {
        sortedTriggers.map { trigger in
            ZoneTrigger(zone: trigger.zoneID, timeControl: trigger.timeControl,
                        sensitivity: Int(trigger.sensitivity ?? sensitivity))
        }
    }

    // MARK: - Commands

    /// CreateTwoDCartesianZone: a user zone under the lowest free ZoneID. RESOURCE_EXHAUSTED when the camera holds
    /// `maxZones` zones; ALREADY_EXISTS when a zone with the same vertices exists.
    public mutating func createTwoDCartesianZone(_ zone: TwoDCartesianZoneStruct, maxZones: UInt8) throws(TransportCommandError) -> ZoneID {
        try Self.validate(zone)
        var created = Self.motionZone(0, zone)
        guard zones.count < Int(maxZones) else {
            throw .im(.resourceExhausted, "zone: the camera holds MaxZones (\(maxZones)) zones")
        }
        if let same = zones.values.first(where: { $0.polygon == created.polygon }) {
            throw .im(.alreadyExists, "zone.vertices: zone \(same.id) has the same vertices")
        }
        guard let zoneID = (ZoneID(1)...ZoneID.max - 1).lowestFree(isUsed: { zones[$0] != nil }) else {
            throw .im(.resourceExhausted, "zone: no free ZoneID")
        }
        created.id = zoneID
        zones[zoneID] = created
        return zoneID
    }

    /// UpdateTwoDCartesianZone: NOT_FOUND for an unknown zone; a manufacturer zone (serve.yaml) is not the
    /// controller's to change: CONSTRAINT_ERROR. Transports naming it follow the new shape at once.
    public mutating func updateTwoDCartesianZone(zoneID: ZoneID, zone: TwoDCartesianZoneStruct) throws(TransportCommandError) {
        try Self.validate(zone)
        try userZone(zoneID)
        var updated = Self.motionZone(zoneID, zone)
        updated.sensitivity = zones[zoneID]?.sensitivity
        if let same = zones.values.first(where: { $0.id != zoneID && $0.polygon == updated.polygon }) {
            throw .im(.alreadyExists, "zone.vertices: zone \(same.id) has the same vertices")
        }
        zones[zoneID] = updated
    }

    /// RemoveZone: NOT_FOUND for an unknown zone, CONSTRAINT_ERROR for a manufacturer zone, INVALID_IN_STATE while
    /// a transport's `motionZones` names it (`namedByTransports`: removing it would silently widen that transport to
    /// other motion) or a trigger is set on it (RemoveTrigger first, as the reference server requires).
    public mutating func removeZone(zoneID: ZoneID, namedByTransports naming: [UInt16]) throws(TransportCommandError) {
        try userZone(zoneID)
        guard triggers[zoneID] == nil else {
            throw .im(.invalidInState, "zoneID: zone \(zoneID) has a trigger; remove it first (removeTrigger)")
        }
        guard naming.isEmpty else {
            throw .im(.invalidInState, "zoneID: zone \(zoneID) is named by the motionZones of transport \(naming.sorted().map(String.init).joined(separator: ", "))")
        }
        zones[zoneID] = nil
    }

    /// CreateOrUpdateTrigger: NOT_FOUND for a zone the camera does not hold; the durations and sensitivity as
    /// `validate(_:perZoneSensitivity:)` says.
    public mutating func createOrUpdateTrigger(_ trigger: ZoneTriggerControlStruct, perZoneSensitivity: Bool) throws(TransportCommandError) {
        try Self.validate(trigger, perZoneSensitivity: perZoneSensitivity)
        guard zones[trigger.zoneID] != nil else {
            throw .im(.notFound, "trigger.zoneID: no zone \(trigger.zoneID)")
        }
        triggers[trigger.zoneID] = trigger
    }

    /// RemoveTrigger: NOT_FOUND when the zone has none.
    public mutating func removeTrigger(zoneID: ZoneID) throws(TransportCommandError) {
        guard triggers[zoneID] != nil else {
            throw .im(.notFound, "zoneID: zone \(zoneID) has no trigger")
        }
        triggers[zoneID] = nil
    }

    /// Writes the Sensitivity attribute: CONSTRAINT_ERROR outside 1…SensitivityMax; UNSUPPORTED_ATTRIBUTE under
    /// PERZONESENS (the attribute does not exist there).
    public mutating func setSensitivity(_ value: UInt8, perZoneSensitivity: Bool) throws(TransportCommandError) {
        guard !perZoneSensitivity else {
            throw .im(.unsupportedAttribute, "sensitivity: this camera sets sensitivity per zone (PERZONESENS)")
        }
        guard (1...Self.sensitivityMax).contains(value) else {
            throw .im(.constraintError, "sensitivity: 1…\(Self.sensitivityMax), got \(value)")
        }
        sensitivity = value
    }

    /// The camera's configured zones (`serve.yaml`): they replace every manufacturer zone stored before (one the
    /// configuration no longer lists goes, with its trigger), and a user zone with the same ID gives way to the
    /// configured one. Returns the user zones that gave way.
    public mutating func setManufacturerZones(_ configured: [MotionZone]) -> [MotionZone] {
        let replaced = zones.values.filter { zone in zone.source == .user && configured.contains { $0.id == zone.id } }
        zones = zones.filter { $0.value.source == .user }
        for var zone in configured {
            zone.source = .manufacturer
            zones[zone.id] = zone
        }
        triggers = triggers.filter { zones[$0.key] != nil }
        return replaced.sorted { $0.id < $1.id }
    }

    private func userZone(_ zoneID: ZoneID) throws(TransportCommandError) {
        guard let zone = zones[zoneID] else { throw .im(.notFound, "zoneID: no zone \(zoneID)") }
        guard zone.source == .user else {
            throw .im(.constraintError, "zoneID: zone \(zoneID) is the camera's own (serve.yaml), not a user zone")
        }
    }
}

// MARK: - Rules that need no state

extension ZoneManagement {
    public static let motionUse: UInt8 = 0
    /// TWODCART (bit 0) | USERDEFINED (bit 2); PERZONESENS is bit 1.
    public static func featureMap(perZoneSensitivity: Bool) -> UInt32 { 0b101 | (perZoneSensitivity ? 0b10 : 0) }
    /// The top of the Sensitivity scale (SensitivityMax): the detector's 1…10.
    public static let sensitivityMax: UInt8 = 10
    /// The Sensitivity attribute of a new camera: 10, what a transport without a motionSensitivity used before this
    /// cluster existed (the digest's "else 10"), so adding the cluster changed no running transport.
    public static let defaultSensitivity: UInt8 = 10

    /// CONSTRAINT_ERROR for what no camera state could make valid: a name over 16 bytes, a use other than Motion
    /// (the detector has no privacy mask or focus control), fewer than 3 or more than 12 vertices, a colour that is not
    /// `#RRGGBB` or `#RRGGBBAA`.
    public static func validate(_ zone: TwoDCartesianZoneStruct) throws(TransportCommandError) {
        guard zone.name.utf8.count <= 32 else { throw .im(.constraintError, "zone.name: at most 32 bytes") }
        guard zone.use == motionUse else {
            throw .im(.constraintError, "zone.use: this camera's zones are Motion zones (0); got \(zone.use)")
        }
        guard (3...12).contains(zone.vertices.count) else {
            throw .im(.constraintError, "zone.vertices: 3…12 vertices, got \(zone.vertices.count)")
        }
        if let color = zone.color {
            let hex = color.dropFirst()
            guard color.first == "#", hex.count == 6 || hex.count == 8, hex.allSatisfy(\.isHexDigit) else {
                throw .im(.constraintError, "zone.color: #RRGGBB or #RRGGBBAA, got \"\(color)\"")
            }
        }
    }

    /// CONSTRAINT_ERROR for durations out of range (InitialDuration 1…65535, AugmentationDuration ≤ InitialDuration ≤
    /// MaxDuration) or a sensitivity outside 1…SensitivityMax; INVALID_COMMAND for a sensitivity the feature map
    /// forbids (without PERZONESENS the Sensitivity attribute applies) or leaves out (with it).
    public static func validate(_ trigger: ZoneTriggerControlStruct, perZoneSensitivity: Bool) throws(TransportCommandError) {
        guard (1...65535).contains(trigger.initialDuration) else {
            throw .im(.constraintError, "trigger.initialDuration: 1…65535 s, got \(trigger.initialDuration)")
        }
        guard trigger.augmentationDuration <= trigger.initialDuration else {
            throw .im(.constraintError, "trigger.augmentationDuration: at most initialDuration (\(trigger.initialDuration) s), got \(trigger.augmentationDuration)")
        }
        guard trigger.maxDuration >= trigger.initialDuration else {
            throw .im(.constraintError, "trigger.maxDuration: at least initialDuration (\(trigger.initialDuration) s), got \(trigger.maxDuration)")
        }
        switch (trigger.sensitivity, perZoneSensitivity) {
        case (nil, true):
            throw .im(.invalidCommand, "trigger.sensitivity: required with per-zone sensitivity (PERZONESENS)")
        case (.some, false):
            throw .im(.invalidCommand, "trigger.sensitivity: not allowed without per-zone sensitivity; write the Sensitivity attribute")
        case (let value?, true):
            guard (1...sensitivityMax).contains(value) else {
                throw .im(.constraintError, "trigger.sensitivity: 1…\(sensitivityMax), got \(value)")
            }
        case (nil, false):
            break
        }
    }

    /// The registry's form of a controller's zone.
    public static func motionZone(_ id: ZoneID, _ zone: TwoDCartesianZoneStruct) -> MotionZone {
        MotionZone(id: id, name: zone.name, polygon: zone.vertices.map { ZonePoint(x: Double($0.x), y: Double($0.y)) },
                   source: .user, color: zone.color)
    }
}
