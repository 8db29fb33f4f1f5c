import Motion

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
    /// At most 16 bytes.
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

/// The Zone Management attributes a controller reads.
public struct ZoneManagementAttributes: Codable, Sendable, Hashable {
    /// TWODCART (bit 0) and USERDEFINED (bit 1): 2D Cartesian zones, which controllers may create.
    public var featureMap: UInt32
    public var maxZones: UInt8
    public var maxUserDefinedZones: UInt8
    /// The detector's sensitivity scale: 1…10, as a transport's motionSensitivity.
    public var sensitivityMax: UInt8
    public var zones: [ZoneInformationStruct]

    public init(featureMap: UInt32, maxZones: UInt8, maxUserDefinedZones: UInt8, sensitivityMax: UInt8, zones: [ZoneInformationStruct]) {
        self.featureMap = featureMap
        self.maxZones = maxZones
        self.maxUserDefinedZones = maxUserDefinedZones
        self.sensitivityMax = sensitivityMax
        self.zones = zones
    }
}

/// The Zone Management rules that need no state.
public enum ZoneManagement {
    public static let motionUse: UInt8 = 0
    /// TWODCART | USERDEFINED.
    public static let featureMap: UInt32 = 0b11

    /// CONSTRAINT_ERROR for what no camera state could make valid: a name over 16 bytes, a use other than Motion
    /// (the detector has no privacy mask or focus control), fewer than 3 or more than 12 vertices, a colour that is not
    /// `#RRGGBB` or `#RRGGBBAA`.
    public static func validate(_ zone: TwoDCartesianZoneStruct) throws(TransportCommandError) {
        guard zone.name.utf8.count <= 16 else { throw .im(.constraintError, "zone.name: at most 16 bytes") }
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

    /// The registry's form of a controller's zone.
    public static func motionZone(_ id: ZoneID, _ zone: TwoDCartesianZoneStruct) -> MotionZone {
        MotionZone(id: id, name: zone.name, polygon: zone.vertices.map { ZonePoint(x: Double($0.x), y: Double($0.y)) },
                   source: .user, color: zone.color)
    }
}
