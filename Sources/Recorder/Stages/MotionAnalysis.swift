import Domain
import MediaIO
import Motion
import Timeline

/// The motion detector and the detected intervals the report lists.
struct MotionAnalysis {
    private(set) var detector: MotionDetector
    /// Whether `detector` is the previous pass's (``RecordingOptions/motionHandover``), resumed.
    let resumed: Bool
    private let reportSensitivity: Int
    private var intervals: [(start: MediaTime, end: MediaTime)] = []
    private var lastMotion: MediaTime?
    /// The last analysed picture showed the camera moved (not shaken): the detector started over, nothing triggered.
    private(set) var cameraMoved = false
    /// The luma plane analysed (pictures are scaled to exactly this).
    let width: Int
    let height: Int

    /// The camera's zones changed: from the next picture on, motion is located in the new ones.
    mutating func replaceZones(_ zones: [MotionZone]) {
        detector.replaceZones(zones)
    }

    /// Analysis of `video` (zones are in its pixel coordinates), whichever stream the pictures come from.
    init(video: StreamDescription, options: RecordingOptions) throws {
        guard let w = video.width, let h = video.height else { throw MediaError("no video size") }
        // The analysis plane keeps at least 8 pixels a side; a picture narrower than that (a damaged header) has
        // nothing to analyse, and the detector and the sampler would disagree on the plane's size.
        guard w >= 8, h >= 8 else { throw MediaError("video picture \(w)x\(h) is too small to analyse for motion") }
        var config = MotionDetectorConfiguration(sourceWidth: w, sourceHeight: h, sensitivity: options.reportSensitivity,
                                                 zones: options.zones)
        let size = MotionDetectorConfiguration.analysisSize(sourceWidth: w, sourceHeight: h, longSide: options.analysisWidth)
        config.analysisWidth = size.width
        config.analysisHeight = size.height
        config.analysisInterval = options.analysisInterval
        (detector, resumed) = options.motionHandover?.take(for: config) ?? (MotionDetector(configuration: config), false)
        (width, height) = (size.width, size.height)
        reportSensitivity = options.reportSensitivity
    }

    /// Analyses the picture at `time` if the detector wants it (its analysis rate) and returns what moved, or nil.
    mutating func analyse(at time: MediaTime, isKeyframe: Bool, luma: () throws -> LumaImage) throws -> MotionSample? {
        let seconds = time.seconds
        guard detector.wantsFrame(at: seconds) else { return nil }
        let image = try luma()
        guard let result = detector.analyse(LumaPlane(width: image.width, height: image.height, pixels: image.pixels),
                                            at: seconds, isKeyframe: isKeyframe)
        else { return nil }
        cameraMoved = result.cameraMoved
        if result.anywhere.moved(atSensitivity: reportSensitivity) {
            // One interval while motion keeps being seen; a gap of more than a second starts a new one.
            if let last = lastMotion, time - last <= .seconds(1), !intervals.isEmpty {
                intervals[intervals.count - 1].end = time
            } else {
                intervals.append((time, time))
            }
            lastMotion = time
        }
        var zones: [UInt16: Int] = [:]
        for (id, motion) in result.zones { if let s = motion.lowestSensitivity { zones[UInt16(id)] = s } }
        return MotionSample(time: time, anywhere: result.anywhere.lowestSensitivity,
                            outsideZones: result.outsideZones.lowestSensitivity, zones: zones)
    }

    func intervals(origin: MediaTime) -> [RecordingReport.MotionInterval] {
        intervals.map { .init(start: ($0.start - origin).seconds, end: ($0.end - origin).seconds) }
    }
}
