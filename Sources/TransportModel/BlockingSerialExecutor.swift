import Dispatch

/// A serial executor on a dispatch queue of its own: an actor that does blocking work inside its methods (the cluster
/// commits every change to SQLite with fsync before it takes effect) runs them on that queue's thread, never on Swift's
/// cooperative pool, which has one thread per core and which a few fsync waits would stall — HTTP handlers, timers
/// and uploads with it.
///
/// Bound: one thread per actor using it; jobs queue on it in order (an actor's jobs are serial anyway).
public final class BlockingSerialExecutor: SerialExecutor, @unchecked Sendable {
    // @unchecked: `queue` is immutable and DispatchQueue is thread-safe.
    private let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
