import Domain
import Foundation
import MediaIO
import Timeline

/// `report.json`: what was read, what was written, and the exact times of every segment.
public struct RecordingReport: Codable, Sendable {
    public var tool: String = "pushav"
    public var input: InputFacts
    public var options: OptionsEcho
    /// Every recorded clip (session), in start order.
    public var sessions: [SessionRecord]
    /// Motion the detector saw at the report sensitivity, seconds on the input timeline.
    public var motion: [MotionInterval] = []
    /// Memory the pre-roll buffer held at most, and what its byte limit pushed out of clips.
    public var preRollBuffer: BufferUse?
    /// Clips a trigger activated that could not be recorded (no usable keyframe); empty when none was lost.
    public var droppedClips: [DroppedClip] = []
    /// Keyframe intervals after the first that were longer than the shortest MaxPreRollLen (clips then get a longer
    /// pre-roll; the first interval is the stream's own and a MaxPreRollLen below it is refused).
    public var longKeyframeIntervals = LongKeyframeIntervals()
    /// The stream motion was analysed on, when it was not the recorded one.
    public var analysisSource: AnalysisSourceUse?
    /// Set when the input failed part-way; everything listed was finished before the fault and is valid.
    public var error: String?
    /// Set when the recording was stopped on request (``RecordingStop``: Ctrl-C, SIGTERM): where on the input
    /// timeline it stopped. Clips still open then end there with `endReason` `interrupted`.
    public var stoppedAt: Double?

    public struct AnalysisSourceUse: Codable, Sendable {
        public var url: String
        /// Pictures decoded from it (each a candidate for analysis at the detector's rate).
        public var pictures: Int
        /// Pictures dropped at the reader's queue bound because the recording did not take them (a stalled main stream).
        public var droppedPictures: Int
        /// Seconds between a picture's time and the main-stream frame it was applied at, at most.
        public var largestLag: Double
    }

    public struct MotionInterval: Codable, Sendable, Equatable {
        public var start: Double
        public var end: Double
    }

    public struct BufferUse: Codable, Sendable {
        public var peakBytes: Int
        public var peakPackets: Int
        /// Seconds of media it keeps behind the newest packet (MaxPreRollLen + 2 keyframe intervals).
        public var retention: Double
        /// Packets (and their bytes) that open clips still needed when the byte limit pushed them out: those clips
        /// miss frames.
        public var droppedPackets = 0
        public var droppedBytes = 0
        /// Session numbers of the clips that lost packets.
        public var affectedSessions: [SessionNumber] = []
    }

    /// A clip that was activated but not recorded.
    public struct DroppedClip: Codable, Sendable {
        /// t0, seconds on the report timeline.
        public var trigger: Double
        /// `motion`, `command` or `continuous`.
        public var triggerType: String
        /// The connection's output directory.
        public var output: String
        public var reason: String
        /// The session number it had been given, when it was begun and then lost every frame (its headers are removed;
        /// the number is not used again).
        public var session: SessionNumber? = nil
    }

    public struct LongKeyframeIntervals: Codable, Sendable {
        /// How many times the input went longer than `limit` without a keyframe.
        public var count = 0
        /// The longest of those gaps, seconds (up to the end of the input if it never got a keyframe again).
        public var longest: Double?
        /// The shortest MaxPreRollLen of the recording's transports, seconds; nil when none has a pre-roll.
        public var limit: Double?
    }

    public struct PolicyEcho: Codable, Sendable {
        public var trigger: String
        public var initial: Double
        public var augmentation: Double
        public var maxDuration: Double
        public var blind: Double
        public var preRoll: Int
        public var sensitivity: Int
        public var zones: [Int?]
        public var output: String

        init(_ p: ClipPolicy) {
            trigger = p.trigger.rawValue
            initial = p.timeControl.initialDuration.seconds
            augmentation = p.timeControl.augmentationDuration.seconds
            maxDuration = p.timeControl.maxDuration.seconds
            blind = p.timeControl.blindDuration.seconds
            preRoll = Int(p.maxPreRoll.converted(to: 1000).value)
            sensitivity = p.motionFilter.sensitivity
            zones = p.motionFilter.zones.map { $0.zone.map(Int.init) }
            output = p.output.path
        }
    }

    public struct InputFacts: Codable, Sendable {
        public var url: String
        public var container: String
        public var duration: Double?
        public var video: StreamFacts?
        public var audio: StreamFacts?
        /// Packets dropped and timestamps repaired because the input was damaged (all zero for a clean input).
        public var damage = DamageFacts()
    }

    /// What ``TimestampRepair`` did to the input, and what a bitstream filter or transcoder could not use, so no loss
    /// goes unseen.
    public struct DamageFacts: Codable, Sendable {
        /// Packets (or decoded frames) dropped: duplicates, a decode time going backwards, no timestamp at all.
        public var droppedPackets = 0
        /// Timestamps corrected on packets that were kept (outliers, discontinuities, PTS before DTS, missing ones).
        public var repairedTimestamps = 0
        /// The same two counts by reason (`video.decodeTimeNotIncreasing`, `audio.outlier`, `audio.unusable`, …).
        public var dropped: [String: Int] = [:]
        public var repaired: [String: Int] = [:]

        public init() {}

        init<P>(video: TimestampRepair<P>, audio: TimestampRepair<P>, conditionerDrops: (video: Int, audio: Int)) {
            for (stream, repair) in [("video", video), ("audio", audio)] {
                for (problem, n) in repair.dropped { dropped["\(stream).\(problem.rawValue)"] = n }
                for (problem, n) in repair.repaired { repaired["\(stream).\(problem.rawValue)"] = n }
            }
            // What a bitstream filter rejected or a transcoder could not encode.
            if conditionerDrops.video > 0 { dropped["video.unusable"] = conditionerDrops.video }
            if conditionerDrops.audio > 0 { dropped["audio.unusable"] = conditionerDrops.audio }
            droppedPackets = dropped.values.reduce(0, +)
            repairedTimestamps = repaired.values.reduce(0, +)
        }
    }

    public struct StreamFacts: Codable, Sendable {
        public var index: Int
        public var codec: String
        public var profile: String?
        public var timeBase: String
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        public var sampleRate: Int?
        public var channels: Int?
        public var bitRate: Int64?
    }

    public struct OptionsEcho: Codable, Sendable {
        public var policies: [PolicyEcho]
        public var segmentDuration: Int
        public var chunkDuration: Int
        public var audio: Bool
    }
}

/// One recorded session (one event clip, or the whole input in continuous mode).
public struct SessionRecord: Codable, Sendable {
    public var session: SessionNumber
    /// Activation time t0 (seconds on the input's presentation timeline, 0 = its first frame, like every time here).
    public var trigger: Double?
    /// `motion`, `command` or `continuous` (the Begin event's TriggerType).
    public var triggerType: String?
    /// First frame of the clip: the keyframe the pre-roll rule chose.
    public var start: Double
    /// Exclusive end: t0 + the final MotionDetectedDuration, or where the input ended.
    public var end: Double
    public var duration: Double
    /// t0 − start.
    public var preRoll: Double?
    /// The final D (nil for continuous recordings).
    public var motionDetectedDuration: Double?
    public var augmentations: Int?
    /// `motionDetectedDuration`, `maxDuration`, `endOfInput`, `interrupted` (or `sessionLength`, `transportInactive`).
    public var endReason: String
    public var clip: String?
    public var tracks: [TrackRecord]
}

/// One CMAF track of a session.
public struct TrackRecord: Codable, Sendable {
    public var name: TrackName
    public var kind: MediaKind
    /// RFC 6381 codec string read back from the written init segment (`avc1.4d401f`, `mp4a.40.2`, …).
    public var codec: String
    /// The input codec, and whether we had to transcode it.
    public var sourceCodec: String
    public var transcoded: Bool
    public var timescale: Int
    /// Offset of this track's first sample from the session start, in seconds (tfdt of its first segment).
    public var startOffset: Double
    public var `init`: String
    /// Segment files, relative to the output directory, in order.
    public var segments: [String]
    /// Each segment's times, read back from its boxes.
    public var segmentDetails: [SegmentRecord]
    /// Packets this track refused because their decode time did not increase in its timescale (absent when none).
    public var droppedPackets: Int?
    /// Segments whose presentation times were shifted to keep the session's composition offset (absent when none).
    public var repairedTimestamps: Int?
}

/// One written segment file.
public struct SegmentRecord: Codable, Sendable {
    public var path: String
    public var number: Int
    /// Seconds on the input timeline.
    public var start: Double
    public var duration: Double
    /// Decode time of the first sample, in track timescale ticks (tfdt).
    public var baseMediaDecodeTime: Int64
    public var durationTicks: Int64
    public var samples: Int
    public var chunks: Int
    public var bytes: Int
}

extension SessionRecord {
    init(session: SessionNumber, start: Double, end: Double, duration: Double, endReason: String, clip: String?, tracks: [TrackRecord]) {
        self.init(session: session, trigger: nil, triggerType: nil, start: start, end: end, duration: duration,
                  preRoll: nil, motionDetectedDuration: nil, augmentations: nil, endReason: endReason, clip: clip,
                  tracks: tracks)
    }

    /// Moves times from the input's raw timestamps to the report timeline (0 = the input's first video frame).
    mutating func rebase(to origin: MediaTime) {
        let o = origin.seconds
        start -= o
        end -= o
        trigger = trigger.map { $0 - o }
        for t in tracks.indices {
            for s in tracks[t].segmentDetails.indices { tracks[t].segmentDetails[s].start += start }
        }
    }
}

extension RecordingReport.StreamFacts {
    init(_ s: StreamDescription) {
        self.init(index: s.index, codec: s.codec, profile: s.profile, timeBase: s.timeBase.description, width: s.width,
                  height: s.height, frameRate: s.frameRate, sampleRate: s.sampleRate, channels: s.channels,
                  bitRate: s.bitRate)
    }
}
