import Foundation

// ExpiryTime: a connection whose time ran out is deallocated (its recording ended), lazily on every read and command
// and by the timer the camera runs.
extension PushAVStreamTransportServer {
    /// Deallocates every connection whose ExpiryTime has run out (ending its recording) and returns their IDs.
    /// Commands and reads call this first, so an overdue connection is never visible even if the timer is late.
    @discardableResult
    public func removeExpiredConnections() throws(TransportCommandError) -> [UInt16] {
        let now = clock.now()
        let expired = connections.values.filter { ($0.expiryDeadline ?? .distantFuture) <= now }.map(\.connectionID).sorted()
        guard !expired.isEmpty else { return [] }
        try remove(expired, reason: .expired)
        return expired
    }

    /// Removes expired connections until cancelled, waking at the earliest deadline and at least once a second
    /// (so a newly allocated shorter TTL is noticed without a wake-up channel). Storage errors go to `reportError`
    /// and the removal is retried on the next wake-up.
    public func runExpiryTimer(reportError: @escaping @Sendable (TransportCommandError) -> Void = { _ in }) async {
        while !Task.isCancelled {
            do { try removeExpiredConnections() } catch { reportError(error) }
            saveUnsavedEnds()
            let now = clock.now()
            let earliest = connections.values.compactMap(\.expiryDeadline).min() ?? .distantFuture
            do { try await clock.sleep(until: min(earliest, now.addingTimeInterval(1))) } catch { return }
        }
    }

    /// Lazy expiry for reads and commands. A failed delete leaves the connection in place; the next call (or
    /// `runExpiryTimer`, which reports the error) retries it.
    func removeExpiredConnectionsRetryingLater() {
        _ = try? removeExpiredConnections()
    }
}
