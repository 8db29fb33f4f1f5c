import NIOPosix

/// Where async code runs blocking file and SQLite work: a thread of NIO's shared blocking-I/O pool.
///
/// A spool commit (`synchronous = FULL`) waits for fsync. On Swift's cooperative pool, which has one thread per core,
/// a few such waits stall every task of the process: HTTP handlers, timers, other uploads. The pool's queue is
/// unbounded, but every caller awaits its own call, so it holds at most one job per waiting task.
public enum BlockingIO {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }
}
