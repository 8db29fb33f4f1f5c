import Domain

/// Decides where one session's CMAF segments and chunks are cut, from its video frames in decode order.
///
/// Rules (our reference README, "Segments"): the first segment starts at the session start, a keyframe; each next
/// segment starts at the first random-access frame at or after (previous start + segmentDuration), so a GOP that does
/// not divide the segment duration makes segments slightly longer, never shorter. With a chunk duration, a new chunk
/// (moof + mdat) starts at the first frame at or after each chunk boundary of the current segment; only a segment's
/// first chunk starts with a keyframe.
public struct SegmentPlanner: Sendable {
    public enum Cut: Sendable, Equatable {
        /// Keep writing into the open chunk.
        case none
        /// Close the open chunk; the frame starts the next chunk of the same segment.
        case chunk
        /// Close the open segment; the frame starts the next segment.
        case segment
    }

    public let segmentDuration: MediaTime
    /// `nil` when chunks are not used (Matter ChunkDuration 0).
    public let chunkDuration: MediaTime?
    /// Start of the open segment (presentation time of its first keyframe); nil before the first frame.
    public private(set) var segmentStart: MediaTime?
    private var nextChunkBoundary: MediaTime?

    public init(segmentDuration: MediaTime, chunkDuration: MediaTime? = nil) {
        precondition(segmentDuration > .zero, "segment duration must be positive")
        self.segmentDuration = segmentDuration
        self.chunkDuration = chunkDuration.flatMap { $0 > .zero && $0 < segmentDuration ? $0 : nil }
    }

    /// Places the next video frame (decode order) and says which cut, if any, must happen before it is written.
    /// The first frame of a session must be a random-access frame; it opens the first segment without a cut.
    public mutating func place(presentationTime t: MediaTime, isRandomAccess: Bool) -> Cut {
        guard let start = segmentStart else {
            precondition(isRandomAccess, "a session starts on a random-access frame")
            open(segmentAt: t)
            return .none
        }
        if isRandomAccess && t >= start + segmentDuration {
            open(segmentAt: t)
            return .segment
        }
        if let boundary = nextChunkBoundary, let chunk = chunkDuration, t >= boundary {
            // Skip boundaries this frame already passed (a chunk shorter than a frame interval).
            var next = boundary + chunk
            while next <= t { next = next + chunk }
            nextChunkBoundary = next
            return .chunk
        }
        return .none
    }

    private mutating func open(segmentAt t: MediaTime) {
        segmentStart = t
        nextChunkBoundary = chunkDuration.map { t + $0 }
    }
}
