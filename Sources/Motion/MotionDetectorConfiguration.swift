import Domain

/// How a `MotionDetector` is set up.
///
/// Measured defaults (release 1's thresholds, before the structural tests; x264 veryfast 2 Mb/s 720p30 test scenes
/// with temporal noise, GOP 2 s, plus a lamp step of +0.2 brightness; decoded and area-scaled by FFmpeg; single core
/// of a shared, loaded 2-core VM):
///
/// | analysis size | cost per analysed frame | false motion (still + lamp + keyframes) | walker 0.17 % of frame | slow mover |
/// |---|---|---|---|---|
/// | 80×45 | ~0.05 ms | 0 | s10: 24/31 frames | s5 after 7.4 s, s10 after 1.4 s |
/// | **160×90** | ~0.2 ms | 0 | s10: 24/31 frames | s5 after 8.0 s, s10 after 1.4 s |
/// | 320×180 | ~0.8 ms | 0 | s10: 24/31 frames | s5 after 8.4 s, s10 after 1.0 s |
///
/// Detection does not improve above 160×90 (the area thresholds are fractions of the frame) while the cost grows
/// with the pixel count; below it, High's 0.1 % (14 px at 160×90) falls under the 2×2 opening and the minimum
/// blob, so the top of the sensitivity scale stops being distinct, and zone edges get coarse (24 px at 1080p).
/// Hence 160×90 for 16:9 (`analysisSize`). Nearest-neighbour or fast-bilinear scaling gave the same results
/// as area scaling (the noise estimate absorbs the extra noise), so the media layer may use the cheapest scaler.
/// 5 analysed frames a second (0.2 s) keeps the decision latency within one analysis interval (≤ 250 ms with
/// processing) at about 1 ms of CPU per second of video, under 1 % of decoding 1080p30; analysing every frame
/// found the same motion.
public struct MotionDetectorConfiguration: Sendable, Hashable {
    /// The video's pixel size: zone polygons are in these coordinates.
    public var sourceWidth: Int
    public var sourceHeight: Int
    /// The size of the planes the media layer hands over (see `analysisSize(sourceWidth:sourceHeight:longSide:)`).
    public var analysisWidth: Int
    public var analysisHeight: Int
    /// 1…10; the transport's `motionSensitivity`. Used for `hasMotion`, `movedOutsideZones` and zones without their own.
    public var sensitivity: Int = 5
    /// All zones of the device (a transport may listen to a subset; unlisted ones still define "outside").
    public var zones: [MotionZone] = []
    /// Seconds between analysed frames: 0.2 s analyses 5 frames a second (every 6th frame at 30 fps).
    public var analysisInterval: Double = 0.2
    /// Seconds for the background to follow unchanged pixels (sub-threshold drift: dusk, slow shadows).
    public var backgroundTimeConstant: Double = 2
    /// Seconds for the background to absorb changed pixels: how long an object that stopped keeps counting as
    /// motion, and what lets a slow object accumulate a detectable trail.
    public var foregroundTimeConstant: Double = 15
    /// A change covering more than this fraction of the frame after global gain/offset compensation (IR cut,
    /// camera knocked) recalibrates instead of triggering. A third of the frame suffices when the change is spread
    /// over at least 12 cells of a 4×4 grid (a near object changes one area, a lighting switch all of them).
    public var globalChangeFraction: Double = 0.6
    /// Seconds after a recalibration during which changed pixels adapt at the background rate, so that the
    /// ghosts of objects that were in the frame at the switch fade fast.
    public var recalibrationDuration: Double = 2
    /// Seconds back to the short-term reference picture. A pixel moves only if it differs from the background *and*
    /// from the picture this long ago: an object that moved and stopped differs from the background for as long as
    /// the background takes to absorb it, but from the recent picture only for this long.
    public var motionWindow: Double = 2
    /// The per-pixel threshold is at least this many noise sigmas — σ of the raw residual, applied to the opened one.
    ///
    /// Why 2 and not the usual 3–3.5: the threshold is tested after the 2×2 opening, where a pixel keeps a change only
    /// if a whole 2×2 block around it has it; noise past 2 σ in four neighbours at once is rare (a 4.6 % tail each), and
    /// what does pass is then held to an outline and to each pixel's own flicker. A 3.5 σ floor made Medium blind to a
    /// figure 20–25 levels from its ground in rain or night noise (σ 5–6 there: a floor of 21 levels), however large
    /// (generalisation corpus, tuning seeds: Medium 52 → 53 of 56 crossings drawn as labelled, held out 51 → 55 of 57;
    /// no false trigger at Medium or High on either group; 1.5 σ found no more).
    public var noiseFactor: Double = 2
    /// A region needs at least this many changed pixels (after the 2×2 opening) to move.
    public var minimumChangedPixels: Int = 6
    /// A changed pixel counts only as far as an end of the change within this many analysis pixels is strong.
    public var edgeSupportRadius: Int = 3
    /// An end of the change is not an outline where the frame's contrast across it is the background's times a gain
    /// in this range: a light, a soft shadow or something out of focus at the lens scales the scene's own texture
    /// (the change it makes has edges wherever the scene has them); an object brings contrast of its own.
    public var lightGains: ClosedRange<Double> = 0.2...5
    /// A changed pixel counts only if its residual exceeds this many times its usual flicker (its activity).
    public var activityFactor: Double = 3
    /// Seconds for a pixel's activity to rise to a new, larger flicker, and to fall back.
    public var activityRiseTime: Double = 3
    public var activityFallTime: Double = 20
    /// Seconds after a stream's first picture during which the detector learns each pixel's activity and reports
    /// nothing.
    public var warmUpDuration: Double = 2
    /// Camera shake is compensated up to this many analysis pixels (3 at 160 wide: 24 px of a 1280-wide picture);
    /// a larger global shift is the camera moving, which recalibrates (`cameraMoved`).
    public var maximumCompensatedShift: Int = 3
    /// Shifts smaller than this (analysis pixels) are left alone: resampling blurs the frame a little, which costs
    /// more than a hundredth of a pixel's misalignment.
    public var minimumCompensatedShift: Double = 0.08

    public init(
        sourceWidth: Int, sourceHeight: Int, analysisWidth: Int, analysisHeight: Int, sensitivity: Int = 5,
        zones: [MotionZone] = [], analysisInterval: Double = 0.2, backgroundTimeConstant: Double = 2,
        foregroundTimeConstant: Double = 15, globalChangeFraction: Double = 0.6, recalibrationDuration: Double = 2,
        motionWindow: Double = 2, noiseFactor: Double = 2, minimumChangedPixels: Int = 6, edgeSupportRadius: Int = 3,
        lightGains: ClosedRange<Double> = 0.2...5, activityFactor: Double = 3, activityRiseTime: Double = 3,
        activityFallTime: Double = 20, warmUpDuration: Double = 2, maximumCompensatedShift: Int = 3,
        minimumCompensatedShift: Double = 0.08
    ) {
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.analysisWidth = analysisWidth
        self.analysisHeight = analysisHeight
        self.sensitivity = sensitivity
        self.zones = zones
        self.analysisInterval = analysisInterval
        self.backgroundTimeConstant = backgroundTimeConstant
        self.foregroundTimeConstant = foregroundTimeConstant
        self.globalChangeFraction = globalChangeFraction
        self.recalibrationDuration = recalibrationDuration
        self.motionWindow = motionWindow
        self.noiseFactor = noiseFactor
        self.minimumChangedPixels = minimumChangedPixels
        self.edgeSupportRadius = edgeSupportRadius
        self.lightGains = lightGains
        self.activityFactor = activityFactor
        self.activityRiseTime = activityRiseTime
        self.activityFallTime = activityFallTime
        self.warmUpDuration = warmUpDuration
        self.maximumCompensatedShift = maximumCompensatedShift
        self.minimumCompensatedShift = minimumCompensatedShift
    }

    /// A configuration for a video of the given size, analysed at `analysisSize(…)` of it.
    public init(sourceWidth: Int, sourceHeight: Int, sensitivity: Int = 5, zones: [MotionZone] = []) {
        let size = Self.analysisSize(sourceWidth: sourceWidth, sourceHeight: sourceHeight)
        self.init(
            sourceWidth: sourceWidth, sourceHeight: sourceHeight, analysisWidth: size.width, analysisHeight: size.height,
            sensitivity: sensitivity, zones: zones)
    }

    /// The analysis size for a source: the long side scaled to `longSide` (default 160: 160×90 for 16:9,
    /// 160×120 for 4:3), aspect kept, never larger than the source.
    public static func analysisSize(sourceWidth: Int, sourceHeight: Int, longSide: Int = 160) -> (width: Int, height: Int) {
        let long = Swift.max(sourceWidth, sourceHeight)
        // A picture a pixel high (a hostile stream can declare one) is analysed on a plane of at least 2×2.
        guard long > longSide else { return (Swift.max(2, sourceWidth), Swift.max(2, sourceHeight)) }
        let scale = Double(longSide) / Double(long)
        return (Swift.max(8, Int((Double(sourceWidth) * scale).rounded())), Swift.max(8, Int((Double(sourceHeight) * scale).rounded())))
    }
}
