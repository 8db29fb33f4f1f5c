import Synchronization

/// Runs async bodies one at a time, in the order they asked (a lock that suspends instead of blocking a thread).
/// Why: a camera's reconcile reads the cluster, then writes the spool and tells the recorder; two of them interleaving
/// at those awaits could register a destination after another retired it.
public final class SerialGate: Sendable {
    private let state = Mutex<(busy: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    public init() {}

    public func run<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        defer {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiting.isEmpty else {
                    state.busy = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }
}
