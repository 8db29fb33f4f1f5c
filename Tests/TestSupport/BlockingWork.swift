import Foundation

/// Blocking work of a test (a child process, FFmpeg in-process, a script) on a thread of its own.
///
/// Swift Testing runs every test function, synchronous ones included, on the cooperative pool: one thread per core,
/// two on CI. A test that blocked there for seconds would stall the timers, in-process servers and uploads of every
/// other test running beside it, and their bounded waits would fail. Tests therefore await blocking work through
/// this. (Not NIO's blocking-I/O pool: the code under test needs that, and a test may block for minutes.)
public enum BlockingWork {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
