import Domain

/// When one destination's recording events may end: the sessions it still owes and whether anything can still start
/// one. Pure (no clock, no I/O); ``DestinationUpload`` feeds it inputs and performs the actions it returns, the way
/// `ConnectionRecording` drives a connection's recording.
///
/// Why a machine: the events of a destination end (its stream is finished) once nothing more can be handed over, and
/// an event handed over after that is lost. "Nothing more" has three parts, each its own input:
/// - no connection records for it any more (``Input/closed``);
/// - the recorder has applied a desired state without it, so no new Begin can be asked for it
///   (``Input/recorderCaughtUp``): between a Modify and the media thread's next packet the old recording can still
///   start a session;
/// - every session it was asked for is answered and written (``Input/beginAsked(_:)`` on the media thread, as the
///   recorder *asks* for the Begin — before the cluster commits it — then ``Input/beginRefused(_:)`` or
///   ``Input/sessionWritten(_:)``).
/// Counting sessions only once their Begin was committed lost every session whose Begin was in flight when a
/// Modify retired its destination (issue 47: 4–6 of 100 triggers followed by a Modify within 15 ms).
///
/// Bound: a session whose end never comes (a recorder stuck on a dead source) must not hold a Modify's or a
/// shutdown's delivery forever: ``Input/writeLimitExpired`` ends the events anyway, naming what was still owed.
public struct DeliveryLifecycle: Sendable, Hashable {
    /// A Begin the recorder asked for, until it is answered.
    public struct Ticket: Sendable, Hashable, Comparable {
        public let number: Int
        public init(_ number: Int) { self.number = number }
        public static func < (a: Ticket, b: Ticket) -> Bool { a.number < b.number }
    }

    public enum Phase: Sendable, Hashable {
        /// Connections record for it; sessions come and go.
        case open
        /// No connection records for it: the events end once the recorder caught up and nothing is owed.
        case closing
        /// The events ended: whatever is handed over from now on is lost.
        case ended
    }

    public enum Input: Sendable, Hashable {
        /// The recorder asks the cluster for a Begin recorded for this destination.
        case beginAsked(Ticket)
        /// The cluster accepted it as `session`: its events follow until ``sessionWritten(_:)``.
        case beginAccepted(Ticket, SessionNumber)
        /// The cluster refused it: nothing will be recorded for it.
        case beginRefused(Ticket)
        /// Every event of `session` was handed over (it finished, was dropped, or its Begin was withdrawn).
        case sessionWritten(SessionNumber)
        /// No connection records for this destination any more. `recorderCaughtUp`: nothing can begin a session
        /// for it (the recorder already applied a state without it, or there is no recorder, as in `pushav record`).
        case closed(recorderCaughtUp: Bool)
        /// The recorder applied a desired state without this destination.
        case recorderCaughtUp
        /// The delivery is stopped (replaced, out of patience, or a shutdown's grace passed). An open one closes as if
        /// nothing could record for it any more; a closing one keeps waiting for what it owes (a replaced delivery may
        /// owe a session still being written, which must reach the spool before its successor runs).
        case stopped
        /// ``DestinationUpload/sessionWriteLimit`` passed since ``closed(recorderCaughtUp:)``.
        case writeLimitExpired
    }

    public enum Action: Sendable, Hashable {
        /// Start the write limit's timer (once, at close).
        case startWriteLimit
        /// Finish the event stream: the spool writes what was handed over, then the uploader drains.
        case endEvents
        /// The write limit passed with sessions still owed: say so (their later events are lost).
        case warnStillOwed(asked: [Ticket], writing: [SessionNumber], recorderCaughtUp: Bool)
    }

    public private(set) var phase: Phase = .open
    /// Begins asked and not answered.
    public private(set) var asked: Set<Ticket> = []
    /// Sessions accepted and not yet written.
    public private(set) var writing: Set<SessionNumber> = []
    public private(set) var recorderCaughtUp = false

    public init() {}

    /// Nothing owed: no Begin unanswered, no session being written.
    public var owesNothing: Bool { asked.isEmpty && writing.isEmpty }

    public mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .beginAsked(let ticket):
            // Also after close: a Begin asked before the recorder caught up still gets its events delivered.
            guard phase != .ended else { return [] }
            asked.insert(ticket)
            return []
        case .beginAccepted(let ticket, let session):
            guard asked.remove(ticket) != nil else { return [] }
            writing.insert(session)
            return []
        case .beginRefused(let ticket):
            asked.remove(ticket)
            return endIfDone()
        case .sessionWritten(let session):
            writing.remove(session)
            return endIfDone()
        case .closed(let caughtUp):
            guard phase == .open else {
                if caughtUp { recorderCaughtUp = true }
                return endIfDone()
            }
            phase = .closing
            recorderCaughtUp = recorderCaughtUp || caughtUp
            return [.startWriteLimit] + endIfDone()
        case .recorderCaughtUp:
            recorderCaughtUp = true
            return endIfDone()
        case .stopped:
            guard phase == .open else { return [] }
            return handle(.closed(recorderCaughtUp: true))
        case .writeLimitExpired:
            guard phase == .closing else { return [] }
            phase = .ended
            return [.warnStillOwed(asked: asked.sorted(), writing: writing.sorted(), recorderCaughtUp: recorderCaughtUp),
                    .endEvents]
        }
    }

    private mutating func endIfDone() -> [Action] {
        guard phase == .closing, recorderCaughtUp, owesNothing else { return [] }
        phase = .ended
        return [.endEvents]
    }
}
