import Domain
import Foundation
import Ingest
import Synchronization
import Testing

/// The per-user session ledger is one SQLite file that concurrent `pushav` processes write.
@Suite struct SessionLedgerTests {
    /// Writers on separate connections to one file wait for each other instead of failing with "database is locked".
    @Test func concurrentWritersOnOneFileAllSucceed() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("sessions.sqlite")
        let writers = 4, sessionsEach: SessionNumber = 12
        let ledgers = try (0..<writers).map { _ in try SessionLedger(file: file) }
        let failures: [String] = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let messages = Mutex<[String]>([])
                DispatchQueue.concurrentPerform(iterations: writers) { writer in
                    for session in SessionNumber.first...sessionsEach {
                        do {
                            try ledgers[writer].enter(session, connection: "https://ingest.example/\(writer)")
                            try ledgers[writer].enter(session, connection: "https://ingest.example/shared")
                        } catch {
                            messages.withLock { $0.append("writer \(writer), session \(session): \(error)") }
                        }
                    }
                }
                continuation.resume(returning: messages.withLock { $0 })
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let reader = try SessionLedger(file: file)
        for writer in 0..<writers {
            #expect(try reader.highest(connection: "https://ingest.example/\(writer)") == sessionsEach)
        }
        #expect(try reader.highest(connection: "https://ingest.example/shared") == sessionsEach)
    }
}
