import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

/// A spooled object: where its bytes are and how often upload was tried.
public struct SpoolEntry: Sendable, Hashable {
    public var connection: String
    public var object: UploadObject
    public var bytes: Int
    public var createdAt: Date
    /// Attempts as an older version journalled them (this one counts them in memory only: 0 for new objects).
    public var attempts: Int
    public var delivered: Bool
}

/// Where a session stands in the spool, for reports that must tell a session delivered whole from one the
/// uploader gave part of up.
public enum SessionDelivery: Sendable, Hashable {
    /// The recording has not finished, or objects of it are still waiting to be sent.
    case pending
    /// Finished, and every object of it reached the ingest.
    case delivered
    /// Finished and nothing left to send, but the ingest refused these objects for good and they were given up.
    case givenUp([UploadObject])
}

/// A recording the spool keeps after delivery for the status page (see ``SegmentSpool/keepRecent(_:connection:track:started:owner:)``).
public struct RecentRecording: Sendable, Hashable {
    /// The spool label (destination) its objects are under.
    public var connection: String
    /// `camera/connection`.
    public var owner: String
    public var session: Int
    /// The track kept (the video's).
    public var track: String
    public var started: Date
    public var ended: Date?
    public var endReason: String?
    public var triggerType: String?
    public var triggerOffset: Double?
    public var hasThumbnail: Bool
    /// Bytes of its track on disk so far.
    public var bytes: Int
    /// Its recording ended (the page lists it as a clip).
    public var finished: Bool
}

/// One file of a recent recording (Sendable across the blocking-I/O pool).
struct RecentFile: Sendable {
    var file: URL
    var bytes: Int
}

/// One connection's share of the spool, for status pages.
public struct ConnectionQueue: Sendable, Hashable {
    /// Objects not yet delivered.
    public var depth: Int
    /// When the oldest of them was spooled; nil when none waits.
    public var oldestWaiting: Date?

    public init(depth: Int, oldestWaiting: Date?) {
        self.depth = depth
        self.oldestWaiting = oldestWaiting
    }
}

/// What the spool holds, for metrics, logs and the transport model's BUSY answer.
public struct SpoolStatistics: Sendable, Hashable {
    /// Objects not yet delivered.
    public var queueDepth: Int
    /// Bytes on disk (undelivered objects plus headers kept for 412 resends).
    public var bytes: Int
    /// Age of the oldest undelivered object, in seconds (0 when empty).
    public var oldestAge: Double
    /// Whole sessions evicted since this spool was opened.
    public var evictions: Int
}

/// The durable upload queue: every CMAF object is written and fsync'd under `directory/objects/` (its name says which
/// object it is) and journalled in SQLite (WAL) before upload is attempted, so a `kill -9` or a power failure loses
/// at most what was not yet handed over. Bounded by bytes: when full, whole oldest sessions (clips) are evicted, logged and counted. Thread-safe.
public final class SegmentSpool: Sendable {
    public let directory: URL
    public let capacity: Int
    /// How much the recent recordings may hold: bytes on disk and sessions. Past either the oldest go first. An
    /// undelivered object never gives way to them: eviction for space takes recent recordings before anything waiting.
    public let recentBytes: Int
    public let recentSessions: Int
    private let database: DatabasePool
    private let logger: Logger
    /// Connections whose queue gauges were last published non-empty; held while publishing, so two publishers
    /// cannot leave an older reading last.
    private let publishedConnections = Mutex<Set<String>>([])
    /// Sessions finished since open: every 100th prunes the delivery records.
    private let finishedSessions = Atomic<Int>(0)

    /// Opens (or creates) the spool: drops journal rows whose file vanished and adopts object files whose row was
    /// lost (see ``recover()``).
    public init(directory: URL, capacity: Int = 1 << 30, recentBytes: Int = 256 << 20, recentSessions: Int = 100,
                logger: Logger = Logger(label: "pushav.spool")) throws {
        self.directory = directory
        self.capacity = capacity
        self.recentBytes = recentBytes
        self.recentSessions = recentSessions
        self.logger = logger
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("objects"), withIntermediateDirectories: true)
        freeSpaceReserve = Self.reserve(for: directory)
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // A commit writes whole pages, to the WAL and again at the checkpoint: a spool's rows are small and each
            // commit touches one or two of them, so 1 KiB pages write a quarter of 4 KiB's (flash wear). It takes
            // effect for a new spool only (an existing one keeps its page size).
            try db.execute(sql: "PRAGMA page_size = 1024")
        }
        database = try DatabasePool(path: directory.appendingPathComponent("journal.sqlite").path, configuration: configuration)
        // The journal commits without an fsync (WAL, synchronous = NORMAL, also what GRDB's pool sets): a commit
        // survives kill -9 (it is in the WAL), and a power failure can lose only the last commits — which the files
        // make good: each object's file is fsync'd under its own name before its row is written, and ``recover()``
        // adopts a file whose row was lost (a lost "delivered" only means one resend). An fsync per commit (FULL)
        // cost 0.3 bytes written per byte recorded on a Command transport (`Scripts/bench-serve`).
        try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = NORMAL") }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE object (
                    connection TEXT NOT NULL, session INTEGER NOT NULL, track TEXT NOT NULL, number INTEGER NOT NULL,
                    bytes INTEGER NOT NULL, created REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (connection, session, track, number));
                CREATE TABLE session (
                    connection TEXT NOT NULL, session INTEGER NOT NULL, finished INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (connection, session));
                CREATE TABLE counter (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
                """)
        }
        // v2 only adds a table: spools written before it open unchanged, with nothing given up.
        migrator.registerMigration("v2-given-up") { db in
            try db.execute(sql: """
                CREATE TABLE given_up (
                    connection TEXT NOT NULL, session INTEGER NOT NULL, track TEXT NOT NULL, number INTEGER NOT NULL,
                    reason TEXT NOT NULL, at REAL NOT NULL,
                    PRIMARY KEY (connection, session, track, number));
                """)
        }
        // v3: where each spool label's objects go (see ``UploadDestination``). Spools written before it open unchanged;
        // their labels have no destination row until `pushav serve` adopts them.
        migrator.registerMigration("v3-destinations") { db in
            try db.execute(sql: """
                CREATE TABLE destination (
                    key TEXT PRIMARY KEY NOT NULL, owner TEXT NOT NULL, url TEXT NOT NULL, fabric INTEGER,
                    trusted BLOB, chain BLOB NOT NULL, keyReference TEXT, created REAL NOT NULL, retired REAL);
                CREATE INDEX given_up_at ON given_up (at);
                """)
        }
        // v4: recent recordings — delivered sessions kept for the status page (their track's objects stay on disk
        // instead of a second copy being written). Spools written before open with none.
        migrator.registerMigration("v4-recent") { db in
            try db.execute(sql: """
                CREATE TABLE recent (
                    connection TEXT NOT NULL, session INTEGER NOT NULL, track TEXT NOT NULL, owner TEXT NOT NULL,
                    started REAL NOT NULL, ended REAL, endReason TEXT, triggerType TEXT, triggerOffset REAL,
                    thumbnail BLOB, finished INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (connection, session)) WITHOUT ROWID;
                """)
        }
        // v5: the journal's tables without rowids: a row lives in its primary key's B-tree alone, so a commit changes
        // one B-tree, not a table and its index (half the pages written per object stored or delivered).
        migrator.registerMigration("v5-without-rowid") { db in
            try db.execute(sql: """
                CREATE TABLE object5 (
                    connection TEXT NOT NULL, session INTEGER NOT NULL, track TEXT NOT NULL, number INTEGER NOT NULL,
                    bytes INTEGER NOT NULL, created REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (connection, session, track, number)) WITHOUT ROWID;
                INSERT INTO object5 SELECT connection, session, track, number, bytes, created, attempts, delivered FROM object;
                DROP TABLE object;
                ALTER TABLE object5 RENAME TO object;
                CREATE TABLE session5 (
                    connection TEXT NOT NULL, session INTEGER NOT NULL, finished INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (connection, session)) WITHOUT ROWID;
                INSERT INTO session5 SELECT connection, session, finished FROM session;
                DROP TABLE session;
                ALTER TABLE session5 RENAME TO session;
                """)
        }
        try migrator.migrate(database)
        try recover()
        try pruneDeliveryRecords()
        publishMetrics()
    }

    // MARK: - Writing

    /// Writes `bytes` durably, then journals them. Returns only when both are on disk; throws only when the object is
    /// not durable. May evict older sessions.
    public func store(_ bytes: [UInt8], for object: UploadObject, connection: String, now: Date = Date()) throws {
        do {
            // Room first: the disk keeps its reserve however large the spool's capacity is.
            try evictIfFull(keeping: SessionKey(connection: connection, session: object.session), adding: bytes.count)
        } catch {
            logger.error("spool eviction failed", metadata: ["error": "\(error)"])
        }
        try DurableFile.write(bytes, to: fileURL(connection: connection, object: object))
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO object (connection, session, track, number, bytes, created, attempts, delivered)
                    VALUES (?, ?, ?, ?, ?, ?, 0, 0)
                    """,
                arguments: [connection, object.session, object.track, object.number, bytes.count, now.timeIntervalSince1970])
            try db.execute(sql: "INSERT OR IGNORE INTO session (connection, session) VALUES (?, ?)",
                           arguments: [connection, object.session])
            try db.execute(sql: """
                INSERT INTO counter (name, value) VALUES (?, ?)
                ON CONFLICT(name) DO UPDATE SET value = excluded.value WHERE excluded.value > value
                """, arguments: ["session:" + connection, object.session])  // unchanged: no write at all (flash wear)
        }
        do {
            try evictIfFull(keeping: SessionKey(connection: connection, session: object.session))
        } catch {
            // The object itself is durable: a failed eviction leaves the spool over capacity, it loses nothing.
            logger.error("spool eviction failed; the spool stays over capacity", metadata: ["error": "\(error)"])
        }
        publishMetrics()
    }

    /// The next session number for `connection`: session numbers start at 1 and only ever increase (persisted).
    public func nextSessionNumber(connection: String) throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM counter WHERE name = ?", arguments: ["session:" + connection])
        }.map { $0 + 1 } ?? 1
    }

    /// Marks a session complete: once its objects are delivered, its headers are no longer needed for 412 resends.
    public func finishSession(_ session: Int, connection: String) throws {
        try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO session (connection, session, finished) VALUES (?, ?, 1)",
                           arguments: [connection, session])
        }
        try pruneHeaders(connection: connection)
        // Every 100th finished session (and at every open) the delivery records are pruned: bounded tables without a
        // write per session.
        if finishedSessions.add(1, ordering: .relaxed).newValue % 100 == 0 {
            do { try pruneDeliveryRecords() } catch {
                logger.warning("pruning the spool's delivery records failed; tried again later", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: - Destinations

    /// Records `destination` (idempotent) as a current one: a retired destination used again is current again.
    public func register(_ destination: UploadDestination, now: Date = Date()) throws {
        let fabric: Int? = destination.fabric.map { Int($0) }
        let trusted: Data? = destination.trustedCertificates.map { Data($0) }
        let chain = Data(destination.certificateChain)
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO destination (key, owner, url, fabric, trusted, chain, keyReference, created, retired)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
                ON CONFLICT(key) DO UPDATE SET retired = NULL WHERE retired IS NOT NULL
                """, arguments: [destination.key, destination.owner, destination.url, fabric, trusted, chain,
                                 destination.privateKeyReference, now.timeIntervalSince1970])
        }
    }

    /// No connection records for `key` any more: it only finishes what it holds. The first retirement's time is kept
    /// (a restart does not start its patience again).
    public func retire(destination key: String, now: Date = Date()) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE destination SET retired = ? WHERE key = ? AND retired IS NULL",
                           arguments: [now.timeIntervalSince1970, key])
        }
    }

    /// Every destination the spool describes, with what still waits for it.
    public func storedDestinations() throws -> [StoredDestination] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT d.*, (SELECT count(*) FROM object o WHERE o.connection = d.key AND o.delivered = 0) AS pending
                FROM destination d ORDER BY d.key
                """).map { row in
                let trusted: Data? = row["trusted"]
                let chain: Data = row["chain"]
                let fabric: Int? = row["fabric"]
                let retired: Double? = row["retired"]
                let destination = UploadDestination(
                    owner: row["owner"], url: row["url"], fabric: fabric.map { UInt8(truncatingIfNeeded: $0) },
                    trustedCertificates: trusted.map { Array($0) }, certificateChain: Array(chain),
                    privateKeyReference: row["keyReference"], key: row["key"])
                return StoredDestination(destination: destination, pending: row["pending"],
                                         retiredAt: retired.map { Date(timeIntervalSince1970: $0) })
            }
        }
    }

    /// Forgets a retired destination once nothing of it waits (its delivered headers and its row go; what was given up
    /// stays in `given_up` until pruned). Returns whether it was forgotten.
    @discardableResult
    public func forgetDestinationIfDone(_ key: String) throws -> Bool {
        let forgotten = try database.write { db -> Bool in
            let waiting = try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM object WHERE connection = ? AND delivered = 0)
                """, arguments: [key]) ?? true
            let retired = try Bool.fetchOne(db, sql: "SELECT retired IS NOT NULL FROM destination WHERE key = ?",
                                            arguments: [key]) ?? false
            // Its recent recordings keep it (and its description) until they go.
            let kept = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM recent WHERE connection = ?)", arguments: [key]) ?? false
            guard !waiting, retired, !kept else { return false }
            try db.execute(sql: "DELETE FROM object WHERE connection = ?", arguments: [key])
            try db.execute(sql: "DELETE FROM destination WHERE key = ?", arguments: [key])
            return true
        }
        if forgotten {
            try? FileManager.default.removeItem(
                at: directory.appendingPathComponent("objects").appendingPathComponent(Self.safeName(key)))
            publishMetrics()
        }
        return forgotten
    }

    /// Gives up everything still waiting for `key` (a retired destination that stayed unreachable past its patience):
    /// each object leaves the queue and is recorded in `given_up` with `reason`. Returns the objects given up.
    public func giveUpPending(destination key: String, reason: String, now: Date = Date()) throws -> [UploadObject] {
        let objects: [UploadObject] = try database.write { db in
            let objects = try Row.fetchAll(db, sql: """
                SELECT session, track, number FROM object WHERE connection = ? AND delivered = 0 ORDER BY session, track, number
                """, arguments: [key]).map { UploadObject(session: $0["session"], track: $0["track"], number: $0["number"]) }
            for object in objects {
                try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ? AND track = ? AND number = ?",
                               arguments: [key, object.session, object.track, object.number])
                try db.execute(sql: """
                    INSERT OR REPLACE INTO given_up (connection, session, track, number, reason, at) VALUES (?, ?, ?, ?, ?, ?)
                    """, arguments: [key, object.session, object.track, object.number, reason, now.timeIntervalSince1970])
            }
            return objects
        }
        for object in objects { try? FileManager.default.removeItem(at: fileURL(connection: key, object: object)) }
        try pruneHeaders(connection: key)
        publishMetrics()
        return objects
    }

    /// How long the record of a given-up object and of a finished, delivered session is kept (for the status page's
    /// delivered / given-up marks and `sessionDelivery`): a week, and at most ``sessionRecordsKept`` sessions per label.
    public static let deliveryRecordRetention: TimeInterval = 7 * 24 * 3600
    public static let sessionRecordsKept = 1000

    /// Drops delivery records older than ``deliveryRecordRetention`` and, per label, session rows beyond the newest
    /// ``sessionRecordsKept`` whose objects are all gone: the `given_up` and `session` tables stay bounded on a camera
    /// that records for years.
    public func pruneDeliveryRecords(now: Date = Date()) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM given_up WHERE at < ?",
                           arguments: [now.timeIntervalSince1970 - Self.deliveryRecordRetention])
            try db.execute(sql: """
                DELETE FROM session WHERE finished = 1
                  AND NOT EXISTS (SELECT 1 FROM object o WHERE o.connection = session.connection AND o.session = session.session)
                  AND session < (SELECT max(s.session) FROM session s WHERE s.connection = session.connection) - ?
                """, arguments: [Self.sessionRecordsKept])
        }
    }

    // MARK: - Recent recordings

    /// A recording that is kept once delivered: `track`'s header and segments stay on disk (marked delivered) so the
    /// status page plays them, instead of a second copy being written. Call when the session begins, before any of its
    /// objects is stored.
    public func keepRecent(_ session: Int, connection: String, track: String, started: Date, thumbnail: [UInt8]? = nil,
                           owner: String? = nil) throws {
        let thumbnail = thumbnail.map { Data($0) }
        try database.write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO recent (connection, session, track, owner, started, thumbnail) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [connection, session, track, owner ?? UploadDestination.owner(ofKey: connection),
                                 started.timeIntervalSince1970, thumbnail])
        }
    }

    /// The recent recording ended: what the page shows of it. Then the oldest recent recordings go
    /// beyond the bounds (``recentBytes``, ``recentSessions``).
    public func finishRecent(_ session: Int, connection: String, ended: Date, endReason: String?, triggerType: String?,
                             triggerOffset: Double?) throws {
        try database.write { db in
            try db.execute(sql: """
                UPDATE recent SET ended = ?, endReason = ?, triggerType = ?, triggerOffset = ?, finished = 1
                WHERE connection = ? AND session = ?
                """, arguments: [ended.timeIntervalSince1970, endReason, triggerType, triggerOffset, connection, session])
        }
        try trimRecent()
    }

    /// Stops keeping a recent recording (dropped, abandoned): its delivered objects go, what waits is still sent.
    public func forgetRecent(_ session: Int, connection: String) throws {
        try dropRecent([(connection, session)])
    }

    /// The recent recordings, newest first.
    public func recentRecordings() throws -> [RecentRecording] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT r.*, (SELECT coalesce(sum(o.bytes), 0) FROM object o
                             WHERE o.connection = r.connection AND o.session = r.session AND o.track = r.track) AS bytes
                FROM recent r ORDER BY r.started DESC
                """).map { row in
                let ended: Double? = row["ended"]
                let thumbnail: Data? = row["thumbnail"]
                return RecentRecording(
                    connection: row["connection"], owner: row["owner"], session: row["session"], track: row["track"],
                    started: Date(timeIntervalSince1970: row["started"]), ended: ended.map { Date(timeIntervalSince1970: $0) },
                    endReason: row["endReason"], triggerType: row["triggerType"], triggerOffset: row["triggerOffset"],
                    hasThumbnail: thumbnail != nil, bytes: row["bytes"], finished: row["finished"])
            }
        }
    }

    /// The thumbnail of a recent recording of `owner`.
    public func recentThumbnail(_ session: Int, owner: String) throws -> [UInt8]? {
        try database.read { db in
            try Data.fetchOne(db, sql: "SELECT thumbnail FROM recent WHERE owner = ? AND session = ?", arguments: [owner, session])
        }.map { Array($0) }
    }

    /// The files of a recent recording of `owner` in playing order — its track's header, then its segments by
    /// number — with their sizes: together one fragmented MP4. Nil when it is not kept (or not one of its files is).
    public func recentFiles(_ session: Int, owner: String) throws -> [(file: URL, bytes: Int)]? {
        try database.read { db -> [(URL, Int)]? in
            guard let row = try Row.fetchOne(db, sql: "SELECT connection, track FROM recent WHERE owner = ? AND session = ?",
                                             arguments: [owner, session]) else { return nil }
            let connection: String = row["connection"]
            let track: String = row["track"]
            let objects = try Row.fetchAll(db, sql: """
                SELECT number, bytes FROM object WHERE connection = ? AND session = ? AND track = ? ORDER BY number
                """, arguments: [connection, session, track])
            guard let first = objects.first, (first["number"] as Int) == 0 else { return nil }
            return objects.map { object in
                (fileURL(connection: connection, object: UploadObject(session: session, track: track, number: object["number"])),
                 object["bytes"])
            }
        }
    }


    private func trimRecent() throws {
        let over: [(String, Int)] = try database.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT r.connection, r.session, (SELECT coalesce(sum(o.bytes), 0) FROM object o
                    WHERE o.connection = r.connection AND o.session = r.session AND o.track = r.track AND o.delivered = 1) AS bytes
                FROM recent r WHERE r.finished = 1 ORDER BY r.started DESC
                """)
            var total = 0
            var dropped: [(String, Int)] = []
            for (index, row) in rows.enumerated() {
                total += row["bytes"] as Int
                if index >= recentSessions || total > recentBytes { dropped.append((row["connection"], row["session"])) }
            }
            return dropped
        }
        try dropRecent(over)
    }

    /// Forgets recent recordings: their delivered objects (rows and files) go; objects still waiting stay queued.
    private func dropRecent(_ sessions: [(String, Int)]) throws {
        guard !sessions.isEmpty else { return }
        let gone: [(String, UploadObject)] = try database.write { db in
            var gone: [(String, UploadObject)] = []
            for (connection, session) in sessions {
                let objects = try Row.fetchAll(db, sql: """
                    SELECT o.track, o.number FROM object o JOIN recent r ON r.connection = o.connection AND r.session = o.session
                    WHERE o.connection = ? AND o.session = ? AND o.delivered = 1 AND o.track = r.track AND o.number != 0
                    """, arguments: [connection, session])
                for object in objects {
                    gone.append((connection, UploadObject(session: session, track: object["track"], number: object["number"])))
                }
                try db.execute(sql: """
                    DELETE FROM object WHERE connection = ?1 AND session = ?2 AND delivered = 1 AND number != 0
                      AND track = (SELECT track FROM recent WHERE connection = ?1 AND session = ?2)
                    """, arguments: [connection, session])
                try db.execute(sql: "DELETE FROM recent WHERE connection = ? AND session = ?", arguments: [connection, session])
            }
            return gone
        }
        for (connection, object) in gone { try? FileManager.default.removeItem(at: fileURL(connection: connection, object: object)) }
        for connection in Set(sessions.map(\.0)) { try pruneHeaders(connection: connection) }
        publishMetrics()
    }

    // MARK: - Reading

    /// The oldest undelivered object of `track`, in upload order (session, header, segment number).
    public func nextPending(connection: String, track: String) throws -> SpoolEntry? {
        try database.read { db in
            try Row.fetchOne(db, sql: """
                SELECT * FROM object WHERE connection = ? AND track = ? AND delivered = 0
                ORDER BY session, number LIMIT 1
                """, arguments: [connection, track]).map(Self.entry)
        }
    }

    /// Whether `object` must wait for another lane (CMAF Interface-2): a session's headers wait for its dynamic
    /// manifest, its static manifest waits for every segment of the session.
    public func waitsForOtherTracks(connection: String, object: UploadObject) throws -> Bool {
        guard object.isHeader || object.isFinalManifest else { return false }
        return try database.read { db in
            let sql = object.isHeader
                ? "SELECT 1 FROM object WHERE connection = ? AND session = ? AND track = '' AND number = 0 AND delivered = 0"
                : "SELECT 1 FROM object WHERE connection = ? AND session = ? AND track != '' AND delivered = 0"
            return try Int.fetchOne(db, sql: sql, arguments: [connection, object.session]) != nil
        }
    }

    /// Undelivered objects per connection, for every connection that has any.
    public func pendingObjects() throws -> [String: Int] {
        try database.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT connection, count(*) AS n FROM object WHERE delivered = 0 GROUP BY connection")
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["connection"] as String, $0["n"] as Int) })
        }
    }

    /// Tracks with anything spooled for `connection` (replayed at start-up).
    public func tracks(connection: String) throws -> [String] {
        try database.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT track FROM object WHERE connection = ? AND delivered = 0 ORDER BY track",
                                arguments: [connection])
        }
    }

    /// Whether anything is waiting for `connection`: the transport model answers BUSY while this is true.
    public func isBusy(connection: String) throws -> Bool {
        try database.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM object WHERE connection = ? AND delivered = 0)",
                              arguments: [connection]) ?? false
        }
    }

    /// Whether `session` of `connection` is complete (its recording finished and every object was handed to the
    /// spool) and every object of it was delivered. False when an object of it was given up: see
    /// ``sessionDelivery(_:connection:)``.
    public func isSessionDelivered(_ session: Int, connection: String) throws -> Bool {
        try sessionDelivery(session, connection: connection) == .delivered
    }

    /// Whether `session` of `connection` is still pending, delivered whole, or settled with objects given up.
    public func sessionDelivery(_ session: Int, connection: String) throws -> SessionDelivery {
        try database.read { db in
            let finished = try Bool.fetchOne(db, sql: "SELECT finished FROM session WHERE connection = ? AND session = ?",
                                             arguments: [connection, session]) ?? false
            let pending = try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM object WHERE connection = ? AND session = ? AND delivered = 0)
                """, arguments: [connection, session]) ?? true
            guard finished, !pending else { return .pending }
            let givenUp = try Row.fetchAll(db, sql: """
                SELECT session, track, number FROM given_up WHERE connection = ? AND session = ? ORDER BY track, number
                """, arguments: [connection, session])
                .map { UploadObject(session: $0["session"], track: $0["track"], number: $0["number"]) }
            return givenUp.isEmpty ? .delivered : .givenUp(givenUp)
        }
    }

    /// ``sessionDelivery(_:connection:)`` of `session` under any label of `owner` (`camera/connection`: each of its
    /// destinations has a label of its own; session numbers are the connection's, so at most one label has it).
    public func sessionDelivery(_ session: Int, owner: String) throws -> SessionDelivery {
        let label = try database.read { db in
            try String.fetchOne(db, sql: """
                SELECT connection FROM session
                WHERE session = ?1 AND (connection = ?2 OR substr(connection, 1, length(?2) + 1) = ?2 || '@')
                ORDER BY finished DESC LIMIT 1
                """, arguments: [session, owner])
        }
        return try sessionDelivery(session, connection: label ?? owner)
    }

    /// Objects of `connection` given up so far (oldest session first), with why.
    public func givenUpObjects(connection: String) throws -> [(object: UploadObject, reason: String)] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT session, track, number, reason FROM given_up WHERE connection = ? ORDER BY session, track, number
                """, arguments: [connection])
                .map { (UploadObject(session: $0["session"], track: $0["track"], number: $0["number"]), $0["reason"]) }
        }
    }

    public func entry(connection: String, object: UploadObject) throws -> SpoolEntry? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM object WHERE connection = ? AND session = ? AND track = ? AND number = ?",
                             arguments: [connection, object.session, object.track, object.number]).map(Self.entry)
        }
    }

    /// The spooled bytes of an object.
    public func bytes(connection: String, object: UploadObject) throws -> [UInt8] {
        try DurableFile.read(fileURL(connection: connection, object: object))
    }

    public func statistics(now: Date = Date()) throws -> SpoolStatistics {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT (SELECT count(*) FROM object WHERE delivered = 0) AS depth,
                       (SELECT coalesce(sum(bytes), 0) FROM object) AS bytes,
                       (SELECT min(created) FROM object WHERE delivered = 0) AS oldest,
                       (SELECT coalesce(max(value), 0) FROM counter WHERE name = 'evictions') AS evictions
                """)!
            let oldest: Double? = row["oldest"]
            return SpoolStatistics(queueDepth: row["depth"], bytes: row["bytes"],
                                   oldestAge: oldest.map { max(0, now.timeIntervalSince1970 - $0) } ?? 0,
                                   evictions: row["evictions"])
        }
    }

    // MARK: - Upload bookkeeping

    /// A delivered segment leaves the spool; a delivered header stays until its session is finished and drained.
    public func markDelivered(connection: String, object: UploadObject) throws {
        var kept = false
        try database.write { db in
            // An object of a recent recording's track stays (delivered) for the status page.
            kept = try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM recent WHERE connection = ? AND session = ? AND track = ?)
                """, arguments: [connection, object.session, object.track]) ?? false
            if object.isHeader || kept {
                try db.execute(sql: "UPDATE object SET delivered = 1 WHERE connection = ? AND session = ? AND track = ? AND number = ?",
                               arguments: [connection, object.session, object.track, object.number])
            } else {
                try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ? AND track = ? AND number = ?",
                               arguments: [connection, object.session, object.track, object.number])
            }
        }
        if !object.isHeader && !kept {
            try? FileManager.default.removeItem(at: fileURL(connection: connection, object: object))
        }
        try pruneHeaders(connection: connection)
        publishMetrics()
    }

    /// The ingest refused `object` for good: it leaves the queue (row and file) as a delivered segment does, so the
    /// connection is no longer busy with it and nothing waits for it, and is recorded in `given_up` with `reason`, so
    /// ``sessionDelivery(_:connection:)`` still tells its session apart from one delivered whole.
    public func markGivenUp(connection: String, object: UploadObject, reason: String, now: Date = Date()) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ? AND track = ? AND number = ?",
                           arguments: [connection, object.session, object.track, object.number])
            try db.execute(sql: """
                INSERT OR REPLACE INTO given_up (connection, session, track, number, reason, at) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [connection, object.session, object.track, object.number, reason, now.timeIntervalSince1970])
        }
        try? FileManager.default.removeItem(at: fileURL(connection: connection, object: object))
        try pruneHeaders(connection: connection)
        publishMetrics()
    }

    // MARK: - Internals

    private struct SessionKey: Hashable {
        var connection: String
        var session: Int
    }

    private static func entry(_ row: Row) -> SpoolEntry {
        SpoolEntry(connection: row["connection"],
                   object: UploadObject(session: row["session"], track: row["track"], number: row["number"]),
                   bytes: row["bytes"], createdAt: Date(timeIntervalSince1970: row["created"]),
                   attempts: row["attempts"], delivered: row["delivered"])
    }

    /// Where `object`'s bytes are kept (internal: tests break it on purpose).
    func fileURL(connection: String, object: UploadObject) -> URL {
        directory.appendingPathComponent("objects").appendingPathComponent(Self.safeName(connection))
            .appendingPathComponent(object.spoolPath)
    }

    /// Connection labels may be URLs; the directory name keeps only safe characters (plus a hash of the original).
    static func safeName(_ connection: String) -> String {
        let kept = String(connection.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) ? Character($0) : "_" }.prefix(48))
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: a stable name across runs (Hasher is seeded per process)
        for byte in connection.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return kept + "-" + String(hash, radix: 16)
    }

    /// Headers of finished sessions whose segments are all delivered are no longer needed.
    private func pruneHeaders(connection: String) throws {
        let done: [UploadObject] = try database.write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT o.session, o.track FROM object o JOIN session s ON s.connection = o.connection AND s.session = o.session
                WHERE o.connection = ? AND o.number = 0 AND o.track != '' AND o.delivered = 1 AND s.finished = 1
                  AND NOT EXISTS (SELECT 1 FROM object p WHERE p.connection = o.connection AND p.session = o.session
                                  AND p.track = o.track AND p.delivered = 0)
                  AND NOT EXISTS (SELECT 1 FROM recent r WHERE r.connection = o.connection AND r.session = o.session
                                  AND r.track = o.track)
                """, arguments: [connection])
            let headers = rows.map { UploadObject.header(session: $0["session"], track: $0["track"]) }
            for header in headers {
                try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ? AND track = ? AND number = 0",
                               arguments: [connection, header.session, header.track])
            }
            return headers
        }
        for header in done {
            try? FileManager.default.removeItem(at: fileURL(connection: connection, object: header))
        }
    }

    /// Bytes the spool leaves free on its file system: a tenth of it, at least 256 KiB, at most 64 MiB.
    ///
    /// Why: `capacity` is a setting (1 GiB by default) that may exceed the disk. Without a reserve a long ingest outage
    /// fills the disk, and then nothing works — SQLite cannot commit even the deletes that would free space, the
    /// cluster cannot save a session number, and recording stops. With it the spool evicts its oldest sessions
    /// (logged and counted, the only way anything is dropped) and the camera keeps recording the newest.
    public let freeSpaceReserve: Int

    /// The size and the free bytes of the file system holding `directory` (nil when it cannot be read).
    private static func fileSystem(of directory: URL) -> (size: Int, free: Int)? {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return nil }
        return (Int(info.f_blocks) * Int(info.f_frsize), Int(info.f_bavail) * Int(info.f_frsize))
    }

    /// The reserve for the file system holding `directory`.
    static func reserve(for directory: URL) -> Int {
        guard let size = fileSystem(of: directory)?.size else { return 256 << 10 }
        return min(max(size / 10, 256 << 10), 64 << 20)
    }

    /// Evicts whole sessions, oldest first, while over capacity or while storing `adding` more bytes would eat into
    /// the disk's ``freeSpaceReserve``; never the session being written.
    private func evictIfFull(keeping current: SessionKey, adding: Int = 0) throws {
        while true {
            let short = Self.fileSystem(of: directory).map { $0.free - adding < freeSpaceReserve } ?? false
            let victim: (SessionKey, Int, Int, Int)? = try database.read { db in
                let total = try Int.fetchOne(db, sql: "SELECT coalesce(sum(bytes), 0) FROM object") ?? 0
                guard total > capacity || short else { return nil }
                // Sessions with nothing waiting (recent recordings kept for the page, delivered headers) go first: an
                // undelivered object never gives way to them.
                guard let row = try Row.fetchOne(db, sql: """
                    SELECT connection, session, sum(bytes) AS bytes, count(*) AS objects, sum(delivered = 0) AS waiting FROM object
                    WHERE NOT (connection = ? AND session = ?)
                    GROUP BY connection, session ORDER BY sum(delivered = 0) > 0, min(created) LIMIT 1
                    """, arguments: [current.connection, current.session])
                else { return nil }
                return (SessionKey(connection: row["connection"], session: row["session"]), row["bytes"], row["objects"], row["waiting"])
            }
            guard let (session, bytes, objects, waiting) = victim else { return }
            try database.write { db in
                try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ?", arguments: [session.connection, session.session])
                try db.execute(sql: "DELETE FROM recent WHERE connection = ? AND session = ?", arguments: [session.connection, session.session])
                if waiting > 0 {
                    try db.execute(sql: """
                        INSERT INTO counter (name, value) VALUES ('evictions', 1)
                        ON CONFLICT(name) DO UPDATE SET value = value + 1
                        """)
                }
            }
            try? FileManager.default.removeItem(
                at: directory.appendingPathComponent("objects").appendingPathComponent(Self.safeName(session.connection))
                    .appendingPathComponent("session_\(session.session)"))
            guard waiting > 0 else {
                // Nothing was lost: it had been delivered. The page shows one recording fewer.
                logger.info("spool short of room: a delivered recent recording made way", metadata: [
                    "connection": "\(session.connection)", "session": "\(session.session)", "bytes": "\(bytes)",
                ])
                continue
            }
            let dimensions = UploadDestination.metricDimensions(ofKey: session.connection)
            Counter(label: "pushav_spool_evictions_total", dimensions: dimensions).increment()
            Counter(label: "pushav_spool_evicted_bytes_total", dimensions: dimensions).increment(by: bytes)
            logger.warning(short ? "disk nearly full: evicted a whole session from the spool" : "spool full: evicted a whole session", metadata: [
                "connection": "\(session.connection)", "session": "\(session.session)", "objects": "\(objects)",
                "bytes": "\(bytes)", "capacity": "\(capacity)", "freeSpaceReserve": "\(freeSpaceReserve)",
            ])
        }
    }

    /// Start-up replay check: journal rows need their file; a file without its row is adopted when its name says
    /// which object of which label it is (the row was lost with the last commits of a power failure, or the process
    /// died between an object's rename and its row, or between a delivered object's row and its file going); other
    /// files (temporary ones, names no object has, labels the journal never knew) are removed.
    private func recover() throws {
        let entries = try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM object").map(Self.entry) }
        var expected = Set<String>()
        for entry in entries {
            let url = fileURL(connection: entry.connection, object: entry.object)
            if FileManager.default.fileExists(atPath: url.path) {
                expected.insert(url.standardizedFileURL.path)
            } else {
                logger.error("spool journal names a missing file; dropping the entry", metadata: ["object": "\(entry.object)"])
                try database.write { db in
                    try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ? AND track = ? AND number = ?",
                                   arguments: [entry.connection, entry.object.session, entry.object.track, entry.object.number])
                }
            }
        }
        let labels = try knownLabels()
        let root = directory.appendingPathComponent("objects")
        var strays = 0
        var adopted: [(label: String, object: UploadObject, bytes: Int, created: Date)] = []
        for labelDirectory in (try? FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? [] {
            let label = labels[labelDirectory.lastPathComponent]
            guard let walker = FileManager.default.enumerator(
                at: labelDirectory, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey, .contentModificationDateKey])
            else { continue }
            let base = labelDirectory.standardizedFileURL.path + "/"
            for case let url as URL in walker {
                let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey, .contentModificationDateKey])
                guard values?.isRegularFile == true, !expected.contains(url.standardizedFileURL.path) else { continue }
                let path = url.standardizedFileURL.path
                if let label, path.hasPrefix(base), let object = UploadObject(spoolPath: String(path.dropFirst(base.count))),
                   let size = values?.fileSize {
                    adopted.append((label, object, size, values?.contentModificationDate ?? Date()))
                } else {
                    try? FileManager.default.removeItem(at: url)
                    strays += 1
                }
            }
        }
        if !adopted.isEmpty {
            try database.write { db in
                for file in adopted {
                    try db.execute(sql: """
                        INSERT OR IGNORE INTO object (connection, session, track, number, bytes, created, attempts, delivered)
                        VALUES (?, ?, ?, ?, ?, ?, 0, 0)
                        """, arguments: [file.label, file.object.session, file.object.track, file.object.number, file.bytes,
                                         file.created.timeIntervalSince1970])
                    // No recording writes an old session after a restart: it is finished.
                    try db.execute(sql: """
                        INSERT INTO session (connection, session, finished) VALUES (?, ?, 1)
                        ON CONFLICT(connection, session) DO UPDATE SET finished = 1
                        """, arguments: [file.label, file.object.session])
                    try db.execute(sql: """
                        INSERT INTO counter (name, value) VALUES (?, ?)
                        ON CONFLICT(name) DO UPDATE SET value = excluded.value WHERE excluded.value > value
                        """, arguments: ["session:" + file.label, file.object.session])
                }
            }
            for (label, files) in Dictionary(grouping: adopted, by: \.label) {
                logger.warning("spool: objects whose journal rows were lost are queued again from their files", metadata: [
                    "connection": "\(label)", "objects": "\(files.count)",
                    "sessions": "\(Set(files.map(\.object.session)).sorted().map(String.init).joined(separator: ","))",
                ])
            }
        }
        // A recent recording the last process did not finish (it stopped or was killed mid-recording) ends here.
        try database.write { db in
            try db.execute(sql: "UPDATE recent SET finished = 1, endReason = coalesce(endReason, 'interrupted') WHERE finished = 0")
        }
        let pending = entries.filter { !$0.delivered }.count + adopted.count
        logger.info("spool opened", metadata: [
            "directory": "\(directory.path)", "pending": "\(pending)", "strays": "\(strays)", "adopted": "\(adopted.count)",
        ])
    }

    /// Every label the journal knows (destinations, objects, sessions, counters, recent recordings), by the name of
    /// its directory under `objects/`.
    private func knownLabels() throws -> [String: String] {
        let labels: [String] = try database.read { db in
            try String.fetchAll(db, sql: """
                SELECT key FROM destination UNION SELECT connection FROM object UNION SELECT connection FROM session
                UNION SELECT connection FROM recent UNION SELECT connection FROM given_up
                UNION SELECT substr(name, 9) FROM counter WHERE name LIKE 'session:%'
                """)
        }
        return Dictionary(labels.map { (Self.safeName($0), $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// `PRAGMA synchronous` of the connection that commits (1 is NORMAL).
    func commitSynchronousLevel() throws -> Int {
        try database.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Re-reads depth, bytes and oldest age into the gauges (the age grows while an endpoint is down, with no
    /// store or delivery to trigger an update; the uploader calls this on every retry).
    public func refreshMetrics() {
        publishMetrics()
    }

    /// Per connection: `pushav_upload_queue_depth`, `pushav_upload_queue_bytes`, `pushav_upload_oldest_age_seconds`
    /// (a connection whose queue emptied is set to 0 once).
    private func publishMetrics() {
        publishedConnections.withLock { published in
            guard let queues = try? connectionQueues() else { return }
            let now = Date().timeIntervalSince1970
            for connection in published.union(queues.keys) {
                let queue = queues[connection]
                let dimensions = UploadDestination.metricDimensions(ofKey: connection)
                Gauge(label: "pushav_upload_queue_depth", dimensions: dimensions).record(queue?.depth ?? 0)
                Gauge(label: "pushav_upload_queue_bytes", dimensions: dimensions).record(queue?.bytes ?? 0)
                Gauge(label: "pushav_upload_oldest_age_seconds", dimensions: dimensions)
                    .record(queue?.oldest.map { max(0, now - $0) } ?? 0)
            }
            published = Set(queues.keys)
        }
    }

    /// Each connection's waiting objects and the oldest one's spooling time, for every connection with anything
    /// spooled (one read for all of them).
    public func connectionQueueStates() throws -> [String: ConnectionQueue] {
        try connectionQueues().mapValues { queue in
            ConnectionQueue(depth: queue.depth, oldestWaiting: queue.oldest.map { Date(timeIntervalSince1970: $0) })
        }
    }

    /// Undelivered objects, bytes on disk and the oldest undelivered object's creation time, per connection.
    private func connectionQueues() throws -> [String: (depth: Int, bytes: Int, oldest: Double?)] {
        try database.read { db in
            var queues: [String: (depth: Int, bytes: Int, oldest: Double?)] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT connection, sum(delivered = 0) AS depth, sum(bytes) AS bytes,
                       min(CASE WHEN delivered = 0 THEN created END) AS oldest
                FROM object GROUP BY connection
                """) {
                queues[row["connection"]] = (row["depth"], row["bytes"], row["oldest"])
            }
            return queues
        }
    }
}

extension SegmentSpool {
    /// The transport model's BUSY hook (`PushAVStreamTransportServer.setUploadsPendingQuery`) for uploaders whose
    /// spool connection label is the Matter connection ID in decimal. An unreadable spool counts as busy.
    public func uploadsPendingQuery() -> @Sendable (UInt16) async -> Bool {
        { connectionID in (try? await self.isBusy(connection: String(connectionID))) ?? true }
    }
}

// MARK: - From async code

/// The same operations for async callers. Each runs on ``BlockingIO``: journal commits fsync and object files are read
/// from disk, which must never occupy a cooperative thread. In an async context Swift picks these overloads, so a
/// blocking call cannot slip in unnoticed.
extension SegmentSpool {
    public func store(_ bytes: [UInt8], for object: UploadObject, connection: String, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.store(bytes, for: object, connection: connection, now: now) }
    }

    public func nextSessionNumber(connection: String) async throws -> Int {
        try await BlockingIO.run { try self.nextSessionNumber(connection: connection) }
    }

    public func finishSession(_ session: Int, connection: String) async throws {
        try await BlockingIO.run { try self.finishSession(session, connection: connection) }
    }

    public func nextPending(connection: String, track: String) async throws -> SpoolEntry? {
        try await BlockingIO.run { try self.nextPending(connection: connection, track: track) }
    }

    public func tracks(connection: String) async throws -> [String] {
        try await BlockingIO.run { try self.tracks(connection: connection) }
    }

    public func pendingObjects() async throws -> [String: Int] {
        try await BlockingIO.run { try self.pendingObjects() }
    }

    public func isBusy(connection: String) async throws -> Bool {
        try await BlockingIO.run { try self.isBusy(connection: connection) }
    }

    public func isSessionDelivered(_ session: Int, connection: String) async throws -> Bool {
        try await BlockingIO.run { try self.isSessionDelivered(session, connection: connection) }
    }

    public func waitsForOtherTracks(connection: String, object: UploadObject) async throws -> Bool {
        try await BlockingIO.run { try self.waitsForOtherTracks(connection: connection, object: object) }
    }

    public func entry(connection: String, object: UploadObject) async throws -> SpoolEntry? {
        try await BlockingIO.run { try self.entry(connection: connection, object: object) }
    }

    public func bytes(connection: String, object: UploadObject) async throws -> [UInt8] {
        try await BlockingIO.run { try self.bytes(connection: connection, object: object) }
    }

    public func statistics(now: Date = Date()) async throws -> SpoolStatistics {
        try await BlockingIO.run { try self.statistics(now: now) }
    }

    public func markDelivered(connection: String, object: UploadObject) async throws {
        try await BlockingIO.run { try self.markDelivered(connection: connection, object: object) }
    }

    public func markGivenUp(connection: String, object: UploadObject, reason: String, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.markGivenUp(connection: connection, object: object, reason: reason, now: now) }
    }

    public func connectionQueueStates() async throws -> [String: ConnectionQueue] {
        try await BlockingIO.run { try self.connectionQueueStates() }
    }

    public func sessionDelivery(_ session: Int, connection: String) async throws -> SessionDelivery {
        try await BlockingIO.run { try self.sessionDelivery(session, connection: connection) }
    }

    public func register(_ destination: UploadDestination, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.register(destination, now: now) }
    }

    public func retire(destination key: String, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.retire(destination: key, now: now) }
    }

    public func storedDestinations() async throws -> [StoredDestination] {
        try await BlockingIO.run { try self.storedDestinations() }
    }

    @discardableResult
    public func forgetDestinationIfDone(_ key: String) async throws -> Bool {
        try await BlockingIO.run { try self.forgetDestinationIfDone(key) }
    }

    public func giveUpPending(destination key: String, reason: String, now: Date = Date()) async throws -> [UploadObject] {
        try await BlockingIO.run { try self.giveUpPending(destination: key, reason: reason, now: now) }
    }

    public func pruneDeliveryRecords(now: Date = Date()) async throws {
        try await BlockingIO.run { try self.pruneDeliveryRecords(now: now) }
    }

    public func sessionDelivery(_ session: Int, owner: String) async throws -> SessionDelivery {
        try await BlockingIO.run { try self.sessionDelivery(session, owner: owner) }
    }

    public func keepRecent(_ session: Int, connection: String, track: String, started: Date, thumbnail: [UInt8]? = nil,
                           owner: String? = nil) async throws {
        try await BlockingIO.run {
            try self.keepRecent(session, connection: connection, track: track, started: started, thumbnail: thumbnail, owner: owner)
        }
    }

    public func forgetRecent(_ session: Int, connection: String) async throws {
        try await BlockingIO.run { try self.forgetRecent(session, connection: connection) }
    }

    public func recentRecordings() async throws -> [RecentRecording] {
        try await BlockingIO.run { try self.recentRecordings() }
    }

    public func recentThumbnail(_ session: Int, owner: String) async throws -> [UInt8]? {
        try await BlockingIO.run { try self.recentThumbnail(session, owner: owner) }
    }

    public func recentFiles(_ session: Int, owner: String) async throws -> [(file: URL, bytes: Int)]? {
        try await BlockingIO.run { try self.recentFiles(session, owner: owner).map { $0.map { RecentFile(file: $0.file, bytes: $0.bytes) } } }
            .map { $0.map { ($0.file, $0.bytes) } }
    }

    public func refreshMetrics() async {
        _ = try? await BlockingIO.run { self.refreshMetrics() }
    }
}
