import Domain

/// What a recording emits while it writes, in order, from the media thread. Uploaders subscribe to stream segments
/// chunk by chunk (low latency) instead of waiting for files. Handlers must return quickly (hand the value to an
/// `AsyncStream` or a queue); they run on the thread that reads the camera.
public enum RecordingEvent: Sendable {
    case sessionStarted(session: SessionNumber, start: Double)
    /// A track's CMAF header, written to `path` (relative to the output directory).
    case initSegment(session: SessionNumber, track: TrackName, path: String, bytes: [UInt8])
    /// One CMAF chunk (moof + mdat, with its prft) of the open segment `number` (1001, 1002, …), as soon as it is cut.
    case chunk(session: SessionNumber, track: TrackName, number: Int, bytes: [UInt8])
    /// Segment `number` is complete and written to `path`; `bytes` is the whole segment (all its chunks).
    case segmentFinished(session: SessionNumber, track: TrackName, number: Int, path: String, bytes: [UInt8])
    /// The session's DASH manifest (CMAF Interface-2 only), written to `path` (`session_<N>/index.mpd`): the
    /// dynamic one before the session's first header, the static one after its last segment.
    case manifest(session: SessionNumber, isFinal: Bool, path: String, bytes: [UInt8])
    case sessionFinished(SessionRecord)
    /// The session could not be completed (its writer failed: a full disk, an I/O error). What was emitted of it
    /// stands; its open segment will never be finished, so a live upload of it must be aborted, not completed.
    case sessionAbandoned(session: SessionNumber, reason: String)
}
