/// The sensitivity scale of Matter's `MotionSensitivity` / zone `Sensitivity` (1…10; Google Home offers
/// Low = 1, Medium = 5, High = 10) mapped to the detector's two thresholds.
///
/// | s | pixel Δ | min area (% of frame) | at 160×90 | about, at 1080p |
/// |---|---|---|---|---|
/// | 1 (Low) | 28 | 3.00 | 432 px | 250×250 px |
/// | 2 | 25 | 2.06 | 296 px | |
/// | 3 | 22 | 1.41 | 203 px | |
/// | 4 | 20 | 0.97 | 139 px | |
/// | 5 (Medium) | 18 | 0.66 | 95 px | 117×117 px |
/// | 6 | 16 | 0.45 | 65 px | |
/// | 7 | 14 | 0.31 | 45 px | |
/// | 8 | 13 | 0.21 | 31 px | |
/// | 9 | 11 | 0.15 | 21 px | |
/// | 10 (High) | 10 | 0.10 | 14 px | 48×43 px |
///
/// Why: the areas are geometric between ZoneMinder's Low preset (3 % of the area) and its High preset (0.1 %), the
/// widest well-tested anchors among peers (`peers.md` §8.3); Medium (5) lands on ZoneMinder's own Medium (0.5–1 %).
/// The pixel Δ is geometric from 28 to 10 levels (release 1 used ZoneMinder's 60…20): Medium must see a
/// person-sized figure 25 levels from its background (about 18–24 after encoding and downscaling), which Δ 37 never
/// did (the detection corpus, README "Motion detection"). Low thresholds alone would fire on rain, leaves and shake;
/// the detector keeps them quiet by structure instead (an outline near each counted pixel, each pixel's own
/// flicker), so the thresholds can sit where the figures are. Both thresholds fall as s rises, so detection is
/// monotonic: whatever moves at s also moves at every higher s. The pixel Δ is a floor: on a noisy sensor the
/// detector raises it to 3.5 σ of the measured noise, so High does not turn into a noise detector.
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
        MotionSensitivity(pixelDelta: 28, minimumAreaFraction: 0.0300),
        MotionSensitivity(pixelDelta: 25, minimumAreaFraction: 0.0206),
        MotionSensitivity(pixelDelta: 22, minimumAreaFraction: 0.0141),
        MotionSensitivity(pixelDelta: 20, minimumAreaFraction: 0.0097),
        MotionSensitivity(pixelDelta: 18, minimumAreaFraction: 0.0066),
        MotionSensitivity(pixelDelta: 16, minimumAreaFraction: 0.0045),
        MotionSensitivity(pixelDelta: 14, minimumAreaFraction: 0.0031),
        MotionSensitivity(pixelDelta: 13, minimumAreaFraction: 0.0021),
        MotionSensitivity(pixelDelta: 11, minimumAreaFraction: 0.0015),
        MotionSensitivity(pixelDelta: 10, minimumAreaFraction: 0.0010),
    ]
}
