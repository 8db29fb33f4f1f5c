import Foundation

/// `report.json`: what was read, what was written, and the exact times of every segment.
public struct RecordingReport: Codable, Sendable {
    public var tool: String = "pushav"
    public var input: InputFacts
    public var options: OptionsEcho
    public var sessions: [SessionRecord]
    /// Set when the input failed part-way; everything listed was finished before the fault and is valid.
    public var error: String?

    public struct InputFacts: Codable, Sendable {
        public var url: String
        public var container: String
        public var duration: Double?
        public var video: StreamFacts?
        public var audio: StreamFacts?
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
        public var trigger: String
        public var segmentDuration: Int
        public var chunkDuration: Int
        public var audio: Bool
    }
}

/// One recorded session (one event clip, or the whole input in continuous mode).
public struct SessionRecord: Codable, Sendable {
    public var session: Int
    /// Seconds on the input's presentation timeline, 0 = its first frame.
    public var start: Double
    public var end: Double
    public var duration: Double
    public var endReason: String
    public var clip: String?
    public var tracks: [TrackRecord]
}

/// One CMAF track of a session.
public struct TrackRecord: Codable, Sendable {
    public var name: String
    public var kind: MediaTrackRole
    /// RFC 6381 codec string read back from the written init segment (`avc1.4d401f`, `mp4a.40.2`, …).
    public var codec: String
    /// The input codec, and whether we had to transcode it.
    public var sourceCodec: String
    public var transcoded: Bool
    public var timescale: Int
    /// Offset of this track's first sample from the session start, in seconds (tfdt of its first segment).
    public var startOffset: Double
    public var `init`: String
    public var segments: [SegmentRecord]
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
