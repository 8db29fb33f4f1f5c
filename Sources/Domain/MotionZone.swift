/// A Zone Management zone ID (Matter `ZoneID`, uint16).
public typealias ZoneID = UInt16

/// A point in the video's own pixel coordinates (what a TwoDCartesianZone vertex holds).
public struct ZonePoint: Codable, Sendable, Hashable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// A motion zone (a Zone Management TwoDCartesianZone): a polygon in the source video's pixel coordinates, with
/// an optional sensitivity of its own (PERZONESENS). Without one, the detector's sensitivity applies.
///
/// The one zone type: the detector rasterises it, the transport model's registry validates `motionZones` IDs
/// against it, and the store persists it.
public struct MotionZone: Codable, Sendable, Hashable {
    public var id: ZoneID
    public var name: String = ""
    /// Vertices in order; the polygon closes itself. Inside is decided by the even-odd rule.
    public var polygon: [ZonePoint]
    public var sensitivity: Int?
    /// Who made it (Zone Management ZoneSource): the camera's configuration (`serve.yaml`), or a controller's
    /// CreateTwoDCartesianZone. Only user zones may be changed or removed through the cluster.
    public var source: ZoneSource = .manufacturer
    /// The zone's display colour as a controller gave it (`#RRGGBB` or `#RRGGBBAA`); the detector ignores it.
    public var color: String?

    public init(
        id: ZoneID, name: String = "", polygon: [ZonePoint], sensitivity: Int? = nil,
        source: ZoneSource = .manufacturer, color: String? = nil
    ) {
        self.id = id
        self.name = name
        self.polygon = polygon
        self.sensitivity = sensitivity
        self.source = source
        self.color = color
    }

    /// Zone Management ZoneSourceEnum.
    public enum ZoneSource: UInt8, Codable, Sendable, Hashable {
        case manufacturer = 0
        case user = 1
    }

    private enum CodingKeys: String, CodingKey { case id, name, polygon, sensitivity, source, color }

    /// Zones encoded before `source` and `color` existed read as manufacturer zones without a colour.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(ZoneID.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        polygon = try container.decode([ZonePoint].self, forKey: .polygon)
        sensitivity = try container.decodeIfPresent(Int.self, forKey: .sensitivity)
        source = try container.decodeIfPresent(ZoneSource.self, forKey: .source) ?? .manufacturer
        color = try container.decodeIfPresent(String.self, forKey: .color)
    }

    /// An axis-aligned rectangle from (x1, y1) to (x2, y2), as `--zone ID:x1,y1,x2,y2` gives it.
    public static func rectangle(id: ZoneID, x1: Double, y1: Double, x2: Double, y2: Double, sensitivity: Int? = nil) -> MotionZone {
        MotionZone(
            id: id,
            polygon: [ZonePoint(x: x1, y: y1), ZonePoint(x: x2, y: y1), ZonePoint(x: x2, y: y2), ZonePoint(x: x1, y: y2)],
            sensitivity: sensitivity)
    }
}
