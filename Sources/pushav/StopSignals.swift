import Dispatch
import Foundation
import Recorder

/// SIGINT (Ctrl-C) and SIGTERM as a graceful stop: the first asks `stop` to end the recording normally (open clips
/// closed, report written, spool writes finished, exit 0); a second one exits at once with 128 + the signal number.
final class StopSignals {
    private let sources: [any DispatchSourceSignal]
    private static let signals = [SIGINT, SIGTERM]

    /// Installs the handlers; `onFirst` runs (on a private queue) once, with the number of the first signal.
    init(stop: RecordingStop, onFirst: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "pushav-signals")
        sources = Self.signals.map { number in
            // The default action would end the process before the dispatch source ever sees the signal.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if stop.request() {
                    onFirst(number)
                } else {
                    FileHandle.standardError.write(Data("second signal (\(Self.name(number))): exiting at once\n".utf8))
                    _exit(128 + number)
                }
            }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources { source.cancel() }
        for number in Self.signals { signal(number, SIG_DFL) }
    }

    static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
