import CMAF
import Domain
import Foundation
import MediaIO
import Motion
import Synchronization
import Timeline

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
    public var end: @Sendable (_ session: SessionNumber) -> Void
    /// Session finished writing: every byte of it has been handed to `events` (a session none of whose frames could
    /// be written, or that was abandoned, comes with no tracks; it is also a dropped clip in the report).
    public var finished: @Sendable (SessionRecord) -> Void
    /// Every init segment, chunk and segment of this connection's sessions, in order.
    public var events: @Sendable (RecordingEvent) -> Void

    public init(begin: @escaping @Sendable (BeginRequest) -> Void, withdraw: @escaping @Sendable (BeginRequest) -> Void,
                end: @escaping @Sendable (SessionNumber) -> Void, finished: @escaping @Sendable (SessionRecord) -> Void,
                events: @escaping @Sendable (RecordingEvent) -> Void) {
        self.begin = begin
        self.withdraw = withdraw
        self.end = end
        self.finished = finished
        self.events = events
    }

    /// Hooks whose `begin` answers at once: it returns the session number, or throws to refuse.
    public init(begin: @escaping @Sendable (RecordingTrigger) throws -> SessionNumber, end: @escaping @Sendable (SessionNumber) -> Void,
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
    private let accepted = Mutex<SessionNumber?>(nil)

    init(number: Int, trigger: RecordingTrigger, answers: BeginAnswers, thumbnail: JPEGPicture? = nil) {
        self.number = number
        self.trigger = trigger
        self.thumbnail = thumbnail
        self.answers = answers
    }

    /// The cluster accepted it as CMAF session `session` (its Begin event is out).
    public func accept(session: SessionNumber) {
        accepted.withLock { $0 = session }
        answers.post(.init(request: number, outcome: .success(session)))
    }

    /// The cluster refused it: nothing may be recorded.
    public func refuse(_ reason: String) {
        answers.post(.init(request: number, outcome: .failure(reason)))
    }

    /// The session it was accepted as, once it was.
    public var acceptedSession: SessionNumber? { accepted.withLock { $0 } }
}

/// The cluster's answers to one connection's Begin requests, waiting for the media thread (it takes them before each
/// packet's decisions). Bounded by construction: at most one request per connection is unanswered.
final class BeginAnswers: Sendable {
    struct Answer: Sendable {
        var request: Int
        var outcome: Outcome
    }

    enum Outcome: Sendable {
        case success(SessionNumber)
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
    public var trackNames: TrackNames = TrackNames()
    public var includeAudio: Bool = true
    public var writeClips: Bool = false
    /// CMAF Interface-2 DASH: each session gets `index.mpd` (dynamic before its headers, static after its last segment).
    public var dashManifest: Bool = false
    /// Common Encryption of every header and segment (the transport's CENCKey and CENCKeyID).
    public var encryption: CommonEncryption?
    /// Whether headers, segments and manifests are also written as files under the output folder. `pushav serve`
    /// says no: its events go to the durable spool, which is then the only copy on disk (one write of each byte
    /// instead of two — flash wear on a camera).
    public var writesSegmentFiles: Bool = true
    /// A JPEG of the picture at each trigger goes with the recording's Begin request (``BeginRequest/thumbnail``),
    /// when the recording keeps its pictures (``RecordingOptions/snapshots``). Never for an encrypted session: the
    /// thumbnail would show in the clear what the transport encrypts.
    public var thumbnails: Bool = false

    public init(
        segmentDuration: MediaTime, chunkDuration: MediaTime? = nil, trackNames: TrackNames = TrackNames(),
        includeAudio: Bool = true, writeClips: Bool = false, dashManifest: Bool = false,
        encryption: CommonEncryption? = nil, writesSegmentFiles: Bool = true, thumbnails: Bool = false
    ) {
        self.segmentDuration = segmentDuration
        self.chunkDuration = chunkDuration
        self.trackNames = trackNames
        self.includeAudio = includeAudio
        self.writeClips = writeClips
        self.dashManifest = dashManifest
        self.encryption = encryption
        self.writesSegmentFiles = writesSegmentFiles
        self.thumbnails = thumbnails
    }
}

/// What one transport connection's recording should be now, as its owner wants it: a level, not a command. The
/// recording compares it with what it runs and changes only what differs (see ``RecordingReconciler``), so the same
/// desired state published twice, late, or after a reconnect leads to the same runners.
public struct DesiredRecording: Sendable {
    /// Carries the connection's hooks (where its sessions are announced and delivered) and its format.
    public var policy: ClipPolicy
    /// Changes when what is recorded changes (its options, its destination): the running recording then ends and
    /// the connection starts over with ``policy``. Unchanged: the runner goes on.
    public var generation: Int
    /// Active and not forbidden by privacy: recordings may begin.
    public var active: Bool
    /// Whether its next recordings carry audio (a muted microphone: none, from the next one on).
    public var includeAudio: Bool
    /// Which motion samples activate it (a Zone Management Sensitivity write changes it without a new generation).
    public var motionFilter: MotionTriggerFilter
    /// Raised when whatever made recordings fail may have gone (a TLS endpoint back, space freed): a connection
    /// backing off after a failed recording tries again at once.
    public var retryEpoch: Int

    public init(policy: ClipPolicy, generation: Int, active: Bool, includeAudio: Bool, retryEpoch: Int = 0) {
        self.policy = policy
        self.generation = generation
        self.active = active
        self.includeAudio = includeAudio
        self.motionFilter = policy.motionFilter
        self.retryEpoch = retryEpoch
    }

    /// What the reconciler compares.
    var target: RecordingReconciler.Target {
        .init(generation: generation, active: active, includeAudio: includeAudio, motionFilter: motionFilter,
              retryEpoch: retryEpoch)
    }
}

/// Everything a camera's recording follows: its connections, its zones and Zone Management's triggers.
public struct DesiredRecordings: Sendable {
    public var connections: [UInt16: DesiredRecording] = [:]
    public var zones: [MotionZone] = []
    public var zoneTriggers: [ZoneTrigger] = []

    public init(
        connections: [UInt16: DesiredRecording] = [:], zones: [MotionZone] = [], zoneTriggers: [ZoneTrigger] = []
    ) {
        self.connections = connections
        self.zones = zones
        self.zoneTriggers = zoneTriggers
    }
}

/// How a running recording learns what to record while it reads: transport connections come and go, are triggered by
/// hand, turned Inactive and Active, modified. The recording applies it between two packets, at the media time it has
/// reached.
///
/// Why state and not a queue of commands: a queue has a bound, and a command refused at the bound (or a reorder) was
/// lost for good — nothing put it right. Here the owner *publishes* the whole desired state (``publish(_:)``); a newer
/// one replaces an older one not yet applied, and the recording reconciles its runners to the latest. Nothing can be
/// dropped, and nothing needs ordering. Two inputs are events rather than state, and each has a bound by
/// construction: a manual trigger (one slot per connection: a second trigger before the first was applied would
/// only augment it at the same media time, so the two merge) and a session whose output failed (one entry per session
/// being written; a repeat is the same entry).
public final class RecordingControl: Sendable {
    /// A ManuallyTriggerTransport waiting for the next packet.
    public struct Trigger: Sendable, Hashable {
        public var reason: TriggerActivationReasonEnum
        public var timeControl: ClipTimeControl?
    }

    /// What the recording takes between two packets.
    struct Update {
        /// The desired state, when it changed since the last take.
        var desired: DesiredRecordings?
        var triggers: [(connection: UInt16, trigger: Trigger)]
        var failedSessions: [(connection: UInt16, session: SessionNumber, reason: String)]
    }

    private struct Inbox {
        var desired: DesiredRecordings?
        var version = 0
        var taken = 0
        var triggers: [UInt16: Trigger] = [:]
        var failedSessions: [SessionKey: String] = [:]
        /// Told once the recording applied the state of that version (or ended): at most one per published state
        /// not yet taken, since a take hands them all over.
        var whenApplied: [(version: Int, call: @Sendable () -> Void)] = []
        /// The recording that reads this control has ended: nothing will take its states any more.
        var ended = false
    }

    private struct SessionKey: Hashable, Comparable {
        var connection: UInt16
        var session: SessionNumber
        static func < (a: SessionKey, b: SessionKey) -> Bool { (a.connection, a.session) < (b.connection, b.session) }
    }

    private let inbox = Mutex(Inbox())
    private let stats = Mutex(Statistics())

    public init() {}

    /// Replaces the desired state; the recording reconciles to it at its next packet. `whenApplied` runs once it
    /// has (from then on no recording the state left out can begin a session), or once the recording ended.
    ///
    /// Why the owner needs it: between a Modify and the media thread's next packet the old recording can still ask
    /// for a Begin, so the old destination may end its events only after this (see `DeliveryLifecycle` in the Delivery module).
    public func publish(_ desired: DesiredRecordings, whenApplied: (@Sendable () -> Void)? = nil) {
        let now = inbox.withLock { inbox -> Bool in
            inbox.desired = desired
            inbox.version += 1
            guard let whenApplied else { return false }
            if inbox.ended { return true }
            inbox.whenApplied.append((inbox.version, whenApplied))
            return false
        }
        if now { whenApplied?() }
    }

    /// The recording reading this control ended: every state waiting to be applied never will be, and nothing
    /// records under it any more.
    public func recordingEnded() {
        let waiting = inbox.withLock { inbox in
            inbox.ended = true
            defer { inbox.whenApplied.removeAll() }
            return inbox.whenApplied
        }
        for waiter in waiting { waiter.call() }
    }

    /// The manual triggers no pass applied: handed over after the recording's last take (a looped file's pass ending,
    /// a source lost). Taking them empties the inbox; the owner hands them to the next pass, or counts them lost when
    /// there is none. Without this a trigger that came as a looped file reached its end was dropped without a word.
    public func takeUnappliedTriggers() -> [(connection: UInt16, trigger: Trigger)] {
        inbox.withLock { inbox in
            defer { inbox.triggers.removeAll() }
            return inbox.triggers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
    }

    /// ManuallyTriggerTransport for `connection`; merges with one not yet applied (the later reason and time
    /// control win). Returns true if it merged.
    @discardableResult
    public func trigger(connection: UInt16, reason: TriggerActivationReasonEnum, timeControl: ClipTimeControl?) -> Bool {
        inbox.withLock { $0.triggers.updateValue(Trigger(reason: reason, timeControl: timeControl), forKey: connection) != nil }
    }

    /// What session `session` of `connection` produced could not be kept (the spool refused it: a full disk): the
    /// session is abandoned like one whose writer failed, and the connection tries again after a back-off.
    public func sessionFailed(connection: UInt16, session: SessionNumber, reason: String) {
        inbox.withLock { inbox in
            let key = SessionKey(connection: connection, session: session)
            if inbox.failedSessions[key] == nil { inbox.failedSessions[key] = reason }
        }
    }

    /// What the recording applies now. Called on the media thread, which applies it before it reads on, so the
    /// states' `whenApplied` run here: no Begin of a recording they left out can follow on that thread.
    func take() -> Update {
        let (update, applied) = inbox.withLock { inbox in
            defer {
                inbox.taken = inbox.version
                inbox.triggers.removeAll()
                inbox.failedSessions.removeAll()
                inbox.whenApplied.removeAll()
            }
            return (Update(
                desired: inbox.version != inbox.taken ? inbox.desired : nil,
                triggers: inbox.triggers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                failedSessions: inbox.failedSessions.sorted { $0.key < $1.key }.map { ($0.key.connection, $0.key.session, $0.value) }),
                inbox.whenApplied)
        }
        for waiter in applied { waiter.call() }
        return update
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

    public var statistics: Statistics { stats.withLock { $0 } }

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
