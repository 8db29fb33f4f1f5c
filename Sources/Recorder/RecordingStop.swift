import MediaIO
import Synchronization

/// Asks a running recording to end normally: it stops reading, ends every open clip at the last frame read (end
/// reason `interrupted`), finishes its muxers and returns its report. What a CLI does on Ctrl-C / SIGTERM and what a
/// service does on shutdown.
///
/// Unlike cancelling the recording's task (which throws `CancellationError` and keeps no report), a stop is a
/// normal end. Request it from any thread, as often as you like; a request made before ``Recorder/record(input:options:stop:logger:progress:)``
/// starts stops that recording as soon as it begins. One handle may stop several recordings at once.
public final class RecordingStop: Sendable {
    private struct State {
        var requested = false
        /// Interrupt flags of the recordings currently running with this handle (FFmpeg polls them while blocking).
        var running: [ObjectIdentifier: InterruptFlag] = [:]
        var actions: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Requests the stop; returns false if it had been requested already.
    @discardableResult
    public func request() -> Bool {
        let (first, flags, actions) = state.withLock { state in
            defer {
                state.requested = true
                state.actions.removeAll()
            }
            return (!state.requested, Array(state.running.values), state.actions)
        }
        // A blocking read (a camera that sends nothing) returns at once with AVERROR_EXIT.
        for flag in flags { flag.set() }
        for action in actions { action() }
        return first
    }

    /// Runs `action` once when the stop is requested (right away, on this thread, if it already was); otherwise on
    /// the thread that requests it, so keep it short.
    public func whenRequested(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if !state.requested { state.actions.append(action) }
            return state.requested
        }
        if now { action() }
    }

    public var isRequested: Bool { state.withLock { $0.requested } }

    /// Registers a recording's interrupt flag for its lifetime; sets it right away if the stop came first.
    func attach(_ flag: InterruptFlag) {
        let requested = state.withLock { state in
            state.running[ObjectIdentifier(flag)] = flag
            return state.requested
        }
        if requested { flag.set() }
    }

    func detach(_ flag: InterruptFlag) {
        _ = state.withLock { $0.running.removeValue(forKey: ObjectIdentifier(flag)) }
    }
}

/// A recording stopped (``RecordingStop``) before its input delivered anything: nothing was recorded or lost.
public struct RecordingStoppedBeforeStart: Error, Sendable, CustomStringConvertible {
    public let input: String
    public var description: String { "stopped before \(input) was open: nothing recorded" }
}
