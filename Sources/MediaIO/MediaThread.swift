import Foundation

/// Runs blocking FFmpeg work on a dedicated thread and awaits it from async code.
///
/// FFmpeg's open/read calls block for as long as a camera makes them wait; on Swift's cooperative pool (two threads on
/// a two-core box) two such calls freeze every other task. Each recording therefore owns a thread; cancelling the
/// awaiting task sets the ``InterruptFlag`` that the work and FFmpeg's `AVIOInterruptCB` poll.
public enum MediaThread {
    public static func run<T: Sendable>(
        name: String,
        interrupt: InterruptFlag,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        // The flag may also be set by someone else (a graceful stop that the work turns into a normal end); only a
        // cancelled task makes a failure read as cancellation.
        let cancelled = InterruptFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let thread = Thread {
                    do {
                        continuation.resume(returning: try work())
                    } catch {
                        // FFmpeg reports an interrupted call as AVERROR_EXIT ("Immediate exit requested"); to the
                        // awaiting task that is cancellation, not a media failure.
                        continuation.resume(throwing: cancelled.isSet ? CancellationError() : error)
                    }
                }
                thread.name = name
                thread.stackSize = 4 << 20
                thread.start()
            }
        } onCancel: {
            cancelled.set()
            interrupt.set()
        }
    }
}
