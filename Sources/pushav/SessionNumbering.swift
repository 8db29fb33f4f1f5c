import Domain
import Foundation
import Ingest
import Logging
import Recorder
import Synchronization

/// Where `pushav record` starts numbering sessions, so that numbers only ever increase per connection:
/// after every session already in `--out`, and with `--push` also after every session the spool and the
/// per-user ``SessionLedger`` have seen for that URL. With `--push`, each session is entered in the ledger as it
/// starts (on the media thread, before its first byte is written).
final class SessionNumbering: Sendable {
    private let ledger: SessionLedger?
    private let connection: String?
    private let logger: Logger
    private let failure = Mutex<String?>(nil)

    /// Moves every policy's first session past what exists, and hooks the ledger into `options.events`.
    init(options: inout RecordingOptions, upload: RecordingUpload?, stateDirectory: String?, logger: Logger) throws {
        self.logger = logger
        var first = SessionLayout.highestSession(in: options.output).next
        if let upload {
            let file = stateDirectory.map { URL(fileURLWithPath: $0).appendingPathComponent("sessions.sqlite") }
                ?? SessionLedger.defaultFile()
            do {
                ledger = try SessionLedger(file: file)
            } catch {
                throw CLIError("cannot open the session ledger \(file.path): \(error)")
            }
            connection = upload.uploader.endpoint.connection
            first = max(first, try ledger!.highest(connection: connection!).next)
        } else {
            ledger = nil
            connection = nil
        }
        for index in options.policies.indices {
            options.policies[index].firstSession = max(options.policies[index].firstSession, first)
        }
        guard ledger != nil else { return }
        let forward = options.events
        options.events = { [self] event in
            if case .sessionStarted(let session, _) = event { self.enter(session) }
            forward?(event)
        }
    }

    private func enter(_ session: SessionNumber) {
        guard let ledger, let connection else { return }
        do {
            try ledger.enter(session, connection: connection)
        } catch {
            logger.error("could not enter session \(session) in \(ledger.file.path): \(error)")
            failure.withLock { $0 = $0 ?? "session \(session) was not entered in \(ledger.file.path) (\(error)); a later run may reuse its number" }
        }
    }

    /// Throws if a session could not be entered: the run's data is safe, but a later run could reuse its number.
    func check() throws {
        if let message = failure.withLock({ $0 }) { throw CLIError(message) }
    }
}
