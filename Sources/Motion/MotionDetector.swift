import CLumaKernels
import Foundation  // exp() for time constants; nothing in the per-pixel loops
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
    public var sensitivity: Int
    /// All zones of the device (a transport may listen to a subset; unlisted ones still define "outside").
    public var zones: [MotionZone]
    /// Seconds between analysed frames: 0.2 s analyses 5 frames a second (every 6th frame at 30 fps).
    public var analysisInterval: Double
    /// Seconds for the background to follow unchanged pixels (sub-threshold drift: dusk, slow shadows).
    public var backgroundTimeConstant: Double
    /// Seconds for the background to absorb changed pixels: how long an object that stopped keeps counting as
    /// motion, and what lets a slow object accumulate a detectable trail.
    public var foregroundTimeConstant: Double
    /// A change covering more than this fraction of the frame after global gain/offset compensation (IR cut,
    /// camera knocked) recalibrates instead of triggering. A third of the frame suffices when the change is spread
    /// over at least 12 cells of a 4×4 grid (a near object changes one area, a lighting switch all of them).
    public var globalChangeFraction: Double
    /// Seconds after a recalibration during which changed pixels adapt at the background rate, so that the
    /// ghosts of objects that were in the frame at the switch fade fast.
    public var recalibrationDuration: Double
    /// Seconds back to the short-term reference picture. A pixel moves only if it differs from the background *and*
    /// from the picture this long ago: an object that moved and stopped differs from the background for as long as
    /// the background takes to absorb it, but from the recent picture only for this long.
    public var motionWindow: Double
    /// The per-pixel threshold is at least this many noise sigmas.
    public var noiseFactor: Double
    /// A region needs at least this many changed pixels (after the 2×2 opening) to move.
    public var minimumChangedPixels: Int
    /// A changed pixel counts only as far as an end of the change within this many analysis pixels is strong.
    public var edgeSupportRadius: Int = 3
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
        motionWindow: Double = 2, noiseFactor: Double = 3.5, minimumChangedPixels: Int = 6
    ) {
        self.motionWindow = motionWindow
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
        self.noiseFactor = noiseFactor
        self.minimumChangedPixels = minimumChangedPixels
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

/// Motion in one region of one analysed frame.
public struct RegionMotion: Sendable, Hashable {
    /// The lowest sensitivity (1…10) at which the region moved; it also moved at every higher one. nil: not even at 10.
    public var lowestSensitivity: Int?
    /// The fraction of the region's pixels that changed at the most sensitive threshold (a score for logs).
    public var changedFraction: Double

    public init(lowestSensitivity: Int?, changedFraction: Double) {
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

/// Finds motion in a stream of downscaled luma planes.
///
/// Per analysed frame: (1) fit a global gain and offset between the background and the frame from robust
/// (median) statistics of the dark and bright halves, so a lamp, an exposure step or the quality pulse of a
/// keyframe is compensated instead of detected, while motion that happens during the switch stays visible;
/// (2) take the absolute residual per pixel; (3) apply a 2×2 grey-level opening, which removes isolated noise
/// pixels and thin edge flicker and commutes with thresholding, so one pass serves all ten sensitivities;
/// (4) if more than `globalChangeFraction` of the frame still changed, or a third of it spread over most of a
/// 4×4 grid, treat it as a non-linear global change (IR cut filter, camera knocked, a grey concealed frame)
/// and reset the background to this frame; detection resumes on the next analysed frame; (5) keep only the change
/// that has an outline and is unusual for its pixel: each pixel counts only as far as an edge within 3 pixels where
/// the change drops to under a third is strong (a headlight, an insect out of focus fade smoothly; a person, a car
/// has an outline), and only where its change exceeds three times its usual flicker between analysed pictures
/// (leaves, rain, a shaken edge flicker all the time; a person passes a pixel in a fraction of a second, a slow mover
/// changes it little per picture); (6) count those pixels per region and per sensitivity level and test them
/// against the area thresholds; (7) blend the frame into the background: fast where nothing changed, slowly where
/// something did, so a parked object fades into the background while a slow mover leaves a trail long enough to
/// detect. The first `warmUpDuration` of a stream only learns (background, noise, flicker).
public struct MotionDetector: Sendable {
    public private(set) var configuration: MotionDetectorConfiguration
    public var width: Int { configuration.analysisWidth }
    public var height: Int { configuration.analysisHeight }

    private var background: [Float] = []
    /// Bit z set: the pixel is inside zone `zoneIDs[z]`.
    private var zoneMasks: [UInt64]
    private var zoneIDs: [ZoneID]
    private var zoneSensitivities: [Int]
    /// Pixel counts: [anywhere, outside, zone 0, zone 1, …].
    private var regionAreas: [Int]
    private var noiseSigma: Double = 0
    private var lastAnalysedTime: Double?
    private var lastAnalysedWasKeyframe = false
    private var recalibratingUntil: Double = -.infinity
    /// Until then (a stream's first `warmUpDuration`) each pixel's activity learns the mean of its flicker and nothing
    /// is reported.
    private var warmingUpUntil: Double = -.infinity
    /// Pictures whose flicker the warm-up has averaged so far.
    private var learnedPictures = 0
    /// How much warm-up the next stream's first picture starts: `warmUpDuration` for a new detector, what is left of
    /// it after ``resumeAfterGap()`` (0 once a stream has warmed it up).
    private var pendingWarmUp: Double
    /// Recently analysed pictures (time, pixels), oldest first, spanning a little more than `motionWindow`.
    private var recent: [(time: Double, pixels: [UInt8])] = []
    // Scratch buffers, kept to avoid allocating per frame.
    private var residual: [UInt8]
    /// |frame − background| without the short-term gate: global changes and noise are measured on it.
    private var rawResidual: [UInt8]
    private var eroded: [UInt8]
    private var opened: [UInt8]
    private var roundedBackground: [UInt8]
    /// Per pixel: how much it usually flickers from one analysed picture to the next (rises in seconds, falls in tens
    /// of seconds). Foliage, water and shaken edges flicker all the time; a pixel counts only where its change from
    /// the background is well beyond that.
    private var activity: [Float]
    /// The strongest end of the change within `edgeSupportRadius` pixels (see `findEdges()`).
    private var edgeNear: [UInt8]
    /// Each pixel's own edge strength, before the dilation into `edgeNear`.
    private var edgeScratch: [UInt8]
    /// The dilation's row maxima.
    private var dilationRows: [UInt8]
    /// The opened residual of the pixels that count (unusual and edge-supported), 0 elsewhere.
    private var counted: [UInt8]
    /// Measures camera shake against the background.
    private var shiftEstimator: GlobalShiftEstimator
    /// The frame brought into the background's place.
    private var aligned: [UInt8]
    /// Per pixel, the largest opened residual the warm-up saw; folded into `activity` when it ends, so nothing the
    /// warm-up saw counts as motion the moment it ends (see `foldWarmUpPeaks()`).
    private var warmUpPeak: [UInt8]
    private var warmUpFolded = true
    /// Per pixel, the range of the background around where a shaken frame's pixel came from.
    private var lowBackground: [Float]
    private var highBackground: [Float]

    public init(configuration: MotionDetectorConfiguration) {
        precondition(configuration.zones.count <= 64, "at most 64 zones")
        precondition(configuration.analysisWidth >= 2 && configuration.analysisHeight >= 2, "analysis plane too small")
        self.configuration = configuration
        pendingWarmUp = configuration.warmUpDuration
        let count = configuration.analysisWidth * configuration.analysisHeight
        (zoneMasks, zoneIDs, zoneSensitivities, regionAreas) = Self.regions(of: configuration)
        residual = [UInt8](repeating: 0, count: count)
        rawResidual = residual
        eroded = residual
        opened = residual
        roundedBackground = residual
        activity = [Float](repeating: 0, count: count)
        edgeNear = residual
        edgeScratch = residual
        dilationRows = residual
        counted = residual
        aligned = residual
        warmUpPeak = residual
        lowBackground = activity
        highBackground = activity
        shiftEstimator = GlobalShiftEstimator(
            width: configuration.analysisWidth, height: configuration.analysisHeight, maxShift: configuration.maximumCompensatedShift)
    }

    /// The camera's zones changed (Zone Management): the regions are rasterised again, the background and the noise
    /// estimate are kept, so the detector needs no new warm-up and motion already in progress is still seen.
    public mutating func replaceZones(_ zones: [MotionZone]) {
        precondition(zones.count <= 64, "at most 64 zones")
        configuration.zones = zones
        (zoneMasks, zoneIDs, zoneSensitivities, regionAreas) = Self.regions(of: configuration)
    }

    /// The camera's stream comes back after a gap (a reconnect, a looped file starting over): what was learned of the
    /// scene's flicker and noise still holds, the pictures do not (the light may have changed, the timestamps start
    /// again). The next picture starts a new background, converging fast as after a light step, and only what was
    /// left of the warm-up is run — none once a stream has completed it — so motion right after a reconnect is seen
    /// at once instead of after another `warmUpDuration` of blindness.
    public mutating func resumeAfterGap() {
        if let last = lastAnalysedTime { pendingWarmUp = Swift.max(0, Swift.min(warmingUpUntil - last, configuration.warmUpDuration)) }
        background = []
        recent = []
        lastAnalysedTime = nil
        lastAnalysedWasKeyframe = false
        warmingUpUntil = -.infinity
    }

    /// Whether `other` analyses the same pictures the same way (zones aside: ``replaceZones(_:)`` changes those), so
    /// a detector built for it may go on with what this one learned.
    public func analysesLike(_ other: MotionDetectorConfiguration) -> Bool {
        var mine = configuration, theirs = other
        mine.zones = []
        theirs.zones = []
        return mine == theirs
    }

    /// Each analysis pixel's zone bits, the zones' IDs and sensitivities, and the region areas.
    private static func regions(of configuration: MotionDetectorConfiguration)
        -> (masks: [UInt64], ids: [ZoneID], sensitivities: [Int], areas: [Int])
    {
        let count = configuration.analysisWidth * configuration.analysisHeight
        var masks = [UInt64](repeating: 0, count: count)
        var areas = [count, 0]
        for (index, zone) in configuration.zones.enumerated() {
            let pixels = zone.rasterised(
                sourceWidth: configuration.sourceWidth, sourceHeight: configuration.sourceHeight,
                analysisWidth: configuration.analysisWidth, analysisHeight: configuration.analysisHeight)
            for pixel in pixels { masks[pixel] |= 1 << UInt64(index) }
            areas.append(pixels.count)
        }
        areas[1] = masks.lazy.filter { $0 == 0 }.count
        return (masks, configuration.zones.map(\.id), configuration.zones.map { $0.sensitivity ?? configuration.sensitivity }, areas)
    }

    /// How many analysis pixels each zone covers (for logs and checks).
    public var zonePixelCounts: [ZoneID: Int] {
        Dictionary(zip(zoneIDs, regionAreas.dropFirst(2)), uniquingKeysWith: +)
    }

    /// Whether a frame at `time` (seconds) will be analysed; the media layer can skip scaling the others.
    public func wantsFrame(at time: Double) -> Bool {
        guard let last = lastAnalysedTime else { return true }
        // 1 ms of slack so 30 fps timestamps converted to Double still land on every 6th frame at 0.2 s.
        return time - last >= configuration.analysisInterval - 0.001 || time < last
    }

    /// Analyses `plane` if `wantsFrame(at:)` says so; returns nil for skipped frames.
    public mutating func analyse(_ plane: LumaPlane, at time: Double, isKeyframe: Bool) -> MotionFrameResult? {
        guard wantsFrame(at: time) else { return nil }
        return analyseNow(plane, at: time, isKeyframe: isKeyframe)
    }

    /// Analyses `plane` regardless of the analysis interval.
    public mutating func analyseNow(_ plane: LumaPlane, at time: Double, isKeyframe: Bool) -> MotionFrameResult {
        precondition(plane.width == width && plane.height == height, "plane is \(plane.width)×\(plane.height), expected \(width)×\(height)")
        let elapsed = lastAnalysedTime.map { Swift.min(Swift.max(time - $0, 0), 2) } ?? 0
        defer {
            lastAnalysedTime = time
            lastAnalysedWasKeyframe = isKeyframe
        }
        guard !background.isEmpty else {
            background = plane.pixels.map(Float.init)
            recalibratingUntil = time + configuration.recalibrationDuration
            warmingUpUntil = time + pendingWarmUp
            if pendingWarmUp > 0 {
                warmUpPeak = [UInt8](repeating: 0, count: warmUpPeak.count)
                warmUpFolded = false
            }
            remember(plane.pixels, at: time)
            return quietResult(time: time, isKeyframe: isKeyframe, gain: 1, offset: 0)
        }

        // Camera shake first: everything after compares the frame brought back into the background's place, and the
        // pictures remembered for the short-term gate and the flicker are kept in that place too.
        let estimate = shiftEstimator.estimate(frame: plane.pixels, background: background)
        var shift = GlobalShift.zero
        var pixels = plane.pixels
        if estimate.reliable && estimate.shift.magnitude >= configuration.minimumCompensatedShift {
            shift = estimate.shift
            GlobalShiftEstimator.align(plane.pixels, width: width, height: height, by: shift, into: &aligned)
            pixels = aligned
        }
        let (gain, offset) = photometricFit(pixels)
        let reference = shortTermReference(before: time)
        let previous = recent.last?.pixels
        remember(plane.pixels, at: time)
        let frameSigma = computeResidual(plane.pixels, gain: gain, offset: offset, reference: reference, shift: shift)
        openResidual()

        // Thresholds use the noise measured on earlier frames: a global change or a large object inflates this
        // frame's own sigma and would hide itself.
        // On the first comparison nothing is known yet: trust the frame only up to a typical sensor's noise.
        let sigma = noiseSigma > 0 ? noiseSigma : Swift.min(frameSigma, 6)
        let noiseFloor = configuration.noiseFactor * sigma
        let thresholds = MotionSensitivity.table.map { Swift.max(Double($0.pixelDelta), noiseFloor) }
        // Light halved or doubled within one analysis interval, or contrast gone (a grey concealed frame): no
        // compensation is trustworthy, start over.
        let implausibleGain = !(0.6...1.67).contains(gain)
        if implausibleGain || isGlobalChange(threshold: thresholds[9]) {
            recalibratingUntil = time + configuration.recalibrationDuration
            // Moved rather than relit: the picture lines up with the old background further away than shake goes.
            let coarse = shiftEstimator.coarseShift(frame: plane.pixels, background: background,
                                                    range: 4 * configuration.maximumCompensatedShift)
            let moved = estimate.atLimit || Swift.max(abs(coarse.dx), abs(coarse.dy)) > configuration.maximumCompensatedShift
            background = plane.pixels.map(Float.init)
            // After the camera moved the old pictures are in the old place: the short-term gate starts again here.
            if moved { recent = [(time, plane.pixels)] }
            var result = quietResult(time: time, isKeyframe: isKeyframe, gain: gain, offset: offset)
            result.cameraMoved = moved
            return result
        }

        // Level of each opened residual value: the lowest sensitivity whose threshold it exceeds (0: none).
        var levelOf = [UInt8](repeating: 0, count: 256)
        for value in 0..<256 {
            if let level = thresholds.firstIndex(where: { Double(value) > $0 }) { levelOf[value] = UInt8(level + 1) }
        }
        let warmingUp = time < warmingUpUntil
        if warmingUp {
            notePeaks()
        } else if !warmUpFolded {
            foldWarmUpPeaks()
        }
        findEdges()
        selectCountedPixels()
        let counts = countChanges(levelOf)
        updateActivity(plane.pixels, previous: previous, elapsed: elapsed, learning: warmingUp)

        updateBackground(pixels, gain: gain, offset: offset, changeThreshold: thresholds[9], elapsed: elapsed, time: time, isKeyframe: isKeyframe)
        if !isKeyframe || lastAnalysedWasKeyframe {
            // Keyframes may carry a quality pulse; keep them out of the noise estimate unless they are all we see.
            // One frame may at most double the estimate, so a large object cannot blind the detector.
            if noiseSigma == 0 {
                noiseSigma = sigma
            } else {
                noiseSigma += (Swift.min(frameSigma, 2 * noiseSigma) - noiseSigma) * (1 - exp(-elapsed / 5))
            }
        }

        if warmingUp { return quietResult(time: time, isKeyframe: isKeyframe, gain: gain, offset: offset, recalibrated: false) }
        let regions = (0..<regionAreas.count).map { region in regionMotion(counts: counts, region: region) }
        var zones: [ZoneID: RegionMotion] = [:]
        var moved: [ZoneID] = []
        for (index, id) in zoneIDs.enumerated() {
            zones[id] = regions[2 + index]
            if regions[2 + index].moved(atSensitivity: zoneSensitivities[index]) { moved.append(id) }
        }
        return MotionFrameResult(
            time: time, isKeyframe: isKeyframe, anywhere: regions[0], outsideZones: regions[1], zones: zones,
            movedZones: moved.sorted(), movedOutsideZones: regions[1].moved(atSensitivity: configuration.sensitivity),
            hasMotion: regions[0].moved(atSensitivity: configuration.sensitivity), recalibrated: false,
            noiseSigma: sigma, gain: gain, offset: offset, shift: shift)
    }

    // MARK: Steps

    private func quietResult(time: Double, isKeyframe: Bool, gain: Double, offset: Double, recalibrated: Bool = true) -> MotionFrameResult {
        var zones: [ZoneID: RegionMotion] = [:]
        for id in zoneIDs { zones[id] = .still }
        return MotionFrameResult(
            time: time, isKeyframe: isKeyframe, anywhere: .still, outsideZones: .still, zones: zones, movedZones: [],
            movedOutsideZones: false, hasMotion: false, recalibrated: recalibrated, noiseSigma: noiseSigma, gain: gain, offset: offset)
    }

    /// Gain and offset mapping the background onto the frame, from the median difference in the darker and the
    /// brighter half of the background (gain 1 when the background has too little contrast to tell). Medians ignore whatever a moving object covers (up to half of each half).
    private mutating func photometricFit(_ pixels: [UInt8]) -> (gain: Double, offset: Double) {
        var backgroundHistogram = [Int](repeating: 0, count: 256)
        // Differences f − b + 255 of the dark half in 0..<511, of the bright half in 511..<1022; bin 1022 collects
        // the clipped pixels, which are left out.
        var differences = [Int](repeating: 0, count: 1023)
        var darkSum = 0, brightSum = 0
        // The background rounded to whole levels (it stays within 0…255), once for both histograms.
        background.withUnsafeBufferPointer { model in
            roundedBackground.withUnsafeMutableBufferPointer { rounded in
                for i in 0..<model.count { rounded[i] = Self.truncatedLevel(model[i] + 0.5) }
            }
        }
        roundedBackground.withUnsafeBufferPointer { Self.count($0, into: &backgroundHistogram) { Int($0) } }
        let split = Self.median(backgroundHistogram)
        pixels.withUnsafeBufferPointer { frame in
            roundedBackground.withUnsafeBufferPointer { model in
                Self.count(pairs: frame, model, into: &differences) { f, b in
                    let f = Int(f), b = Int(b)
                    // Clipped pixels cannot follow a gain change; leave them out of the fit.
                    guard f > 3, f < 252, b > 3, b < 252 else { return 1022 }
                    return b < split ? f &- b &+ 255 : f &- b &+ 766
                }
                // The sums of each half's background levels, in a loop of their own (it vectorises).
                for i in 0..<frame.count {
                    let f = frame[i], b = model[i]
                    let used = f > 3 && f < 252 && b > 3 && b < 252
                    let level = used ? Int(b) : 0
                    if b < split { darkSum &+= level } else { brightSum &+= level }
                }
            }
        }
        differences.removeLast()
        let darkDifferences = Array(differences[0..<511]), brightDifferences = Array(differences[511...])
        let darkCount = darkDifferences.reduce(0, +), brightCount = brightDifferences.reduce(0, +)
        let minimum = pixels.count / 20
        if darkCount < minimum || brightCount < minimum {
            let all = zip(darkDifferences, brightDifferences).map { $0 + $1 }
            return (1, all.reduce(0, +) > 0 ? Double(Self.median(all) - 255) : 0)
        }
        let darkMean = Double(darkSum) / Double(darkCount), brightMean = Double(brightSum) / Double(brightCount)
        let darkOffset = Double(Self.median(darkDifferences) - 255), brightOffset = Double(Self.median(brightDifferences) - 255)
        guard brightMean - darkMean >= 16 else { return (1, (darkOffset + brightOffset) / 2) }
        let gain = 1 + (brightOffset - darkOffset) / (brightMean - darkMean)
        return (gain, darkOffset - (gain - 1) * darkMean)
    }

    /// |frame − (gain × background + offset)| per pixel into `residual`; returns the frame's robust noise sigma.
    /// Median of `a[i] − b[i]` over all pixels.
    static func medianDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var histogram = [Int](repeating: 0, count: 511)
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in count(pairs: a, b, into: &histogram) { Int($0) &- Int($1) &+ 255 } }
        }
        var seen = 0
        for (index, count) in histogram.enumerated() {
            seen += count
            if seen * 2 >= a.count { return index - 255 }
        }
        return 0
    }

    /// The newest remembered picture at least `motionWindow` old (or the oldest one early on).
    private func shortTermReference(before time: Double) -> [UInt8]? {
        recent.last { time - $0.time >= configuration.motionWindow - 0.001 }?.pixels ?? recent.first?.pixels
    }

    private mutating func remember(_ pixels: [UInt8], at time: Double) {
        if let last = recent.last, time < last.time { recent.removeAll() }  // time went backwards: a new stream
        recent.append((time, pixels))
        // Keep exactly one picture older than the window, the reference of the next frames.
        while recent.count > 2 && time - recent[1].time >= configuration.motionWindow { recent.removeFirst() }
    }

    private mutating func computeResidual(_ pixels: [UInt8], gain: Double, offset: Double, reference: [UInt8]?,
                                          shift: GlobalShift) -> Double {
        let shifted = shift != .zero
        if shifted { shiftTolerantBackground(shift) }
        var counts = [Int](repeating: 0, count: 256)
        let g = Float(gain), o = Float(offset)
        let reference = reference ?? pixels
        let gated = recent.count > 1
        // The background follows a lamp switch within a frame; the reference picture does not. Level it with its
        // own robust offset (median of frame − reference) so a switch inside the window does not hide motion.
        let referenceOffset = gated ? Float(Self.medianDifference(pixels, reference)) : 0
        pixels.withUnsafeBufferPointer { frame in
            background.withUnsafeBufferPointer { model in
                reference.withUnsafeBufferPointer { previous in
                    residual.withUnsafeMutableBufferPointer { out in
                        rawResidual.withUnsafeMutableBufferPointer { raw in
                            for i in 0..<frame.count {
                                let value: Float
                                if shifted {
                                    // The frame against the range of the background cell its pixel came from.
                                    let a = Swift.min(Swift.max(lowBackground[i] * g + o, 0), 255)
                                    let b = Swift.min(Swift.max(highBackground[i] * g + o, 0), 255)
                                    let f = Float(frame[i])
                                    value = Swift.min(Swift.max(Swift.max(f - Swift.max(a, b), Swift.min(a, b) - f), 0), 255)
                                } else {
                                    let predicted = Swift.min(Swift.max(model[i] * g + o, 0), 255)
                                    value = Swift.min(abs(Float(frame[i]) - predicted), 255)
                                }
                                raw[i] = Self.truncatedLevel(value)
                                // Moving now, not merely different from the background. The reference is compensated
                                // like the background: both predate a lamp switch the fit has just measured.
                                let recent = Swift.min(Swift.max(Float(previous[i]) + referenceOffset, 0), 255)
                                out[i] = Self.truncatedLevel(gated ? Swift.min(value, abs(Float(frame[i]) - recent)) : value)
                            }
                            // A loop of its own: the scattered increments would keep the arithmetic above from
                            // being vectorised.
                            Self.count(UnsafeBufferPointer(raw), into: &counts) { Int($0) }
                        }
                    }
                }
            }
        }
        // MAD: for Gaussian noise the median of |r| is 0.674 σ. The +0.5 undoes the truncation to whole levels.
        return (Double(Self.median(counts)) + 0.5) * 1.4826
    }

    /// `lowBackground` and `highBackground` = the darkest and brightest of the four background pixels around where
    /// each frame pixel was before the shake moved it (x − shift). Why a range and not the resampled level: the
    /// background is sharp and a shake of a fraction of a pixel makes a frame pixel any mix of the pixels around it;
    /// a level inside their range is the shake, one outside it is the scene changing.
    private mutating func shiftTolerantBackground(_ shift: GlobalShift) {
        let w = width, h = height
        let ix = Int(Float(shift.dx).rounded(.down)), iy = Int(Float(shift.dy).rounded(.down))
        background.withUnsafeBufferPointer { model in
            lowBackground.withUnsafeMutableBufferPointer { low in
                highBackground.withUnsafeMutableBufferPointer { high in
                    for y in 0..<h {
                        let y0 = Swift.min(Swift.max(y - iy - 1, 0), h - 1), y1 = Swift.min(Swift.max(y - iy, 0), h - 1)
                        for x in 0..<w {
                            let x0 = Swift.min(Swift.max(x - ix - 1, 0), w - 1), x1 = Swift.min(Swift.max(x - ix, 0), w - 1)
                            let a = model[y0 * w + x0], b = model[y0 * w + x1], c = model[y1 * w + x0], d = model[y1 * w + x1]
                            let lowest = Swift.min(Swift.min(a, b), Swift.min(c, d))
                            let highest = Swift.max(Swift.max(a, b), Swift.max(c, d))
                            // Scaling and compression do not mix the neighbours exactly: a fifth of the cell's
                            // contrast either side covers what they add at an edge.
                            let slack = (highest - lowest) * Self.shiftSlack
                            low[y * w + x] = lowest - slack
                            high[y * w + x] = highest + slack
                        }
                    }
                }
            }
        }
    }

    /// Grey-level opening with a 2×2 square: erosion (min of the 2×2 block to the lower right) then dilation
    /// (max of the block to the upper left). A pixel survives only as part of a changed 2×2 block.
    private mutating func openResidual() {
        let w = width, h = height
        // Row pointers and whole-row loops without per-pixel edge tests or overflow checks: the compiler vectorises
        // them.
        residual.withUnsafeBufferPointer { r in
            eroded.withUnsafeMutableBufferPointer { e in
                let r = r.baseAddress!, e = e.baseAddress!
                for y in 0..<(h - 1) {
                    let top = r + y * w, below = top + w, out = e + y * w
                    for x in 0..<(w - 1) {
                        out[x] = Swift.min(Swift.min(top[x], top[x &+ 1]), Swift.min(below[x], below[x &+ 1]))
                    }
                    out[w - 1] = 0
                }
                (e + (h - 1) * w).update(repeating: 0, count: w)
            }
        }
        eroded.withUnsafeBufferPointer { e in
            opened.withUnsafeMutableBufferPointer { o in
                let e = e.baseAddress!, o = o.baseAddress!
                o[0] = e[0]
                for x in 1..<w { o[x] = Swift.max(e[x], e[x &- 1]) }
                for y in 1..<h {
                    let row = e + y * w, above = row - w, out = o + y * w
                    out[0] = Swift.max(row[0], above[0])
                    for x in 1..<w {
                        out[x] = Swift.max(Swift.max(row[x], row[x &- 1]), Swift.max(above[x], above[x &- 1]))
                    }
                }
            }
        }
    }

    /// How far beyond the range of a shaken pixel's background cell (a fraction of its contrast) still counts as
    /// the shake.
    static let shiftSlack: Float = 0.2

    /// Keeps each pixel's largest opened residual while warming up.
    private mutating func notePeaks() {
        opened.withUnsafeBufferPointer { o in
            warmUpPeak.withUnsafeMutableBufferPointer { p in
                for i in 0..<o.count { p[i] = Swift.max(p[i], o[i]) }
            }
        }
    }

    /// The warm-up ends: each pixel's activity covers at least the largest change it showed while warming up, so a
    /// change the warm-up already saw (a shaken edge, a tree in wind, a light that flickers) cannot count as motion
    /// on the first report — the warm-up never ends in a trigger by construction. The activity then relaxes as
    /// usual (`activityFallTime`), so a pixel a person happened to cross during the warm-up is back in seconds.
    private mutating func foldWarmUpPeaks() {
        warmUpFolded = true
        let factor = Float(configuration.activityFactor)
        warmUpPeak.withUnsafeBufferPointer { p in
            activity.withUnsafeMutableBufferPointer { a in
                for i in 0..<p.count { a[i] = Swift.max(a[i], Float(p[i]) / factor) }
            }
        }
    }

    /// Fills `edgeNear` with the strongest end of the change within `edgeSupportRadius` of each pixel: how far the
    /// opened residual falls across a pixel, where it falls to less than a third (0 elsewhere). A changed pixel then
    /// counts only as far as an edge near it is strong: a person, a car, an animal has an outline where the change
    /// drops to nothing; the change a headlight sweep or an insect out of focus at the lens makes fades smoothly, and a
    /// light on a textured wall changes both sides of the texture's edges.
    private mutating func findEdges() {
        let w = Int32(width), h = Int32(height), r = Int32(configuration.edgeSupportRadius)
        opened.withUnsafeBufferPointer { o in
            edgeScratch.withUnsafeMutableBufferPointer { e in
                pushav_motion_edge_strength(o.baseAddress!, w, h, e.baseAddress!)
            }
        }
        edgeScratch.withUnsafeBufferPointer { e in
            dilationRows.withUnsafeMutableBufferPointer { rows in
                edgeNear.withUnsafeMutableBufferPointer { n in
                    pushav_motion_dilate(e.baseAddress!, w, h, r, rows.baseAddress!, n.baseAddress!)
                }
            }
        }
    }

    /// `counted` = the opened residual, capped by the strongest edge near the pixel, where it exceeds
    /// `activityFactor` × the pixel's usual flicker (its activity); else 0.
    private mutating func selectCountedPixels() {
        let factor = Float(configuration.activityFactor)
        opened.withUnsafeBufferPointer { o in
            edgeNear.withUnsafeBufferPointer { n in
                activity.withUnsafeBufferPointer { a in
                    counted.withUnsafeMutableBufferPointer { c in
                        pushav_motion_select(o.baseAddress!, n.baseAddress!, a.baseAddress!, factor, Int32(o.count), c.baseAddress!)
                    }
                }
            }
        }
    }

    /// Moves each pixel's activity towards its flicker, the change since the previous analysed picture: up with
    /// `activityRiseTime`, down with `activityFallTime`. Swaying leaves, rain and a shaken edge flicker from picture to
    /// picture and raise it within seconds; a person passes a pixel in a fraction of a second and barely raises it;
    /// a slow mover changes a pixel a little at a time (its difference from the background is large, its flicker is
    /// not), so creeping into view never teaches the detector to ignore it.
    private mutating func updateActivity(_ pixels: [UInt8], previous: [UInt8]?, elapsed: Double, learning: Bool) {
        guard let previous, previous.count == pixels.count else { return }
        // While warming up every pixel takes the mean of its flicker so far: what sways keeps being ignored from the
        // first report on.
        if learning { learnedPictures += 1 }
        let rise = learning ? 1 / Float(learnedPictures) : Float(1 - exp(-elapsed / configuration.activityRiseTime))
        let fall = learning ? rise : Float(1 - exp(-elapsed / configuration.activityFallTime))
        // A lamp or exposure step between the two pictures is not flicker.
        let offset = Float(Self.medianDifference(pixels, previous))
        pixels.withUnsafeBufferPointer { f in
            previous.withUnsafeBufferPointer { p in
                activity.withUnsafeMutableBufferPointer { a in
                    pushav_motion_follow_flicker(f.baseAddress!, p.baseAddress!, offset, rise, fall, Int32(f.count), a.baseAddress!)
                }
            }
        }
    }

    /// A change that covers more than `globalChangeFraction` of the frame, or a third of it spread over at least
    /// 12 of the 16 cells of a 4×4 grid (an IR switch changes everything a little; an object near the lens
    /// changes one area a lot).
    private func isGlobalChange(threshold: Double) -> Bool {
        let w = width, h = height
        let limit = UInt8(Swift.min(threshold.rounded(.down), 255))  // value > threshold ⇔ value > ⌊threshold⌋
        var cellChanged = [Int](repeating: 0, count: 16)
        var changed = 0
        // Column x lies in cell column x · 4 / w: cell column c spans the columns from ⌈c · w / 4⌉ on.
        let columnStarts = (0...4).map { ($0 * w + 3) / 4 }
        rawResidual.withUnsafeBufferPointer { o in
            for y in 0..<h {
                let cellRow = (y * 4 / h) * 4
                let row = o.baseAddress! + y * w
                for c in 0..<4 {
                    // A count of comparisons over a run of columns: it vectorises, a branch per pixel does not.
                    var count = 0
                    for x in columnStarts[c]..<columnStarts[c + 1] { count &+= row[x] > limit ? 1 : 0 }
                    cellChanged[cellRow + c] &+= count
                    changed &+= count
                }
            }
        }
        let total = Double(w * h)
        if Double(changed) > configuration.globalChangeFraction * total { return true }
        guard Double(changed) > total / 3 else { return false }
        let cellArea = total / 16
        return cellChanged.filter { Double($0) > 0.15 * cellArea }.count >= 12
    }

    /// Changed pixels per region and level: counts[region × 11 + level], level 1…10 the lowest sensitivity at
    /// which the pixel counts as changed.
    private func countChanges(_ levelOf: [UInt8]) -> [Int] {
        var counts = [Int](repeating: 0, count: regionAreas.count * 11)
        counted.withUnsafeBufferPointer { o in
            zoneMasks.withUnsafeBufferPointer { masks in
                levelOf.withUnsafeBufferPointer { levels in
                    counts.withUnsafeMutableBufferPointer { counts in
                        for i in 0..<o.count {
                            let level = Int(levels[Int(o[i])])
                            guard level > 0 else { continue }
                            counts[level] &+= 1
                            var mask = masks[i]
                            if mask == 0 {
                                counts[11 + level] &+= 1
                                continue
                            }
                            while mask != 0 {
                                counts[(2 + mask.trailingZeroBitCount) * 11 + level] &+= 1
                                mask &= mask - 1
                            }
                        }
                    }
                }
            }
        }
        return counts
    }

    /// The lowest sensitivity at which a region's changed pixels reach its area threshold.
    ///
    /// The threshold is a fraction of the frame (so an object of a given size counts the same in any zone), but at
    /// most half of the region (so a small zone can still move) and at least `minimumChangedPixels`.
    private func regionMotion(counts: [Int], region: Int) -> RegionMotion {
        let area = regionAreas[region]
        guard area > 0 else { return .still }
        let frameArea = Double(regionAreas[0])
        var changed = 0
        var lowest: Int?
        for level in 1...10 {
            changed += counts[region * 11 + level]
            let fraction = MotionSensitivity.table[level - 1].minimumAreaFraction
            let required = Swift.max(
                Double(Swift.min(configuration.minimumChangedPixels, area)), Swift.min(fraction * frameArea, 0.5 * Double(area)))
            if lowest == nil && Double(changed) >= required { lowest = level }
        }
        return RegionMotion(lowestSensitivity: lowest, changedFraction: Double(changed) / Double(area))
    }

    /// Moves the background towards the frame after applying the global correction, per pixel at the unchanged or
    /// the changed rate.
    private mutating func updateBackground(
        _ pixels: [UInt8], gain: Double, offset: Double, changeThreshold: Double, elapsed: Double, time: Double, isKeyframe: Bool
    ) {
        // Right after a reset the background is one noisy frame and may hold ghosts: converge four times faster.
        let recalibrating = time < recalibratingUntil
        let unchangedConstant = configuration.backgroundTimeConstant / (recalibrating ? 4 : 1)
        let foregroundConstant = recalibrating ? configuration.backgroundTimeConstant : configuration.foregroundTimeConstant
        // A keyframe among analysed non-keyframes may carry the encoder's quality pulse: let it count less.
        let weight = isKeyframe && !lastAnalysedWasKeyframe ? 0.25 : 1.0
        let unchangedRate = Float(weight * (1 - exp(-elapsed / unchangedConstant)))
        let changedRate = Float(weight * (1 - exp(-elapsed / foregroundConstant)))
        let g = Float(gain), o = Float(offset), threshold = Float(changeThreshold)
        pixels.withUnsafeBufferPointer { frame in
            background.withUnsafeMutableBufferPointer { model in
                for i in 0..<frame.count {
                    let predicted = Swift.min(Swift.max(model[i] * g + o, 0), 255)
                    let difference = Float(frame[i]) - predicted
                    let rate = abs(difference) > threshold ? changedRate : unchangedRate
                    model[i] = predicted + rate * difference
                }
            }
        }
    }

    /// Adds one to `histogram[bin(value)]` for every value (``count(pairs:_:into:bin:)`` over the values alone).
    @inline(__always)
    static func count(_ values: UnsafeBufferPointer<UInt8>, into histogram: inout [Int], bin: (UInt8) -> Int) {
        count(pairs: values, values, into: &histogram) { value, _ in bin(value) }
    }

    /// Adds one to `histogram[bin(a[i], b[i])]` for every index of `a` and `b` (same length). Four partial histograms,
    /// one per position modulo 4: most values of a residual fall into a few bins, and consecutive increments of one
    /// counter wait on each other (store-to-load forwarding) where four independent ones do not.
    @inline(__always)
    static func count(
        pairs a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, into histogram: inout [Int],
        bin: (UInt8, UInt8) -> Int
    ) {
        let bins = histogram.count
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 4 * bins) { partial in
            let p = partial.baseAddress!
            p.initialize(repeating: 0, count: 4 * bins)
            let (p0, p1, p2, p3) = (p, p + bins, p + 2 * bins, p + 3 * bins)
            let n = Swift.min(a.count, b.count), x = a.baseAddress!, y = b.baseAddress!
            var i = 0
            while i &+ 4 <= n {
                p0[bin(x[i], y[i])] &+= 1
                p1[bin(x[i &+ 1], y[i &+ 1])] &+= 1
                p2[bin(x[i &+ 2], y[i &+ 2])] &+= 1
                p3[bin(x[i &+ 3], y[i &+ 3])] &+= 1
                i &+= 4
            }
            while i < n {
                p0[bin(x[i], y[i])] &+= 1
                i &+= 1
            }
            for k in 0..<bins { histogram[k] &+= Int(p0[k] &+ p1[k] &+ p2[k] &+ p3[k]) }
        }
    }

    /// `UInt8(value)` for a value in 0…255.5 (truncation toward zero; 255.5 gives 255), without the trapping
    /// conversion: the loops that use it are vectorised. Adding 2²³ leaves round-to-nearest(value) in the low bits
    /// of the sum; one less where that rounded up.
    @inline(__always)
    static func truncatedLevel(_ value: Float) -> UInt8 {
        let shifted = value + 8_388_608
        return UInt8(truncatingIfNeeded: shifted.bitPattern) &- (shifted - 8_388_608 > value ? 1 : 0)
    }

    /// The median bin of a histogram.
    private static func median(_ histogram: [Int]) -> Int {
        let total = histogram.reduce(0, +)
        var seen = 0
        for (bin, count) in histogram.enumerated() {
            seen += count
            if seen * 2 >= total { return bin }
        }
        return histogram.count - 1
    }
}
