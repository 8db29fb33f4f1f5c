import Foundation
import Synchronization
import TransportModel

/// A wall clock tests move by hand, shared across "restarts" the way the real clock is; `sleep` jumps straight to
/// the deadline, so timers run without waiting.
public final class ManualClock: TransportClock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_750_000_000)) { current = Mutex(start) }

    public func now() -> Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    public func sleep(until deadline: Date) async throws {
        try Task.checkCancellation()
        current.withLock { $0 = max($0, deadline) }
        await Task.yield()
    }
}
