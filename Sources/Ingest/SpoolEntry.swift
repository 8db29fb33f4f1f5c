import Domain
import Foundation

/// A spooled object: where its bytes are and how often upload was tried.
public struct SpoolEntry: Sendable, Hashable {
    public var connection: String
    public var object: UploadObject
    public var bytes: Int
    public var createdAt: Date
    /// Attempts as an older version journalled them (this one counts them in memory only: 0 for new objects).
    public var attempts: Int
    public var delivered: Bool
}

/// Where a session stands in the spool, for reports that must tell a session delivered whole from one the
/// uploader gave part of up.
public enum SessionDelivery: Sendable, Hashable {
    /// The recording has not finished, or objects of it are still waiting to be sent.
    case pending
    /// Finished, and every object of it reached the ingest.
    case delivered
    /// Finished and nothing left to send, but the ingest refused these objects for good and they were given up.
    case givenUp([UploadObject])
}

/// A recording the spool keeps after delivery for the status page (see ``SegmentSpool/keepRecent(_:connection:track:audioTrack:started:owner:)``).
public struct RecentRecording: Sendable, Hashable {
    /// The spool label (destination) its objects are under.
    public var connection: String
    /// `camera/connection`.
    public var owner: String
    public var session: SessionNumber
    /// The video track kept (its audio, if kept, is in ``SegmentSpool/recentFiles(_:owner:)``).
    public var track: TrackName
    public var started: Date
    public var ended: Date?
    public var endReason: String?
    public var triggerType: String?
    /// Seconds from its first picture to its trigger (where its thumbnail is taken).
    public var triggerOffset: Double?
    /// Bytes of its kept tracks on disk so far.
    public var bytes: Int
    /// Its recording ended (the page lists it as a clip).
    public var finished: Bool
}

/// One file of a recent recording: where it is and how many bytes it has.
public struct RecentFile: Sendable, Hashable {
    public var file: URL
    public var bytes: Int

    public init(file: URL, bytes: Int) {
        self.file = file
        self.bytes = bytes
    }
}

/// The files of a recent recording, per track in playing order: the track's header, then its segments by number
/// (each track one CMAF track file).
public struct RecentTracks: Sendable, Hashable {
    public var video: [RecentFile]
    /// Nil when no audio is kept: none was recorded, or the spool kept the recording before it kept audio.
    public var audio: [RecentFile]?

    public init(video: [RecentFile], audio: [RecentFile]?) {
        self.video = video
        self.audio = audio
    }
}

/// One connection's share of the spool, for status pages.
public struct ConnectionQueue: Sendable, Hashable {
    /// Objects not yet delivered.
    public var depth: Int
    /// When the oldest of them was spooled; nil when none waits.
    public var oldestWaiting: Date?

    public init(depth: Int, oldestWaiting: Date? = nil) {
        self.depth = depth
        self.oldestWaiting = oldestWaiting
    }
}

/// What the spool holds, for metrics, logs and the transport model's BUSY answer.
public struct SpoolStatistics: Sendable, Hashable {
    /// Objects not yet delivered.
    public var queueDepth: Int
    /// Bytes on disk (undelivered objects plus headers kept for 412 resends).
    public var bytes: Int
    /// Age of the oldest undelivered object, in seconds (0 when empty).
    public var oldestAge: Double
    /// Whole sessions evicted since this spool was opened.
    public var evictions: Int
}
