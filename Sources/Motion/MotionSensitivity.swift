import Foundation

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
/// detector raises it to 2 σ of the measured noise (after the 2×2 opening), so High does not turn into a noise detector.
public struct MotionSensitivity: Sendable, Hashable {
    /// A residual luma difference above this marks a pixel as changed.
    public var pixelDelta: Int
    /// Changed pixels needed, as a fraction of the frame, for a region to have moved.
    public var minimumAreaFraction: Double

    /// The thresholds of sensitivity `level` (clamped into 1…10).
    public static func level(_ level: Int) -> MotionSensitivity {
        table[Swift.min(Swift.max(level, 1), 10) - 1]
    }

    /// Medium, Google Home's middle setting: the level from which a persistent outline counts.
    public static let medium = 5

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

    /// What a level from Medium up accepts from a figure whose clear outline was also there in the previous analysed
    /// picture (``MotionDetector`` counts those pixels apart): a pixel change of at least `pixelDelta`, one of the
    /// table's, over `minimumAreaFraction` of the frame. nil below Medium: those levels judge every picture alone.
    ///
    /// | s | pixel Δ | min area (% of frame) | at 160×90 |
    /// |---|---|---|---|
    /// | 5 (Medium) | 13 | 0.21 | 30 px |
    /// | 6 | 11 | 0.18 | 26 px |
    /// | 7 | 10 | 0.16 | 22 px |
    /// | 8 | 10 | 0.13 | 19 px |
    /// | 9 | 10 | 0.12 | 17 px |
    /// | 10 (High) | 10 | 0.10 | 14 px |
    ///
    /// Why: an outline that stands out from what a light explains by Medium's own change and persists from one
    /// picture to the next is an object, not rain, noise, a light or codec blocks (High counts faint change this way
    /// with no false trigger on either seed group). What still told Medium from High was area: Medium asked a
    /// person-sized figure for 0.66 % of the frame, which a dark figure by night, in rain or in shake does not change
    /// (most of it is within the noise), and missed one crossing in five. So Medium takes such a figure at level 8's
    /// pixel change and area, and the area falls geometrically to High's, the change three levels up and at most
    /// High's: every level stays distinct, and each still sees whatever a lower one sees (tuned on seeds 1–10:
    /// Medium 44 → 52 of 60 crossings within 1 s, 0 false triggers; a larger area lost crossings, a smaller one made
    /// Medium High).
    public static func persistentOutline(_ level: Int) -> MotionSensitivity? {
        guard level >= medium else { return nil }
        let step = Double(Swift.min(level, 10) - medium)
        return MotionSensitivity(
            pixelDelta: table[Swift.min(level + 3, 10) - 1].pixelDelta,
            minimumAreaFraction: 0.0021 * pow(0.0010 / 0.0021, step / 5))
    }
}
