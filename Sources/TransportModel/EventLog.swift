import Foundation
import Synchronization

/// One entry of the cluster's event log: a PushTransportBegin/End with the event number, time and fabric Matter
/// gives every event. This is also what `PushAVStreamTransportServer.events()` delivers.
public struct LoggedTransportEvent: Sendable, Hashable {
    /// The event number: 1 for the first event of a new store, only ever increasing (across restarts too).
    public var number: UInt64
    /// Wall-clock time the server emitted it (its `TransportClock`).
    public var time: Date
    /// The fabric of the connection the event concerns (kept for an End whose connection is already gone).
    public var fabricIndex: FabricIndex
    public var event: CameraEvent

    public init(number: UInt64, time: Date, fabricIndex: FabricIndex, event: CameraEvent) {
        self.number = number
        self.time = time
        self.fabricIndex = fabricIndex
        self.event = event
    }
}

/// How much of the event log is kept; older entries are pruned on append.
///
/// Why bounded: a continuously recording camera emits a Begin/End pair per clip for as long as it runs, so an
/// unbounded log would grow the camera's store without limit. 10,000 entries (a few MB of SQLite) cover days of
/// busy motion recording; a controller that stays away longer than 7 days has to resynchronise from the
/// CurrentConnections attribute anyway, and events about connections long deallocated tell it nothing useful.
/// Matter devices bound their event logs the same way (fixed-size buffers, oldest events dropped first).
public struct EventLogRetention: Sendable, Hashable {
    /// The newest this many entries are kept.
    public var maxEntries: Int
    /// Entries older than this (relative to the newest entry's time) are dropped.
    public var maxAge: TimeInterval

    public init(maxEntries: Int = 10_000, maxAge: TimeInterval = 7 * 24 * 3600) {
        self.maxEntries = max(1, maxEntries)
        self.maxAge = maxAge
    }
}

/// Where the server logs its events. Synchronous, like `TransportPersistence`: the server calls it inside its actor,
/// so the order of numbers, entries and broadcasts is the order events happened.
///
/// Event numbers are handed out by the server and reserved here in blocks, as Matter devices do: the log persists a
/// high-water mark, "numbers below this may have been handed out", before the server uses a number at or above the
/// previous mark. After a restart (or a crash, or a failed append) numbering resumes at the persisted mark, so a
/// number is never reused even when the entry that carried it was never written.
public protocol TransportEventLog: Sendable {
    /// The persisted reservation: every number handed out so far is below it. 1 for a new log.
    func loadEventNumberReservation() throws -> UInt64
    /// Persists that numbers below `limit` may be handed out. The server only ever raises it.
    func reserveEventNumbers(below limit: UInt64) throws
    /// Adds an entry (numbers arrive in increasing order) and prunes what `EventLogRetention` no longer keeps.
    func append(_ entry: LoggedTransportEvent) throws
    /// Entries numbered above `number`, of `fabric` and of no fabric (zone events), or of every fabric when `fabric`
    /// is nil; oldest first, at most `limit`.
    func events(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent]
}

/// Keeps the log in memory (for tests and for a server whose state may die with the process), with the same
/// retention rules as the persistent log.
public final class VolatileTransportEventLog: TransportEventLog {
    private struct State {
        var entries: [LoggedTransportEvent] = []
        var reservation: UInt64
    }

    public let retention: EventLogRetention
    private let state: Mutex<State>

    /// `reservation` is what `loadEventNumberReservation` answers first (1: a new log).
    public init(retention: EventLogRetention = EventLogRetention(), reservation: UInt64 = 1) {
        self.retention = retention
        self.state = Mutex(State(reservation: max(1, reservation)))
    }

    public func loadEventNumberReservation() throws -> UInt64 { state.withLock { $0.reservation } }

    public func reserveEventNumbers(below limit: UInt64) throws {
        state.withLock { $0.reservation = max($0.reservation, limit) }
    }

    public func append(_ entry: LoggedTransportEvent) throws {
        let retention = self.retention
        state.withLock { state in
            state.entries.append(entry)
            let oldest = entry.time.addingTimeInterval(-retention.maxAge)
            state.entries.removeAll { $0.time < oldest }
            if state.entries.count > retention.maxEntries {
                state.entries.removeFirst(state.entries.count - retention.maxEntries)
            }
        }
    }

    public func events(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent] {
        state.withLock { state in
            Array(state.entries.lazy
                .filter { $0.number > number && (fabric == nil || $0.fabricIndex == fabric || $0.fabricIndex == CameraEvent.noFabric) }
                .prefix(max(0, limit)))
        }
    }

    /// Every entry kept, oldest first.
    public var allEntries: [LoggedTransportEvent] { state.withLock { $0.entries } }
}
