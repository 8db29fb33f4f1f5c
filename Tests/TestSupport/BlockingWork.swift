import Foundation

/// Blocking work of a test (a child process, FFmpeg in-process, a script) on a thread of its own, a few at a time.
///
/// Swift Testing runs every test function, synchronous ones included, on the cooperative pool: one thread per core,
/// two on CI. A test that blocked there for seconds would stall the timers, in-process servers and uploads of every
/// other test running beside it, and their bounded waits would fail. Tests therefore await blocking work through
/// this. (Not `BlockingIO`'s pool: the code under test needs that, and a test may block for minutes.)
///
/// Work that loads the CPU for seconds (a `pushav` or `ffmpeg` run) goes through ``runHeavy(_:)``: at most
/// ``heavyLimit`` of those run at once, the others wait their turn in order. Blocked cooperative threads used to cap,
/// by accident, how many such processes the suite ran at once; without a cap dozens start together on two cores and
/// every one of them misses its time limit. Short work (openssl, sqlite3, a browser page) uses ``run(_:)`` and never
/// queues behind them.
public enum BlockingWork {
    public static let heavyLimit = max(2, ProcessInfo.processInfo.activeProcessorCount)
    private static let slots = Slots(heavyLimit)

    /// Runs `body` on a thread of its own at once.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
            Thread { continuation.resume(returning: Result { try body() }) }.start()
        }
        return try result.get()
    }

    /// Runs `body` on a thread of its own once fewer than ``heavyLimit`` heavy bodies are running.
    public static func runHeavy<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        await slots.acquire()
        do {
            let value = try await run(body)
            await slots.release()
            return value
        } catch {
            await slots.release()
            throw error
        }
    }

    /// A counting semaphore for async code; waiters are served first come, first served.
    private actor Slots {
        private var free: Int
        private var waiters: [CheckedContinuation<Void, Never>] = []

        init(_ count: Int) { free = count }

        func acquire() async {
            if free > 0 {
                free -= 1
                return
            }
            await withCheckedContinuation { waiters.append($0) }
        }

        func release() {
            if waiters.isEmpty { free += 1 } else { waiters.removeFirst().resume() }
        }
    }
}
