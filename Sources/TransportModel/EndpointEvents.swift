import Foundation

/// The events of the camera's endpoint, whichever cluster raises them (PushTransportBegin/End, ZoneTriggered,
/// ZoneStopped): one numbering, one log, one broadcast, the small piece every cluster of the node shares.
///
/// Every event gets the next event number (reserved in blocks of ``reservationBlock`` through the
/// `TransportEventLog`, so numbers only increase, across restarts too), is appended to the log, then broadcast. A
/// failed append or reservation (disk full) does not stop the event: it keeps its number, is broadcast, and the error
/// goes to `reportFailure`.
struct EndpointEvents {
    /// How many event numbers one reservation write covers. A restart skips what is left of the block.
    static let reservationBlock: UInt64 = 1000

    private let log: any TransportEventLog
    private let reportFailure: @Sendable (any Error) -> Void
    private var broadcast = Broadcast<LoggedTransportEvent>()
    /// The number the next event gets.
    private(set) var upcomingNumber: UInt64
    /// Numbers below this are reserved in the log; reaching it reserves the next block first.
    private var reservedBelow: UInt64
    /// Events broadcast whose append failed, oldest first: appended again before the next event and on every
    /// ``appendUnlogged()`` (the server's one-second tick), so an event a subscriber saw is in the log too — a
    /// controller that reconnects reads the log (seed 139 of the 40-seed chaos run: an End was broadcast while the
    /// store failed, and was in no log). Bounded by ``unloggedKept``: past it the oldest is given up, reported.
    private var unlogged: [LoggedTransportEvent] = []
    static let unloggedKept = 10_000

    /// Continues the numbering `log` reserved; throws its error when it cannot be read.
    init(log: any TransportEventLog, reportFailure: @escaping @Sendable (any Error) -> Void) throws {
        let reservation = max(1, try log.loadEventNumberReservation())
        self.log = log
        self.reportFailure = reportFailure
        upcomingNumber = reservation
        reservedBelow = reservation
    }

    /// A new subscription to every event from now on.
    mutating func subscribe() -> AsyncStream<LoggedTransportEvent> { broadcast.subscribe() }

    /// Logged events numbered above `number`, of `fabric` (nil: every fabric), oldest first, at most `limit`.
    func logged(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent] {
        try log.events(after: number, fabric: fabric, limit: limit)
    }

    /// Numbers, logs, then broadcasts one event. Log failures are reported, never thrown: the event goes out anyway.
    mutating func emit(_ event: CameraEvent, fabric: FabricIndex, at time: Date) {
        publish(numbered(event, fabric: fabric, at: time), logged: false)
    }

    /// The event with the next number, not yet logged or sent: for a caller that logs it in its own commit (a Begin,
    /// with the records it owes an End by). A number taken and never published is a gap, as a restart leaves one.
    mutating func numbered(_ event: CameraEvent, fabric: FabricIndex, at time: Date) -> LoggedTransportEvent {
        LoggedTransportEvent(number: takeNumber(), time: time, fabricIndex: fabric, event: event)
    }

    /// Logs `entry` (unless `logged`: it already is) and broadcasts it.
    mutating func publish(_ entry: LoggedTransportEvent, logged: Bool) {
        if !logged {
            appendUnlogged()
            if unlogged.isEmpty {
                do { try log.append(entry) } catch {
                    reportFailure(error)
                    unlogged.append(entry)
                }
            } else {
                unlogged.append(entry)  // after the older ones, in number order
                if unlogged.count > Self.unloggedKept {
                    unlogged.removeFirst()
                    reportFailure(EventLogBacklogFull(kept: Self.unloggedKept))
                }
            }
        }
        broadcast.send(entry)
    }

    /// Appends the events whose append failed, oldest first, until one fails again.
    mutating func appendUnlogged() {
        while let first = unlogged.first {
            do { try log.append(first) } catch { return }
            unlogged.removeFirst()
        }
    }

    /// Events broadcast and not yet in the log.
    var unloggedCount: Int { unlogged.count }

    /// A failure that is not worth stopping for (the event or the state change goes on), told the same way.
    func report(_ error: any Error) { reportFailure(error) }

    /// Ends every subscription (at shutdown).
    mutating func finish() { broadcast.finish() }

    /// The next event number, reserving a new block first when the reserved one is used up. A failed reservation
    /// still hands the number out (the event must go out); the write is retried with the next event.
    private mutating func takeNumber() -> UInt64 {
        let number = upcomingNumber
        upcomingNumber += 1
        if number >= reservedBelow {
            let limit = number + Self.reservationBlock
            do {
                try log.reserveEventNumbers(below: limit)
                reservedBelow = limit
            } catch {
                reportFailure(error)
            }
        }
        return number
    }
}

/// The event log failed for so long that ``EndpointEvents/unloggedKept`` events waited: the oldest is given up (it was
/// broadcast, and is missing from the log).
struct EventLogBacklogFull: Error, CustomStringConvertible {
    let kept: Int
    var description: String { "the event log failed for \(kept) events in a row: the oldest is not logged" }
}
