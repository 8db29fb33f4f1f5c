import Domain


// The Zone Management cluster's structures, as the API carries them. The camera's zones are the same registry the
// Push AV Stream Transport cluster validates `motionZones` against (`TransportRegistries.zones`, one `MotionZone`
// each): these types are only its wire form.

/// TwoDCartesianVertexStruct: a vertex in the video's pixel coordinates.
public struct TwoDCartesianVertexStruct: Codable, Sendable, Hashable {
    public var x: UInt16
    public var y: UInt16
    public init(x: UInt16, y: UInt16) {
        self.x = x
        self.y = y
    }
}

/// TwoDCartesianZoneStruct.
public struct TwoDCartesianZoneStruct: Codable, Sendable, Hashable {
    /// At most 32 bytes (Matter 1.5; the 1.4 draft said 16).
    public var name: String
    /// ZoneUseEnum: 0 Motion, 1 Privacy, 2 Focus. This camera's zones are motion zones.
    public var use: UInt8
    /// 3…12 vertices, in order; the polygon closes itself.
    public var vertices: [TwoDCartesianVertexStruct]
    /// `#RRGGBB` or `#RRGGBBAA`.
    public var color: String?

    public init(name: String, use: UInt8 = ZoneManagement.motionUse, vertices: [TwoDCartesianVertexStruct], color: String? = nil) {
        self.name = name
        self.use = use
        self.vertices = vertices
        self.color = color
    }
}

/// ZoneInformationStruct: one entry of the Zones attribute.
public struct ZoneInformationStruct: Codable, Sendable, Hashable {
    public var zoneID: UInt16
    /// ZoneTypeEnum: 0 TwoDCARTZone (the only type).
    public var zoneType: UInt8
    /// ZoneSourceEnum: 0 Mfg (serve.yaml), 1 User (CreateTwoDCartesianZone).
    public var zoneSource: UInt8
    public var twoDCartesianZone: TwoDCartesianZoneStruct

    public init(_ zone: MotionZone) {
        zoneID = zone.id
        zoneType = 0
        zoneSource = zone.source.rawValue
        twoDCartesianZone = TwoDCartesianZoneStruct(
            name: zone.name, vertices: zone.polygon.map {
                TwoDCartesianVertexStruct(x: UInt16(clamping: Int($0.x.rounded())), y: UInt16(clamping: Int($0.y.rounded())))
            }, color: zone.color)
    }
}

/// ZoneTriggerControlStruct: when a zone counts as triggered (ZoneTriggered/ZoneStopped). The durations are
/// elapsed seconds and mean what a Motion transport's `motionTimeControl` means (one `ClipTimeline` runs both).
public struct ZoneTriggerControlStruct: Codable, Sendable, Hashable {
    public var zoneID: UInt16
    /// 1…65535.
    public var initialDuration: UInt32
    /// At most `initialDuration`.
    public var augmentationDuration: UInt32
    /// At least `initialDuration`.
    public var maxDuration: UInt32
    public var blindDuration: UInt32
    /// 1…SensitivityMax; present exactly when the cluster has PERZONESENS.
    public var sensitivity: UInt8?

    public init(zoneID: UInt16, initialDuration: UInt32, augmentationDuration: UInt32, maxDuration: UInt32,
                blindDuration: UInt32, sensitivity: UInt8? = nil) {
        self.zoneID = zoneID
        self.initialDuration = initialDuration
        self.augmentationDuration = augmentationDuration
        self.maxDuration = maxDuration
        self.blindDuration = blindDuration
        self.sensitivity = sensitivity
    }

    /// The durations as the timeline takes them.
    public var timeControl: ClipTimeControl {
        ClipTimeControl(initial: Int64(initialDuration), augmentation: Int64(augmentationDuration), max: Int64(maxDuration),
                        blind: Int64(blindDuration))
    }
}

/// The ZoneTriggered event: a zone with a trigger saw motion (it was not triggered, nor in its blind window).
public struct ZoneTriggeredEvent: Codable, Sendable, Hashable {
    public var zone: UInt16
    /// ZoneEventTriggeredReasonEnum: 0 Motion (the only reason).
    public var reason: UInt8

    public init(zone: UInt16, reason: UInt8 = 0) {
        self.zone = zone
        self.reason = reason
    }
}

/// The ZoneStopped event: a triggered zone stopped being triggered.
public struct ZoneStoppedEvent: Codable, Sendable, Hashable {
    public var zone: UInt16
    /// ZoneEventStoppedReasonEnum: 0 ActionStopped (motion stopped, the trigger went, or analysis ended), 1 Timeout
    /// (MaxDuration reached).
    public var reason: UInt8

    public init(zone: UInt16, reason: ZoneStopReason) {
        self.zone = zone
        self.reason = reason.rawValue
    }
}

/// The Zone Management attributes a controller reads.
public struct ZoneManagementAttributes: Codable, Sendable, Hashable {
    /// TWODCART (bit 0), PERZONESENS (bit 1, with the camera's `perZoneSensitivity`), USERDEFINED (bit 2).
    public var featureMap: UInt32
    public var maxZones: UInt8
    public var maxUserDefinedZones: UInt8
    /// The detector's sensitivity scale: 1…10, as a transport's motionSensitivity.
    public var sensitivityMax: UInt8
    /// The camera-wide sensitivity of zone triggers (and of Motion transports whose motionSensitivity is null);
    /// absent under PERZONESENS, where each trigger carries its own.
    public var sensitivity: UInt8?
    public var zones: [ZoneInformationStruct]
    public var triggers: [ZoneTriggerControlStruct]

    public init(featureMap: UInt32, maxZones: UInt8, maxUserDefinedZones: UInt8, sensitivityMax: UInt8, sensitivity: UInt8?,
                zones: [ZoneInformationStruct], triggers: [ZoneTriggerControlStruct]) {
        self.featureMap = featureMap
        self.maxZones = maxZones
        self.maxUserDefinedZones = maxUserDefinedZones
        self.sensitivityMax = sensitivityMax
        self.sensitivity = sensitivity
        self.zones = zones
        self.triggers = triggers
    }
}

/// The Zone Management rules that need no state.
public enum ZoneManagement {
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
