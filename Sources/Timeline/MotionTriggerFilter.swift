import Domain

/// What one analysed frame saw, reduced to what rule 1 needs, so that one analysis serves every transport.
///
/// Each region holds the lowest sensitivity (1…10) at which it moved; since detection is monotonic in
/// sensitivity, it also moved at every higher one. nil means no motion even at 10. The Motion module's frame
/// result maps onto this one to one (the Timeline module does not depend on it).
public struct MotionSample: Sendable, Hashable {
    public var time: MediaTime
    /// The whole frame.
    public var anywhere: Int?
    /// The part of the frame outside every configured zone.
    public var outsideZones: Int?
    /// Per zone ID.
    public var zones: [UInt16: Int] = [:]

    public init(time: MediaTime, anywhere: Int? = nil, outsideZones: Int? = nil, zones: [UInt16: Int] = [:]) {
        self.time = time
        self.anywhere = anywhere
        self.outsideZones = outsideZones
        self.zones = zones
    }
}

/// Rule 1: whether a motion sample matches a transport's `motionZones` and sensitivity.
public struct MotionTriggerFilter: Sendable, Hashable {
    /// One `TransportZoneOptionsStruct`, with its sensitivity already resolved (the zone's own under PERZONESENS,
    /// else the transport's `motionSensitivity`, else 10).
    public struct ZoneEntry: Sendable, Hashable {
        /// nil: motion outside every configured zone.
        public var zone: ZoneID?
        public var sensitivity: Int

        public init(zone: ZoneID? = nil, sensitivity: Int) {
            self.zone = zone
            self.sensitivity = sensitivity
        }
    }

    /// Empty: motion anywhere at `sensitivity` matches.
    public var zones: [ZoneEntry] = []
    /// The transport's sensitivity, used when `zones` is empty.
    public var sensitivity: Int = 10

    public init(zones: [ZoneEntry] = [], sensitivity: Int = 10) {
        self.zones = zones
        self.sensitivity = sensitivity
    }

    public func matches(_ sample: MotionSample) -> Bool {
        if zones.isEmpty { return Self.reaches(sample.anywhere, sensitivity) }
        return zones.contains { entry in
            let moved: Int?
            if let zone = entry.zone { moved = sample.zones[zone] } else { moved = sample.outsideZones }
            return Self.reaches(moved, entry.sensitivity)
        }
    }

    private static func reaches(_ lowestSensitivity: Int?, _ sensitivity: Int) -> Bool {
        guard let lowestSensitivity else { return false }
        return lowestSensitivity <= sensitivity
    }
}
