/// Waiting for a condition with a deadline: what tests do instead of sleeping for a guessed time.
public enum Polling {
    public struct TimedOut: Error, CustomStringConvertible {
        public var description: String
    }

    /// Polls `condition` every 20 ms until it holds; throws ``TimedOut`` after `timeout`.
    public static func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !(try await condition()) {
            guard ContinuousClock.now < deadline else { throw TimedOut(description: "timed out after \(timeout) waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
