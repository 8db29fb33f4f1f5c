import Domain
import Foundation
import GRDB

/// The highest CMAF session number used per ingest URL, in one SQLite file per user (by default
/// `$XDG_STATE_HOME/pushav/sessions.sqlite`, else `~/.local/state/pushav/sessions.sqlite`).
///
/// Session numbers per connection only ever increase (the upload rules), and the ingest cannot be asked which
/// sessions it holds. The spool remembers the numbers it has seen, but a run with another `--out` or `--spool` has
/// another spool: without this ledger it would start again at `session_1` and overwrite the server's earlier
/// sessions. A session is entered here when it starts, before any of its bytes are written, so a crash never
/// hands the same number out twice.
public final class SessionLedger: Sendable {
    public let file: URL
    private let database: DatabasePool

    /// The ledger file to use: `$PUSHAV_STATE_DIR`, else `$XDG_STATE_HOME/pushav`, else `~/.local/state/pushav`.
    public static func defaultFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let directory: URL
        if let explicit = environment["PUSHAV_STATE_DIR"], !explicit.isEmpty {
            directory = URL(fileURLWithPath: explicit)
        } else if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") {
            directory = URL(fileURLWithPath: xdg).appendingPathComponent("pushav")
        } else {
            directory = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/state/pushav")
        }
        return directory.appendingPathComponent("sessions.sqlite")
    }

    public init(file: URL = SessionLedger.defaultFile()) throws {
        self.file = file
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        var configuration = Configuration()
        // Several pushav processes of one user share this file; a write waits for another's instead of failing
        // with "database is locked" (each holds the lock for one tiny transaction). WAL makes that transaction one
        // fsync instead of the rollback journal's several, so waits stay short even on a slow disk.
        configuration.busyMode = .timeout(30)
        database = try DatabasePool(path: file.path, configuration: configuration)
        // GRDB's pool sets NORMAL when it opens the WAL, after `prepareDatabase`: FULL is set here, on the writer
        // connection, or a power failure could hand a session number out twice.
        try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: "CREATE TABLE lastSession (connection TEXT PRIMARY KEY, session INTEGER NOT NULL)")
        }
        try migrator.migrate(database)
    }

    /// `PRAGMA synchronous` of the connection that commits (2 is FULL).
    func commitSynchronousLevel() throws -> Int {
        try database.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// The highest session number entered for `connection`, 0 if none.
    public func highest(connection: String) throws -> SessionNumber {
        try database.read { db in
            try SessionNumber.fetchOne(db, sql: "SELECT session FROM lastSession WHERE connection = ?", arguments: [connection])
        } ?? 0
    }

    /// Enters `session` as used for `connection` (a lower number than the highest entered changes nothing).
    public func enter(_ session: SessionNumber, connection: String) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO lastSession (connection, session) VALUES (?, ?)
                ON CONFLICT(connection) DO UPDATE SET session = max(session, excluded.session)
                """, arguments: [connection, session])
        }
    }
}
