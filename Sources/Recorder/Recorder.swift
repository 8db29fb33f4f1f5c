import CMAF
import Domain
import Foundation
import Logging
import MediaIO
import Motion
import Timeline

/// How one transport connection turns media into clips: its trigger, time control, pre-roll and motion filter.
///
/// The resolved form of a transport's `TransportTriggerOptionsStruct` (``init(transport:zones:output:continuousSessionLength:)``
/// makes it): the wire struct keeps what the cluster needs to validate and echo a request (absent vs null fields,
/// per-zone or global sensitivity); this one holds only decisions — the ``ClipTimeline`` configuration, the pre-roll
/// length and the motion filter with every sensitivity resolved.
public struct ClipPolicy: Sendable {
    /// Trigger type, time control and continuous session length: exactly what the connection's ``ClipTimeline`` runs on.
    public var timeline: ClipTimeline.Configuration
    /// MaxPreRollLen; zero for none.
    public var maxPreRoll: MediaTime
    /// Which motion samples activate this transport (rule 1: zones and sensitivity).
    public var motionFilter: MotionTriggerFilter
    /// Where this connection's sessions go (`session_<N>/…`, `clips/…`).
    public var output: URL
    /// The first session number to use; session numbers only ever increase per connection.
    public var firstSession: SessionNumber
    /// A live transport connection: the cluster numbers and announces its sessions, and its bytes go to its own
    /// uploader (instead of the recording's `events`). Its records are handed over, not kept in the report.
    public var hooks: SessionHooks?
    /// This connection's CMAF options and track names, when they differ from the recording's.
    public var format: SessionFormat?

    public var trigger: TriggerType {
        get { timeline.trigger }
        set { timeline.trigger = newValue }
    }

    /// The configured `motionTimeControl` (Matter's defaults for a transport without one).
    public var timeControl: ClipTimeControl {
        get { timeline.motionTimeControl ?? .matterDefaults }
        set { timeline.motionTimeControl = newValue }
    }

    /// Continuous transports start a new CMAF session this often (cut at a keyframe).
    public var continuousSessionLength: MediaTime {
        get { timeline.continuousSessionLength }
        set { timeline.continuousSessionLength = newValue }
    }

    public init(
        trigger: TriggerType, timeControl: ClipTimeControl = .matterDefaults, maxPreRoll: MediaTime = .milliseconds(4000),
        motionFilter: MotionTriggerFilter = MotionTriggerFilter(sensitivity: 5),
        continuousSessionLength: MediaTime = .seconds(300), output: URL, firstSession: SessionNumber = 1
    ) {
        self.timeline = ClipTimeline.Configuration(trigger: trigger, motionTimeControl: timeControl,
                                                   continuousSessionLength: continuousSessionLength)
        self.maxPreRoll = maxPreRoll
        self.motionFilter = motionFilter
        self.output = output
        self.firstSession = firstSession
    }

    /// Records the whole input as one session (rule 7 with a session length no file reaches).
    public static func wholeInput(output: URL, firstSession: SessionNumber = 1) -> ClipPolicy {
        ClipPolicy(trigger: .continuous, maxPreRoll: .zero, continuousSessionLength: .seconds(Int64(Int32.max)),
                   output: output, firstSession: firstSession)
    }
}

/// What to record and how to cut it.
public struct RecordingOptions: Sendable {
    /// Where report.json goes (and the sessions, for the default policy).
    public var output: URL
    /// One entry per transport connection fed from the same demuxed packets. Default: the whole input as one session.
    public var policies: [ClipPolicy]
    public var segmentDuration: MediaTime = .milliseconds(4000)
    /// nil or zero: no chunks (Matter ChunkDuration 0).
    public var chunkDuration: MediaTime? = nil
    public var includeAudio = true
    public var trackNames = TrackNames()
    public var writeClips = true
    /// CMAF Interface-2 DASH: write (and emit) each session's `index.mpd`.
    public var dashManifest = false
    /// Common Encryption (`cenc`) of the CMAF tracks, local and uploaded alike; the playable clip stays clear.
    public var encryption: CommonEncryption? = nil
    /// Motion zones known to the camera (polygons in the video's pixel coordinates).
    public var zones: [MotionZone] = []
    /// Zone Management's triggers: which zones report ZoneTriggered/ZoneStopped (through ``zoneEvents``).
    public var zoneTriggers: [ZoneTrigger] = []
    /// Receives each zone's ZoneTriggered/ZoneStopped as analysis finds it, on the media thread (return at once).
    /// A pass that ends stops every zone still triggered.
    public var zoneEvents: (@Sendable (ZoneEvent) -> Void)? = nil
    /// Sensitivity the report's motion intervals are listed at (transports each apply their own).
    public var reportSensitivity = 5
    /// Width of the luma plane motion is analysed on (height follows the aspect ratio).
    public var analysisWidth = 160
    /// Seconds between analysed pictures; 0 analyses every decoded picture, so an activation time t0 is the first
    /// picture that shows the motion, not the next 5 Hz tick (clip ends are t0 + D: frame accuracy starts here).
    public var analysisInterval = 0.0
    /// Analyse key pictures only: one decode per GOP instead of one per reference picture, for low-power hosts. Motion
    /// is then seen up to one keyframe interval late, so clips begin up to that much later (their pre-roll still
    /// reaches back to the keyframe before).
    public var analyseKeyframesOnly = false
    /// Analyse motion on this stream instead of the recorded one (a camera's low-resolution substream): the recorded
    /// stream is then only copied, never decoded. Ignored when no connection needs motion.
    public var analysisSource: AnalysisSource? = nil
    /// Upper bound of the pre-roll buffer's memory. Packets an open clip still needed that it pushes out are logged
    /// and counted in the report (`preRollBuffer.droppedPackets`).
    public var preRollByteLimit = 48 << 20
    /// Demuxer/protocol options (e.g. `rtsp_transport=tcp`).
    public var inputOptions: [String: String] = [:]
    /// Receives every init segment, chunk and finished segment as it is written (see ``RecordingEvent``).
    public var events: (@Sendable (RecordingEvent) -> Void)? = nil
    /// Connections attached, triggered and detached while the recording runs (`pushav serve`).
    public var control: RecordingControl? = nil
    /// Analyse motion even when no policy has a Motion trigger yet (a live camera's connections come later).
    public var alwaysAnalyseMotion = false
    /// Read no faster than real time (a file standing in for a camera), as `ffmpeg -re` does.
    public var paceRealTime = false
    /// Counters and histograms to update as frames, triggers and clips happen (`pushav serve`, per camera).
    public var metrics: RecordingMetrics? = nil
    /// Keep the latest analysed picture (by reference, no second decode): snapshots are asked for and answered
    /// through this, and a connection whose format asks for thumbnails (``SessionFormat/thumbnails``) gets a JPEG of
    /// the picture at each trigger with its Begin request. nil (`pushav record`): no picture is kept.
    public var snapshots: SnapshotRequests? = nil
    /// Passes of the same camera share one: each goes on with the motion detector the previous one left (no new
    /// warm-up after a reconnect). nil (`pushav record`, one pass): a new detector.
    public var motionHandover: MotionDetectorHandover? = nil

    /// The sessions' format where a policy has none of its own.
    public var sessionFormat: SessionFormat {
        SessionFormat(segmentDuration: segmentDuration, chunkDuration: chunkDuration, trackNames: trackNames,
                      includeAudio: true, writeClips: writeClips,
                      dashManifest: dashManifest, encryption: encryption)
    }

    public init(output: URL, policies: [ClipPolicy]? = nil) {
        self.output = output
        self.policies = policies ?? [.wholeInput(output: output)]
    }
}

/// Progress of a long recording, reported about once a second.
public struct RecordingProgress: Sendable {
    /// Seconds of input read so far, 0 = the first video frame.
    public var position: Double
    /// Input duration, if known.
    public var duration: Double?
    /// Sessions finished or open so far.
    public var sessions: Int
}

/// Reads an input once and records it as CMAF sessions.
public enum Recorder {
    /// Records `input` with `options.policies`. Runs the FFmpeg work on a dedicated thread; cancelling the task
    /// interrupts it. A read error part-way (a truncated file, a dropped stream) still closes every open clip so each
    /// segment written stays valid: the call then throws ``RecordingFailure`` carrying the partial report.
    ///
    /// `stop` ends the recording normally instead (the only way a live input ends): open clips end at the last frame
    /// read with end reason `interrupted` and the report is returned. Stopped before the input opened, it throws
    /// ``RecordingStoppedBeforeStart``.
    public static func record(
        input url: String, options: RecordingOptions, stop: RecordingStop? = nil,
        logger: Logger = Logger(label: "pushav.recorder"), progress: (@Sendable (RecordingProgress) -> Void)? = nil
    ) async throws -> RecordingReport {
        let interrupt = InterruptFlag()
        let stop = stop ?? RecordingStop()
        stop.attach(interrupt)
        defer { stop.detach(interrupt) }
        return try await MediaThread.run(name: "pushav-record", interrupt: interrupt) {
            try RecordingPipeline(url: url, options: options, interrupt: interrupt, stop: stop, logger: logger,
                                  progress: progress).run()
        }
    }

    /// Records the whole input as one continuous session.
    public static func recordContinuous(
        input url: String, options: RecordingOptions, stop: RecordingStop? = nil,
        logger: Logger = Logger(label: "pushav.recorder"), progress: (@Sendable (RecordingProgress) -> Void)? = nil
    ) async throws -> RecordingReport {
        var options = options
        options.policies = [.wholeInput(output: options.output, firstSession: options.policies.first?.firstSession ?? 1)]
        return try await record(input: url, options: options, stop: stop, logger: logger, progress: progress)
    }
}

/// A recording that failed part-way: `report` lists what was completed before `underlying` happened.
public struct RecordingFailure: Error, Sendable, CustomStringConvertible {
    public let underlying: any Error
    public let report: RecordingReport?
    public var description: String { "\(underlying)" }
}
