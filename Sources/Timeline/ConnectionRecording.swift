import Domain

/// One transport connection's recording, as one pure state machine: the ``ClipTimeline`` that decides *when* to
/// record, and the lifecycle of each recording the timeline asks for — waiting for its keyframe, announced to the
/// cluster and waiting for its answer, recording into a session, ending while its last frames are written.
///
/// Why one machine: whether a connection is recording used to be kept by the timeline, by the runner's open clip and
/// by the cluster's Begin bookkeeping, which agreed only while nothing failed (a refused Begin left the timeline
/// recording; a writer failing after the Begin left a Begin without its End). Here every input — the cluster's
/// changes, media events, the cluster's answer, a writer or the spool failing, the input ending — goes through
/// ``handle(_:)``, and the property the cluster and its controllers rely on is the machine's, not its callers':
/// **every Begin the cluster accepted is followed by exactly one End** (``Action/announceEnd(session:)``, or
/// ``Action/withdrawBegin(request:)`` for a Begin whose answer the recording can no longer wait for).
///
/// The machine performs nothing: it returns ``Action``s, in order, for the code around it (the recorder's
/// `ClipRunner`) to carry out. It holds no packets and does no I/O, so it is tested by tables.
public struct ConnectionRecording: Sendable {
    /// A random-access picture a recording can start at: its presentation time and its place in the pre-roll buffer.
    public struct Keyframe: Sendable, Hashable {
        public var pts: MediaTime
        public var sequence: Int

        public init(pts: MediaTime, sequence: Int) {
            self.pts = pts
            self.sequence = sequence
        }
    }

    /// A recording whose session is being written.
    public struct Session: Sendable, Hashable {
        public var number: SessionNumber
        public var begin: ClipBegin
        public var keyframe: Keyframe
    }

    /// A Begin sent to the cluster, waiting for its answer (the session number, or a refusal).
    public struct Announcement: Sendable, Hashable {
        /// Numbers this machine's Begin requests (1, 2, …): an answer to an earlier, withdrawn request is ignored.
        public var request: Int
        public var begin: ClipBegin
        public var keyframe: Keyframe
        /// The timeline ended the recording before the answer came: once accepted it is written up to this end and
        /// ended at once (the cluster has already announced it; a controller sees a short recording, not a Begin
        /// without End).
        public var end: ClipEnd?
    }

    /// The recording the timeline is running, if any, and how far it got.
    public enum State: Sendable, Hashable {
        /// Nothing is being recorded.
        case idle
        /// The timeline began a recording; the pre-roll rule's keyframe is not in the buffer yet.
        case waitingForKeyframe(ClipBegin)
        /// Its keyframe is known and its Begin was sent: waiting for the cluster's answer.
        case announcing(Announcement)
        /// Its session is being written.
        case recording(Session)
        /// The input has ended: every later input is ignored.
        case finished
    }

    public enum Input: Sendable, Hashable {
        /// A timeline input (frames, motion, manual triggers, status, retries, the end of the input).
        case timeline(TimelineInput)
        /// The buffer holds the keyframe the waiting recording starts at.
        case keyframeFound(Keyframe)
        /// The cluster accepted Begin request `request` as CMAF session `session` (its Begin event is out).
        case beginAccepted(request: Int, session: SessionNumber)
        /// The cluster refused Begin request `request` (transport Inactive or gone, privacy, its store failing).
        case beginRefused(request: Int, reason: String)
        /// Session `session`'s writer could not be opened, failed while writing, or what it produced could not be
        /// kept (the spool refused it: a full disk).
        case sessionFailed(session: SessionNumber, reason: String)
        /// Session `session` is completely written; `empty` when not one of its video frames reached it.
        case sessionWritten(session: SessionNumber, empty: Bool)
    }

    public enum Action: Sendable, Hashable {
        /// Send the cluster a Begin for `trigger`; its answer comes back as ``Input/beginAccepted(request:session:)``
        /// or ``Input/beginRefused(request:reason:)``.
        case announceBegin(request: Int, trigger: TriggerType)
        /// The input ended before the answer to `request` came: if the cluster accepted it, send that session's End.
        case withdrawBegin(request: Int)
        /// Send the cluster session `session`'s End.
        case announceEnd(session: SessionNumber)
        /// Open session `session`'s writer at `keyframe`.
        case openSession(session: SessionNumber, begin: ClipBegin, keyframe: Keyframe)
        /// Nothing from `end.end` on belongs to session `session`: write its last frames, then finish it.
        case endSession(session: SessionNumber, end: ClipEnd)
        /// Stop writing session `session` and throw its unfinished output away (its live upload is aborted).
        case abandonSession(session: SessionNumber, reason: String)
        /// A recording the timeline asked for could not be recorded (logged, counted, in the report).
        case dropClip(ClipBegin, reason: String, session: SessionNumber?)
        /// The timeline backs off after a failed recording (for the log).
        case backingOff(retryAt: MediaTime, failures: Int)
        /// A running activation got longer (for the log).
        case extended(ClipExtension)
    }

    public private(set) var timeline: ClipTimeline
    public private(set) var state: State = .idle
    /// Sessions whose End is out and whose last frames are still being written, by session number.
    public private(set) var ending: [SessionNumber: ClipBegin] = [:]
    /// True: every recording is announced to the cluster, which numbers its session. False (a file recording
    /// without a cluster, `pushav record`): the machine numbers the sessions itself from `firstSession`.
    public let announcesRecordings: Bool
    private var nextSession: SessionNumber
    private var nextRequest = 1

    public init(timeline: ClipTimeline, announcesRecordings: Bool, firstSession: SessionNumber = 1) {
        self.timeline = timeline
        self.announcesRecordings = announcesRecordings
        nextSession = firstSession
    }

    /// Whether a session is open or ending, or a recording waits for its keyframe or answer.
    public var isIdle: Bool {
        switch state {
        case .idle, .finished: ending.isEmpty
        default: false
        }
    }

    public mutating func handle(_ input: Input) -> [Action] {
        if case .finished = state {
            // After the end of the input only the writers still finishing report; answers are stale (withdrawn).
            switch input {
            case .sessionFailed(let session, let reason): return endingSessionFailed(session, reason: reason)
            case .sessionWritten(let session, let empty): return sessionWritten(session, empty: empty)
            default: return []
            }
        }
        switch input {
        case .timeline(let input):
            var actions = apply(timeline.handle(input))
            if case .endOfInput = input { actions += finish(reason: "the input ended") }
            if case .stop = input { actions += finish(reason: "the recording was stopped") }
            return actions
        case .keyframeFound(let keyframe):
            guard case .waitingForKeyframe(let begin) = state else { return [] }
            if announcesRecordings {
                let request = nextRequest
                nextRequest += 1
                state = .announcing(Announcement(request: request, begin: begin, keyframe: keyframe))
                return [.announceBegin(request: request, trigger: begin.trigger)]
            }
            let session = nextSession
            nextSession = nextSession.next
            state = .recording(Session(number: session, begin: begin, keyframe: keyframe))
            return [.openSession(session: session, begin: begin, keyframe: keyframe)]
        case .beginAccepted(let request, let session):
            guard case .announcing(let announcement) = state, announcement.request == request else { return [] }
            var actions: [Action] = [.openSession(session: session, begin: announcement.begin, keyframe: announcement.keyframe)]
            if let end = announcement.end {
                ending[session] = announcement.begin
                state = .idle
                actions += [.announceEnd(session: session), .endSession(session: session, end: end)]
            } else {
                state = .recording(Session(number: session, begin: announcement.begin, keyframe: announcement.keyframe))
            }
            return actions
        case .beginRefused(let request, let reason):
            guard case .announcing(let announcement) = state, announcement.request == request else { return [] }
            state = .idle
            return [.dropClip(announcement.begin, reason: "the transport refused the recording: \(reason)", session: nil)]
                + failed(announcement.begin.recording)
        case .sessionFailed(let session, let reason):
            if case .recording(let running) = state, running.number == session {
                // The Begin is out: this recording ends here, with its End, and is tried again after a back-off.
                state = .idle
                return [.announceEnd(session: session), .abandonSession(session: session, reason: reason),
                        .dropClip(running.begin, reason: reason, session: session)] + failed(running.begin.recording)
            }
            return endingSessionFailed(session, reason: reason)
        case .sessionWritten(let session, let empty):
            return sessionWritten(session, empty: empty)
        }
    }

    /// The timeline's decisions, carried into the recording's lifecycle.
    private mutating func apply(_ decisions: [ClipDecision]) -> [Action] {
        var actions: [Action] = []
        for decision in decisions {
            switch decision {
            case .begin(let begin):
                switch state {
                case .waitingForKeyframe(let superseded):
                    actions.append(.dropClip(superseded, reason: "no random access picture arrived before the next clip began",
                                             session: nil))
                case .announcing(let ended):
                    // The timeline ended it (it ends a recording before it begins the next) and moves on before the
                    // cluster answered: the next recording must not wait behind it, so it is withdrawn — its End
                    // goes out if it was accepted — and its few seconds are a dropped clip.
                    actions += [.withdrawBegin(request: ended.request),
                                .dropClip(ended.begin, reason: "it ended, and the next recording began, before the transport "
                                          + "answered its Begin", session: nil)]
                default:
                    break
                }
                state = .waitingForKeyframe(begin)
            case .extend(let ext):
                actions.append(.extended(ext))
            case .end(let end):
                switch state {
                case .recording(let session) where session.begin.recording == end.recording:
                    ending[session.number] = session.begin
                    state = .idle
                    actions += [.announceEnd(session: session.number), .endSession(session: session.number, end: end)]
                case .waitingForKeyframe(let begin) where begin.recording == end.recording:
                    state = .idle
                    actions.append(.dropClip(begin, reason: "no random access picture (IDR, or CRA/BLA without RASL) between "
                                             + "its pre-roll start and its end", session: nil))
                case .announcing(var announcement) where announcement.begin.recording == end.recording:
                    announcement.end = end
                    state = .announcing(announcement)
                default:
                    break
                }
            }
        }
        return actions
    }

    /// The end of the input: a recording still waiting can no longer be recorded.
    private mutating func finish(reason: String) -> [Action] {
        defer { state = .finished }
        switch state {
        case .waitingForKeyframe(let begin):
            return [.dropClip(begin, reason: "no random access picture (IDR, or CRA/BLA without RASL) at or after its "
                              + "pre-roll start before \(reason)", session: nil)]
        case .announcing(let announcement):
            return [.withdrawBegin(request: announcement.request),
                    .dropClip(announcement.begin, reason: "\(reason) before the transport answered its Begin", session: nil)]
        case .recording(let session):
            // The timeline ends every running recording at the end of the input; this is only reached if it did not.
            ending[session.number] = session.begin
            return [.announceEnd(session: session.number), .abandonSession(session: session.number, reason: reason),
                    .dropClip(session.begin, reason: reason, session: session.number)]
        case .idle, .finished:
            return []
        }
    }

    /// The timeline backs off if `recording` is still the one it runs.
    private mutating func failed(_ recording: Int) -> [Action] {
        guard let running = timeline.recording, running.number == recording, let now = timeline.now else { return [] }
        let decisions = timeline.handle(.recordingFailed(now))
        return apply(decisions) + [.backingOff(retryAt: timeline.retryAt ?? now, failures: timeline.consecutiveFailures)]
    }

    /// A session whose End is already out failed while its last frames were written: abandoned, its clip dropped.
    private mutating func endingSessionFailed(_ session: SessionNumber, reason: String) -> [Action] {
        guard let begin = ending.removeValue(forKey: session) else { return [] }
        return [.abandonSession(session: session, reason: reason), .dropClip(begin, reason: reason, session: session)]
    }

    private mutating func sessionWritten(_ session: SessionNumber, empty: Bool) -> [Action] {
        guard let begin = ending.removeValue(forKey: session) else { return [] }
        guard empty else { return [] }
        // Not one of its video frames reached the muxer: its keyframe was pushed out of a full pre-roll buffer, or
        // the input failed first. Its headers are gone; the event is a dropped clip, not a session.
        return [.dropClip(begin, reason: "no frame of the clip could be written (its keyframe was lost from a full pre-roll "
                          + "buffer, or the input failed first); session \(session) was removed", session: session)]
    }
}
