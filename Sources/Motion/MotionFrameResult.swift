import Domain

/// Motion in one region of one analysed frame.
public struct RegionMotion: Sendable, Hashable {
    /// The lowest sensitivity (1…10) at which the region moved; it also moved at every higher one. nil: not even at 10.
    public var lowestSensitivity: Int?
    /// The fraction of the region's pixels that changed at the most sensitive threshold (a score for logs).
    public var changedFraction: Double

    public init(lowestSensitivity: Int? = nil, changedFraction: Double) {
        self.lowestSensitivity = lowestSensitivity
        self.changedFraction = changedFraction
    }

    public static let still = RegionMotion(lowestSensitivity: nil, changedFraction: 0)

    public func moved(atSensitivity sensitivity: Int) -> Bool {
        lowestSensitivity.map { $0 <= sensitivity } ?? false
    }
}

/// What one analysed frame showed.
public struct MotionFrameResult: Sendable, Hashable {
    /// The presentation time passed in, in seconds.
    public var time: Double
    public var isKeyframe: Bool
    /// The whole frame.
    public var anywhere: RegionMotion
    /// Pixels outside every configured zone.
    public var outsideZones: RegionMotion
    public var zones: [ZoneID: RegionMotion]
    /// Zones that moved at their own sensitivity (else the detector's), ascending.
    public var movedZones: [ZoneID]
    /// Motion outside every zone at the detector's sensitivity.
    public var movedOutsideZones: Bool
    /// Motion anywhere at the detector's sensitivity.
    public var hasMotion: Bool
    /// A global change (or the first frame) reset the background; no motion is reported for this frame.
    public var recalibrated: Bool
    /// The luma noise sigma the thresholds used.
    public var noiseSigma: Double
    /// The global photometric correction applied before differencing: predicted = gain × background + offset.
    public var gain: Double
    public var offset: Double
    /// The camera shake compensated in this frame (analysis pixels; zero when none was needed or measurable).
    public var shift: GlobalShift = .zero
    /// The whole picture moved further than shake can (`maximumCompensatedShift`) and the change recalibrated the
    /// detector: the camera was moved or knocked. Never motion.
    public var cameraMoved = false
}
