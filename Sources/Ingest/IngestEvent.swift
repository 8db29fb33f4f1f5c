import Domain
import Foundation

/// What a recording hands to the uploader, in the order it happens (mirrors the recorder's `RecordingEvent`, so
/// this module needs no FFmpeg).
public enum IngestEvent: Sendable {
    /// A track's CMAF header.
    case header(session: SessionNumber, track: TrackName, bytes: [UInt8])
    /// One CMAF chunk of the open segment `number`, as soon as it is cut (low-latency streaming).
    case chunk(session: SessionNumber, track: TrackName, number: Int, bytes: [UInt8])
    /// Segment `number` is complete: all its bytes.
    case segment(session: SessionNumber, track: TrackName, number: Int, bytes: [UInt8])
    /// The session's DASH manifest (Interface-2): dynamic before its first header, static (`isFinal`) after its last
    /// segment.
    case manifest(session: SessionNumber, isFinal: Bool, bytes: [UInt8])
    case sessionFinished(session: SessionNumber)
    /// The session's writer failed: its open segments will never be finished. Their live uploads are aborted (never
    /// completed as truncated objects); what was spooled of the session is still delivered.
    case sessionAbandoned(session: SessionNumber)
    /// A recording kept for the status page (``SegmentSpool/keepRecent(_:connection:track:audioTrack:started:owner:)``) ended:
    /// what the page shows of it; nil when it produced nothing (dropped), so it is not kept.
    case recentFinished(session: SessionNumber, RecentSummary?)

    /// The session the event belongs to.
    public var session: SessionNumber {
        switch self {
        case .header(let session, _, _), .chunk(let session, _, _, _), .segment(let session, _, _, _),
             .manifest(let session, _, _), .sessionFinished(let session), .sessionAbandoned(let session),
             .recentFinished(let session, _):
            session
        }
    }
}

/// How a recent recording ended, for the status page.
public struct RecentSummary: Sendable, Hashable {
    public var ended: Date
    public var endReason: String?
    public var triggerType: String?
    /// Seconds from its first picture to its trigger.
    public var triggerOffset: Double?

    public init(ended: Date, endReason: String? = nil, triggerType: String? = nil, triggerOffset: Double? = nil) {
        self.ended = ended
        self.endReason = endReason
        self.triggerType = triggerType
        self.triggerOffset = triggerOffset
    }
}
