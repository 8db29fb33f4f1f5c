/// The sensitivity scale of Matter's `MotionSensitivity` / zone `Sensitivity` (1…10; Google Home offers
/// Low = 1, Medium = 5, High = 10) mapped to the detector's two thresholds.
///
/// | s | pixel Δ | min area (% of frame) | at 160×90 | about, at 1080p |
/// |---|---|---|---|---|
/// | 1 (Low) | 60 | 3.00 | 432 px | 250×250 px |
/// | 2 | 53 | 2.06 | 296 px | |
/// | 3 | 47 | 1.41 | 203 px | |
/// | 4 | 42 | 0.97 | 139 px | |
/// | 5 (Medium) | 37 | 0.66 | 95 px | 117×117 px |
/// | 6 | 33 | 0.45 | 65 px | |
/// | 7 | 29 | 0.31 | 45 px | |
/// | 8 | 26 | 0.21 | 31 px | |
/// | 9 | 23 | 0.15 | 21 px | |
/// | 10 (High) | 20 | 0.10 | 14 px | 48×43 px |
///
/// Why: both thresholds are geometric between ZoneMinder's Low preset (Δ 60, 3 % of the area) and its High preset
/// (Δ 20, 0.1 %), the widest well-tested anchors among peers (`peers.md` §8.3). Geometric spacing puts
/// Medium (5) at Δ 37 / 0.66 %, which lands on ZoneMinder's own Medium (Δ 40 / 0.5–1 %), so all three Google
/// values agree with a preset users already know. Both thresholds fall as s rises, so detection is monotonic:
/// whatever moves at s also moves at every higher s. The pixel Δ is a floor: on a noisy sensor the detector
/// raises it to 3.5 σ of the measured noise, so High does not turn into a noise detector.
public struct MotionSensitivity: Sendable, Hashable {
    /// A residual luma difference above this marks a pixel as changed.
    public var pixelDelta: Int
    /// Changed pixels needed, as a fraction of the frame, for a region to have moved.
    public var minimumAreaFraction: Double

    /// The thresholds of sensitivity `level` (clamped into 1…10).
    public static func level(_ level: Int) -> MotionSensitivity {
        table[Swift.min(Swift.max(level, 1), 10) - 1]
    }

    /// Index 0 is sensitivity 1.
    public static let table: [MotionSensitivity] = [
        MotionSensitivity(pixelDelta: 60, minimumAreaFraction: 0.0300),
        MotionSensitivity(pixelDelta: 53, minimumAreaFraction: 0.0206),
        MotionSensitivity(pixelDelta: 47, minimumAreaFraction: 0.0141),
        MotionSensitivity(pixelDelta: 42, minimumAreaFraction: 0.0097),
        MotionSensitivity(pixelDelta: 37, minimumAreaFraction: 0.0066),
        MotionSensitivity(pixelDelta: 33, minimumAreaFraction: 0.0045),
        MotionSensitivity(pixelDelta: 29, minimumAreaFraction: 0.0031),
        MotionSensitivity(pixelDelta: 26, minimumAreaFraction: 0.0021),
        MotionSensitivity(pixelDelta: 23, minimumAreaFraction: 0.0015),
        MotionSensitivity(pixelDelta: 20, minimumAreaFraction: 0.0010),
    ]
}
