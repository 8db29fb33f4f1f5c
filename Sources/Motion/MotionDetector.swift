import CLumaKernels
import Domain
import Foundation  // exp() for time constants; nothing in the per-pixel loops

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
/// the change drops to under a third is strong and brings contrast of its own (a headlight, an insect out of focus
/// fade smoothly and only scale the scene's own texture; a person, a car has an outline), and only where its change
/// exceeds three times its usual flicker between analysed pictures
/// (leaves, rain, a shaken edge flicker all the time; a person passes a pixel in a fraction of a second, a slow mover
/// changes it little per picture); (6) count those pixels per region and per sensitivity level and test them
/// against the area thresholds — from Medium up also a smaller, fainter figure near a clear outline seen in two
/// pictures in a row, which codec blocks never are (above Medium faint change counts only that way); (7) blend the
/// frame into the background: fast where nothing changed, slowly where something did, so a parked object fades into
/// the background while a slow mover leaves a trail long enough to detect. The first `warmUpDuration` of a stream only learns (background, noise, flicker).
public struct MotionDetector: Sendable {
    public private(set) var configuration: MotionDetectorConfiguration
    public var width: Int { configuration.analysisWidth }
    public var height: Int { configuration.analysisHeight }

    var background: [Float] = []
    /// Bit z set: the pixel is inside zone `zoneIDs[z]`.
    var zoneMasks: [UInt64]
    var zoneIDs: [ZoneID]
    var zoneSensitivities: [Int]
    /// Pixel counts: [anywhere, outside, zone 0, zone 1, …].
    var regionAreas: [Int]
    var noiseSigma: Double = 0
    var lastAnalysedTime: Double?
    var lastAnalysedWasKeyframe = false
    var recalibratingUntil: Double = -.infinity
    /// Until then (a stream's first `warmUpDuration`) each pixel's activity learns the mean of its flicker and nothing
    /// is reported.
    var warmingUpUntil: Double = -.infinity
    /// Pictures whose flicker the warm-up has averaged so far.
    var learnedPictures = 0
    /// How much warm-up the next stream's first picture starts: `warmUpDuration` for a new detector, what is left of
    /// it after ``resumeAfterGap()`` (0 once a stream has warmed it up).
    var pendingWarmUp: Double
    /// Recently analysed pictures (time, pixels), oldest first, spanning a little more than `motionWindow`.
    var recent: [(time: Double, pixels: [UInt8])] = []
    // Scratch buffers, kept to avoid allocating per frame.
    var residual: [UInt8]
    /// |frame − background| without the short-term gate: global changes and noise are measured on it.
    var rawResidual: [UInt8]
    var eroded: [UInt8]
    var opened: [UInt8]
    var roundedBackground: [UInt8]
    /// Per pixel: how much it usually flickers from one analysed picture to the next (rises in seconds, falls in tens
    /// of seconds). Foliage, water and shaken edges flicker all the time; a pixel counts only where its change from
    /// the background is well beyond that.
    var activity: [Float]
    /// The strongest end of the change within `edgeSupportRadius` pixels (see `findEdges`).
    var edgeNear: [UInt8]
    /// `edgeNear` for the persistent outline (Medium and above): outlines that stand out from what a light explains by
    /// `strictOutlineMargin` more.
    var strictEdgeNear: [UInt8]
    /// The previous analysed picture's `strictEdgeNear` (zeros after a reset): where a persistent outline must have
    /// been near as well.
    var previousEdgeNear: [UInt8]
    /// `counted` where the previous picture's outline was near too.
    var persistentCounted: [UInt8]
    /// The background as the photometric fit predicts this frame (whole levels), for the light test of `findEdges`.
    var predictedBackground: [UInt8]
    /// Each pixel's own edge strength, before the dilation into `edgeNear`, and its strict one (into `strictEdgeNear`).
    var edgeScratch: [UInt8]
    var strictEdgeScratch: [UInt8]
    /// The dilation's row maxima.
    var dilationRows: [UInt8]
    /// The opened residual of the pixels that count (unusual and edge-supported), 0 elsewhere.
    var counted: [UInt8]
    /// Measures camera shake against the background.
    var shiftEstimator: GlobalShiftEstimator
    /// The frame brought into the background's place.
    var aligned: [UInt8]
    /// Per pixel, the largest opened residual the warm-up saw; folded into `activity` when it ends, so nothing the
    /// warm-up saw counts as motion the moment it ends (see `foldWarmUpPeaks()`).
    var warmUpPeak: [UInt8]
    var warmUpFolded = true
    /// Per pixel, the range of the background around where a shaken frame's pixel came from.
    var lowBackground: [Float]
    var highBackground: [Float]

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
        previousEdgeNear = residual
        strictEdgeNear = residual
        strictEdgeScratch = residual
        persistentCounted = residual
        edgeScratch = residual
        predictedBackground = residual
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
        forgetOutlines()
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
    static func regions(of configuration: MotionDetectorConfiguration)
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
            forgetOutlines()
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
        findEdges(pixels, reference: recent.count > 1 ? reference : nil, gain: gain, offset: offset, tolerance: noiseFloor)
        selectCountedPixels()
        let counts = countChanges(counted, levelOf)
        let persistentCounts = countChanges(selectPersistentPixels(), levelOf)
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
        let regions = (0..<regionAreas.count).map { region in
            regionMotion(counts: counts, persistentCounts: persistentCounts, region: region)
        }
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
}
