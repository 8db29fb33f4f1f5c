import CMAF
import Domain
import Foundation
import Logging
import MediaIO
import Motion
import Timeline

/// The synchronous body of a recording; lives on the media thread. Demuxes once, analyses once, and feeds every
/// connection's ``ClipRunner`` from the same packets: the stages are a ``RecordingPass``; this is the loop that drives
/// it, for `pushav record` and `pushav serve` alike.
struct RecordingPipeline {
    let url: String
    let options: RecordingOptions
    let interrupt: InterruptFlag
    let stop: RecordingStop
    let logger: Logger
    let progress: (@Sendable (RecordingProgress) -> Void)?

    /// Opens the pass, reads the input to its end (or to a stop), then ends every runner and returns the report.
    /// A read that fails closes the open clips with what was read and throws ``RecordingFailure`` carrying the report.
    func run() throws -> RecordingReport {
        let pass = try RecordingPass(url: url, options: options, interrupt: interrupt, stop: stop, logger: logger)
        defer { pass.close() }
        var failure: (any Error)?
        var stopped = false
        var lastProgress = ContinuousClock.now
        do {
            while true {
                let more: Bool
                do {
                    more = try pass.reader.read()
                } catch where stop.isRequested {
                    // The stop interrupted the read (or came between two): what was read so far is the recording.
                    stopped = true
                    logger.notice("stop requested; ending open clips at the last frame read",
                                  metadata: ["at": "\(pass.timeline.position)"])
                    break
                }
                guard more else { break }
                try pass.admitReadPacket()
                if let progress, ContinuousClock.now - lastProgress > .seconds(1) {
                    lastProgress = .now
                    progress(pass.progress)
                }
            }
            try pass.drainInput(stopped: stopped)
        } catch {
            failure = error
            logger.notice("input failed; closing open clips with what was read", metadata: ["error": "\(error)"])
            pass.flushAfterFailure()
        }
        return try pass.finish(stopped: stopped, failure: failure)
    }
}
