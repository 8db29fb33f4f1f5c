import CMAF
import Foundation
import MediaIO
import Motion
import Synchronization
import Timeline
import TransportModel

/// How one transport connection's recordings are numbered, announced and delivered while a live recording runs:
/// the cluster's side of each session. Every hook is called on the media thread, so each must return at once (hand
/// the work to a queue); none may wait for the cluster.
public struct SessionHooks: Sendable {
    /// A recording is about to open: send the cluster its Begin and answer through `request` — at once or later,
    /// from any thread (the media thread never waits for the cluster: it keeps reading, and opens the session when
    /// the answer arrives). A refused recording is a dropped clip (logged and counted), never recorded unannounced.
    public var begin: @Sendable (BeginRequest) -> Void
    /// The input ended before `request`'s answer was seen: if the cluster accepted it, that session's End is owed.
    /// Must be applied after `request`'s own `begin` (the engine sends both through one ordered queue).
    public var withdraw: @Sendable (BeginRequest) -> Void
    /// The timeline ended session `session` (its End): nothing after this point belongs to it, and the next
    /// recording may begin at once; its last frames are still being written.
    public var end: @Sendable (_ session: Int) -> Void
    /// Session finished writing: every byte of it has been handed to `events` (a session none of whose frames could
    /// be written, or that was abandoned, comes with no tracks; it is also a dropped clip in the report).
    public var finished: @Sendable (SessionRecord) -> Void
    /// Every init segment, chunk and segment of this connection's sessions, in order.
    public var events: @Sendable (RecordingEvent) -> Void

    public init(begin: @escaping @Sendable (BeginRequest) -> Void, withdraw: @escaping @Sendable (BeginRequest) -> Void,
                end: @escaping @Sendable (Int) -> Void, finished: @escaping @Sendable (SessionRecord) -> Void,
                events: @escaping @Sendable (RecordingEvent) -> Void) {
        self.begin = begin
        self.withdraw = withdraw
        self.end = end
        self.finished = finished
        self.events = events
    }

    /// Hooks whose `begin` answers at once: it returns the session number, or throws to refuse.
    public init(begin: @escaping @Sendable (RecordingTrigger) throws -> Int, end: @escaping @Sendable (Int) -> Void,
                finished: @escaping @Sendable (SessionRecord) -> Void, events: @escaping @Sendable (RecordingEvent) -> Void) {
        self.init(
            begin: { request in
                do { request.accept(session: try begin(request.trigger)) } catch { request.refuse("\(error)") }
            },
            withdraw: { request in if let session = request.acceptedSession { end(session) } },
            end: end, finished: finished, events: events)
    }
}

/// One Begin a connection's recording sent to the cluster, and the way its answer comes back to the media thread.
///
/// Each connection has at most one request waiting for its answer (the next recording begins only after this one
/// ended), so the answers waiting in a runner's ``BeginAnswers`` never number more than one.
public final class BeginRequest: Sendable {
    public let trigger: RecordingTrigger
    /// The picture at the trigger, when the connection's format asks for thumbnails (made on the media thread as the
    /// recording began, from the picture the analysis had decoded).
    public let thumbnail: JPEGPicture?
    /// The connection's machine numbers its requests; the answer names it (an answer to a withdrawn request is ignored).
    let number: Int
    private let answers: BeginAnswers
    private let accepted = Mutex<Int?>(nil)

    init(number: Int, trigger: RecordingTrigger, answers: BeginAnswers, thumbnail: JPEGPicture? = nil) {
        self.number = number
        self.trigger = trigger
        self.thumbnail = thumbnail
        self.answers = answers
    }

    /// The cluster accepted it as CMAF session `session` (its Begin event is out).
    public func accept(session: Int) {
        accepted.withLock { $0 = session }
        answers.post(.init(request: number, outcome: .success(session)))
    }

    /// The cluster refused it: nothing may be recorded.
    public func refuse(_ reason: String) {
        answers.post(.init(request: number, outcome: .failure(reason)))
    }

    /// The session it was accepted as, once it was.
    public var acceptedSession: Int? { accepted.withLock { $0 } }
}

/// The cluster's answers to one connection's Begin requests, waiting for the media thread (it takes them before each
/// packet's decisions). Bounded by construction: at most one request per connection is unanswered.
final class BeginAnswers: Sendable {
    struct Answer: Sendable {
        var request: Int
        var outcome: Outcome
    }

    enum Outcome: Sendable {
        case success(Int)
        case failure(String)
    }

    private let waiting = Mutex<[Answer]>([])

    func post(_ answer: Answer) { waiting.withLock { $0.append(answer) } }

    func take() -> [Answer] {
        waiting.withLock { waiting in
            defer { waiting.removeAll() }
            return waiting
        }
    }
}

/// What a connection's sessions look like when it differs from the recording's defaults (each transport has its own
/// CMAF options and track names; a muted microphone records no audio).
public struct SessionFormat: Sendable, Hashable {
    public var segmentDuration: MediaTime
    /// nil: no chunks.
    public var chunkDuration: MediaTime?
    public var videoTrackName: String
    public var audioTrackName: String
    public var includeAudio: Bool
    public var writeClips: Bool
    /// CMAF Interface-2 DASH: each session gets `index.mpd` (dynamic before its headers, static after its last segment).
    public var dashManifest: Bool
    /// Common Encryption of every header and segment (the transport's CENCKey and CENCKeyID).
    public var encryption: CommonEncryption?
    /// Whether headers, segments and manifests are also written as files under the output folder. `pushav serve`
    /// says no: its events go to the durable spool, which is then the only copy on disk (one write of each byte
    /// instead of two — flash wear on a camera).
    public var writesSegmentFiles: Bool
    /// A JPEG of the picture at each trigger goes with the recording's Begin request (``BeginRequest/thumbnail``),
    /// when the recording keeps its pictures (``RecordingOptions/snapshots``). Never for an encrypted session: the
    /// thumbnail would show in the clear what the transport encrypts.
    public var thumbnails: Bool

    public init(segmentDuration: MediaTime, chunkDuration: MediaTime?, videoTrackName: String = "video",
                audioTrackName: String = "audio", includeAudio: Bool = true, writeClips: Bool = false,
                dashManifest: Bool = false, encryption: CommonEncryption? = nil, writesSegmentFiles: Bool = true,
                thumbnails: Bool = false) {
        self.writesSegmentFiles = writesSegmentFiles
        self.thumbnails = thumbnails
        self.dashManifest = dashManifest
        self.encryption = encryption
        self.segmentDuration = segmentDuration
        self.chunkDuration = chunkDuration
        self.videoTrackName = videoTrackName
        self.audioTrackName = audioTrackName
        self.includeAudio = includeAudio
        self.writeClips = writeClips
    }
}

/// Changes a running recording while it reads: transport connections come and go, are triggered by hand, turned
/// Inactive and Active, or have their running recording cut by the cluster. The recording applies the commands in
/// order, between two packets, at the media time it has reached.
///
/// The queue holds at most ``capacity`` commands (a controller sends a few a minute; the media thread drains it
/// at every packet): at the bound ``submit(_:)`` refuses the command and returns false, so the caller can answer
/// BUSY instead of the command being lost unseen.
public final class RecordingControl: Sendable {
    public enum Command: Sendable {
        /// Starts recording for `connection` with `policy` (which carries its hooks and format). Replaces an
        /// attached connection of the same ID after ending its running clip.
        case attach(connection: UInt16, policy: ClipPolicy, active: Bool)
        /// Ends the connection's running clip now and forgets the connection once its last clip is written.
        case detach(connection: UInt16)
        /// ManuallyTriggerTransport: a Command clip (or an augmentation of the running one).
        case trigger(connection: UInt16, reason: TriggerActivationReasonEnum, timeControl: ClipTimeControl?)
        case setActive(connection: UInt16, Bool)
        /// The cluster ended the running recording itself (privacy, Modify): end the clip now, stay attached.
        case cut(connection: UInt16)
        /// Whether the connection's next recordings carry audio (a muted microphone: none, from the next one on).
        case setAudio(connection: UInt16, Bool)
        /// What made the connection's recordings fail may have gone (privacy off, space freed): a recording backing
        /// off after a failure is tried at once.
        case retry(connection: UInt16)
        /// What session `session` produced could not be kept (the spool refused it: a full disk): the session is
        /// abandoned like one whose writer failed, and the connection tries again after a back-off.
        case sessionFailed(connection: UInt16, session: Int, reason: String)
        /// The camera's zones (Zone Management) changed: motion analysis locates motion in these from now on, without
        /// starting over (its background is kept).
        case setZones([MotionZone])
        /// Zone Management's triggers changed: a removed trigger's zone stops now (if triggered); changed durations
        /// apply from the zone's next activation.
        case setZoneTriggers([ZoneTriggers.Trigger])
        /// The connection's motion filter changed without its options changing (the Zone Management Sensitivity a
        /// transport without its own sensitivity uses): its running clip goes on, matched by the new filter.
        case setMotionFilter(connection: UInt16, MotionTriggerFilter)

        /// The command's kind and connection, for log lines: never its payload (an attach carries the connection's
        /// CENC key in its format).
        public var summary: String {
            switch self {
            case .attach(let id, _, let active): "attach(connection: \(id), active: \(active))"
            case .detach(let id): "detach(connection: \(id))"
            case .trigger(let id, let reason, _): "trigger(connection: \(id), reason: \(reason))"
            case .setActive(let id, let active): "setActive(connection: \(id), \(active))"
            case .cut(let id): "cut(connection: \(id))"
            case .setAudio(let id, let include): "setAudio(connection: \(id), \(include))"
            case .retry(let id): "retry(connection: \(id))"
            case .sessionFailed(let id, let session, _): "sessionFailed(connection: \(id), session: \(session))"
            case .setZones(let zones): "setZones(\(zones.count) zones)"
            case .setZoneTriggers(let triggers): "setZoneTriggers(\(triggers.count) triggers)"
            case .setMotionFilter(let id, _): "setMotionFilter(connection: \(id))"
            }
        }
    }

    /// What the recording has seen, for status pages.
    public struct Statistics: Sendable, Hashable {
        public var framesAnalysed = 0
        public var lastMotion: Date?
        public var packetsRead = 0
        /// When motion was seen, oldest first: analysed frames with motion less than ``MotionPeriod/gap`` apart
        /// form one period. Bounded: past ``MotionPeriod/kept`` periods the oldest is dropped.
        public var motionPeriods: [MotionPeriod] = []
        /// When the latest packet was read: how `/ready` tells a live source from a stalled one.
        public var lastPacketRead: ContinuousClock.Instant?
        /// The recorded video's picture size (what zones' vertices are measured in); nil before the input opened.
        public var videoWidth: Int?
        public var videoHeight: Int?
        public init() {}

        /// An analysed frame showed motion at `instant`.
        public mutating func noteMotion(at instant: Date) {
            lastMotion = instant
            if let last = motionPeriods.last, instant.timeIntervalSince(last.end) <= MotionPeriod.gap {
                motionPeriods[motionPeriods.count - 1].end = instant
            } else {
                motionPeriods.append(MotionPeriod(start: instant, end: instant))
                if motionPeriods.count > MotionPeriod.kept { motionPeriods.removeFirst(motionPeriods.count - MotionPeriod.kept) }
            }
        }
    }

    public let capacity: Int
    private let queue = Mutex<[Command]>([])
    private let stats = Mutex(Statistics())

    public init(capacity: Int = 256) { self.capacity = capacity }

    /// Queues `command`; false (nothing queued) when ``capacity`` commands are already waiting.
    @discardableResult
    public func submit(_ command: Command) -> Bool {
        queue.withLock { queue in
            guard queue.count < capacity else { return false }
            queue.append(command)
            return true
        }
    }

    public var statistics: Statistics { stats.withLock { $0 } }

    func drain() -> [Command] {
        queue.withLock { queue in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
    }

    func record(_ update: (inout Statistics) -> Void) { stats.withLock { update(&$0) } }
}

/// A stretch of wall-clock time in which a camera's analysed frames showed motion (for status pages, not for clips:
/// clips follow the media timeline).
public struct MotionPeriod: Codable, Sendable, Hashable {
    /// Motion frames at most this many seconds apart belong to one period.
    public static let gap: TimeInterval = 1
    /// Periods kept per recording pass.
    public static let kept = 200

    public var start: Date
    public var end: Date

    public init(start: Date, end: Date) {
        self.start = start
        self.end = end
    }
}
