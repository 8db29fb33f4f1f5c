import Foundation
import Metrics
import Timeline

/// Why a motion sample or a manual trigger that reached a connection's timeline did not start a recording.
public enum IgnoredTriggerReason: String, Sendable, Hashable, CaseIterable {
    /// Motion inside the blind window after a motion clip (rule 5).
    case blind
    /// Motion at the transport's sensitivity, but not in any of its `motionZones`.
    case zone
    /// The transport is Inactive: the activation runs, nothing is recorded (rule 8).
    case inactive
}

/// The swift-metrics a recording updates where things happen (on the media thread), all labelled `camera`: frames
/// decoded and analysed, analysis time, motion triggers and ignored triggers, clips begun, ended (by `reason`) and
/// dropped, achieved pre-roll, clip-duration error and bytes recorded. Without a bootstrapped metrics backend they
/// cost next to nothing (`pushav record` leaves them unset).
public struct RecordingMetrics: Sendable {
    public let camera: String
    let framesDecoded: Counter
    let framesAnalysed: Counter
    let analysisTime: Metrics.Timer
    let motionTriggers: Counter
    let ignoredTriggers: [IgnoredTriggerReason: Counter]
    let clipsBegun: Counter
    let clipsEnded: [ClipEndReason: Counter]
    let clipsDropped: Counter
    let preRoll: Metrics.Recorder
    let durationError: Metrics.Recorder
    let bytesRecorded: Counter
    /// The camera was moved or knocked (the picture shifted beyond shake): detection started over.
    let cameraMoved: Counter

    public init(camera: String) {
        self.camera = camera
        let dimensions = [("camera", camera)]
        framesDecoded = Counter(label: "pushav_camera_frames_decoded_total", dimensions: dimensions)
        framesAnalysed = Counter(label: "pushav_camera_frames_analysed_total", dimensions: dimensions)
        analysisTime = Metrics.Timer(label: Self.analysisTimeLabel, dimensions: dimensions)
        motionTriggers = Counter(label: "pushav_motion_triggers_total", dimensions: dimensions)
        ignoredTriggers = Dictionary(uniqueKeysWithValues: IgnoredTriggerReason.allCases.map {
            ($0, Counter(label: "pushav_triggers_ignored_total", dimensions: dimensions + [("reason", $0.rawValue)]))
        })
        clipsBegun = Counter(label: "pushav_clips_begun_total", dimensions: dimensions)
        clipsEnded = Dictionary(uniqueKeysWithValues: ClipEndReason.allCases.map {
            ($0, Counter(label: "pushav_clips_ended_total", dimensions: dimensions + [("reason", $0.rawValue)]))
        })
        clipsDropped = Counter(label: "pushav_clips_dropped_total", dimensions: dimensions)
        preRoll = Metrics.Recorder(label: Self.preRollLabel, dimensions: dimensions, aggregate: true)
        durationError = Metrics.Recorder(label: Self.durationErrorLabel, dimensions: dimensions, aggregate: true)
        bytesRecorded = Counter(label: "pushav_recorded_bytes_total", dimensions: dimensions)
        cameraMoved = Counter(label: "pushav_camera_moved_total", dimensions: dimensions)
    }

    /// Histogram of the time one analysed picture takes (luma plane and motion detector).
    public static let analysisTimeLabel = "pushav_camera_analysis_seconds"
    /// Histogram of the pre-roll a clip achieved: its activation time minus its first keyframe, seconds.
    public static let preRollLabel = "pushav_clip_preroll_seconds"
    /// Histogram of how far a clip's written video is from the length its timeline decided, seconds (absolute).
    public static let durationErrorLabel = "pushav_clip_duration_error_seconds"

    /// Buckets for the duration histograms (a backend's `Timer`): analysis takes milliseconds.
    public static let durationBuckets: [String: [Duration]] = [
        analysisTimeLabel: [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                            .milliseconds(10), .milliseconds(20), .milliseconds(50), .milliseconds(100)],
    ]

    /// Buckets for the value histograms, in seconds: pre-roll goes up to MaxPreRollLen (plus a keyframe interval);
    /// a duration error within a frame or two is the norm.
    public static let valueBuckets: [String: [Double]] = [
        preRollLabel: [0, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 15, 30],
        durationErrorLabel: [0.001, 0.02, 0.04, 0.07, 0.1, 0.2, 0.5, 1, 2, 5],
    ]

    func ignored(_ reason: IgnoredTriggerReason) { ignoredTriggers[reason]?.increment() }

    func clipEnded(_ reason: ClipEndReason) { clipsEnded[reason]?.increment() }

    /// A finished session's achieved pre-roll and duration error; `planned` is the length the timeline decided.
    func clipFinished(_ record: SessionRecord, planned: Double) {
        if let preRoll = record.preRoll { self.preRoll.record(preRoll) }
        let written = record.tracks.first { $0.kind == .video }?.segmentDetails.reduce(0) { $0 + $1.duration }
        if let written { durationError.record(abs(written - planned)) }
    }

    /// Counts the bytes of headers and finished segments (chunks are parts of segments: not counted twice).
    func count(_ event: RecordingEvent) {
        switch event {
        case .initSegment(_, _, _, let bytes), .segmentFinished(_, _, _, _, let bytes), .manifest(_, _, _, let bytes):
            bytesRecorded.increment(by: bytes.count)
        case .sessionStarted, .chunk, .sessionFinished, .sessionAbandoned: break
        }
    }
}

extension MotionTriggerFilter {
    /// Whether a zone filter is what ignores `sample`: motion somewhere in the frame at one of the filter's
    /// sensitivities, but in none of its zones.
    func ignoresByZone(_ sample: MotionSample) -> Bool {
        guard let loosest = zones.map(\.sensitivity).max(), let anywhere = sample.anywhere, !matches(sample) else {
            return false
        }
        return anywhere <= loosest
    }
}
