import Domain

// The Zone Management cluster's structures, as the API carries them. The camera's zones are the same registry the
// Push AV Stream Transport cluster validates `motionZones` against (`ZoneManagement.zones`, one `MotionZone`
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
    public var use: UInt8 = ZoneManagement.motionUse
    /// 3…12 vertices, in order; the polygon closes itself.
    public var vertices: [TwoDCartesianVertexStruct]
    /// `#RRGGBB` or `#RRGGBBAA`.
    public var color: String?

    public init(
        name: String, use: UInt8 = ZoneManagement.motionUse, vertices: [TwoDCartesianVertexStruct], color: String? = nil
    ) {
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

    public init(
        zoneID: UInt16, initialDuration: UInt32, augmentationDuration: UInt32, maxDuration: UInt32,
        blindDuration: UInt32, sensitivity: UInt8? = nil
    ) {
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
    public var reason: UInt8 = 0

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

    public init(
        featureMap: UInt32, maxZones: UInt8, maxUserDefinedZones: UInt8, sensitivityMax: UInt8,
        sensitivity: UInt8? = nil, zones: [ZoneInformationStruct], triggers: [ZoneTriggerControlStruct]
    ) {
        self.featureMap = featureMap
        self.maxZones = maxZones
        self.maxUserDefinedZones = maxUserDefinedZones
        self.sensitivityMax = sensitivityMax
        self.sensitivity = sensitivity
        self.zones = zones
        self.triggers = triggers
    }
}
