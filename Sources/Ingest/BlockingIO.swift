import Foundation
import NIOPosix

/// Where async code runs blocking file and SQLite work: a thread pool of its own, ``threadCount`` threads.
///
/// A spool commit (`synchronous = FULL`) waits for fsync. On Swift's cooperative pool, which has one thread per core,
/// a few such waits stall every task of the process: HTTP handlers, timers, other uploads. NIO's shared blocking pool
/// is no better a home: it too has one thread per core, so on a two-core camera two slow fsyncs (a busy SD card)
/// held every status read, reconcile and clip read behind them. The work here waits on the disk far more than it
/// computes, so the pool is twice as wide as the machine, at least four. The pool's queue is unbounded, but every
/// caller awaits its own call, so it holds at most one job per waiting task.
public enum BlockingIO {
    public static let threadCount = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)

    /// Started on first use and never shut down: it lives as long as the process, like NIO's own singletons.
    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: threadCount)
        pool.start()
        return pool
    }()

    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }
}
