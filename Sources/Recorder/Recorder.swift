import Foundation
import Logging
import MediaIO
import Motion
import Timeline

/// How one transport connection turns media into clips: its trigger, time control, pre-roll and motion filter.
public struct ClipPolicy: Sendable {
    public var trigger: ClipTrigger
    public var timeControl: ClipTimeControl
    /// MaxPreRollLen; zero for none.
    public var maxPreRoll: MediaTime
    /// Which motion samples activate this transport (rule 1: zones and sensitivity).
    public var motionFilter: MotionTriggerFilter
    /// Continuous transports start a new CMAF session this often (cut at a keyframe).
    public var continuousSessionLength: MediaTime
    /// Where this connection's sessions go (`session_<N>/…`, `clips/…`).
    public var output: URL
    /// The first session number to use; session numbers only ever increase per connection.
    public var firstSession: Int

    public init(
        trigger: ClipTrigger, timeControl: ClipTimeControl = .matterDefaults, maxPreRoll: MediaTime = .milliseconds(4000),
        motionFilter: MotionTriggerFilter = MotionTriggerFilter(sensitivity: 5),
        continuousSessionLength: MediaTime = .seconds(300), output: URL, firstSession: Int = 1
    ) {
        self.trigger = trigger
        self.timeControl = timeControl
        self.maxPreRoll = maxPreRoll
        self.motionFilter = motionFilter
        self.continuousSessionLength = continuousSessionLength
        self.output = output
        self.firstSession = firstSession
    }

    /// Records the whole input as one session (rule 7 with a session length no file reaches).
    public static func wholeInput(output: URL, firstSession: Int = 1) -> ClipPolicy {
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
    public var videoTrackName = "video"
    public var audioTrackName = "audio"
    public var writeClips = true
    /// Motion zones known to the camera (polygons in the video's pixel coordinates).
    public var zones: [MotionZone] = []
    /// Sensitivity the report's motion intervals are listed at (transports each apply their own).
    public var reportSensitivity = 5
    /// Width of the luma plane motion is analysed on (height follows the aspect ratio).
    public var analysisWidth = 160
    /// Seconds between analysed pictures; 0 analyses every decoded picture, so an activation time t0 is the first
    /// picture that shows the motion, not the next 5 Hz tick (clip ends are t0 + D: frame accuracy starts here).
    public var analysisInterval = 0.0
    /// Upper bound of the pre-roll buffer's memory. Packets an open clip still needed that it pushes out are logged
    /// and counted in the report (`preRollBuffer.droppedPackets`).
    public var preRollByteLimit = 48 << 20
    /// Demuxer/protocol options (e.g. `rtsp_transport=tcp`).
    public var inputOptions: [String: String] = [:]
    /// Receives every init segment, chunk and finished segment as it is written (see ``RecordingEvent``).
    public var events: (@Sendable (RecordingEvent) -> Void)? = nil

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
    public static func record(
        input url: String, options: RecordingOptions, logger: Logger = Logger(label: "pushav.recorder"),
        progress: (@Sendable (RecordingProgress) -> Void)? = nil
    ) async throws -> RecordingReport {
        let interrupt = InterruptFlag()
        return try await MediaThread.run(name: "pushav-record", interrupt: interrupt) {
            try RecordingPipeline(url: url, options: options, interrupt: interrupt, logger: logger, progress: progress).run()
        }
    }

    /// Records the whole input as one continuous session.
    public static func recordContinuous(
        input url: String, options: RecordingOptions, logger: Logger = Logger(label: "pushav.recorder"),
        progress: (@Sendable (RecordingProgress) -> Void)? = nil
    ) async throws -> RecordingReport {
        var options = options
        options.policies = [.wholeInput(output: options.output, firstSession: options.policies.first?.firstSession ?? 1)]
        return try await record(input: url, options: options, logger: logger, progress: progress)
    }
}

/// A recording that failed part-way: `report` lists what was completed before `underlying` happened.
public struct RecordingFailure: Error, Sendable, CustomStringConvertible {
    public let underlying: any Error
    public let report: RecordingReport?
    public var description: String { "\(underlying)" }
}
