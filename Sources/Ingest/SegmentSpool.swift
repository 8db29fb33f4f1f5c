import Domain
import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

/// The durable upload queue: every CMAF object is written under `directory/objects/` (its name says which object it
/// is) and journalled in SQLite (WAL) before upload is attempted, so a `kill -9` loses nothing that was stored, and a
/// power failure loses at most what was not yet handed over plus what was stored in the last ``syncDelay`` seconds
/// (an object still waiting after that is fsync'd). Bounded by bytes: when full, whole oldest finished sessions (clips)
/// are evicted, logged and counted; a recording still being written is never evicted (``makeRoom(adding:)``). Thread-safe.
public final class SegmentSpool: Sendable {
    public let directory: URL
    public let capacity: Int
    /// How much the recent recordings may hold: bytes on disk (in all) and sessions (per camera: an owner's part before
    /// its last `/`). Past either the oldest go first. An
    /// undelivered object never gives way to them: eviction for space takes recent recordings before anything waiting.
    public let recentBytes: Int
    public let recentSessions: Int
    /// One connection, holding the journal exclusively (see `init`).
    let database: DatabaseQueue
    let logger: Logger
    /// Connections whose queue gauges were last published non-empty; held while publishing, so two publishers
    /// cannot leave an older reading last.
    let publishedConnections = Mutex<Set<String>>([])
    /// Sessions an object of which was refused for want of room (``SpoolFull``): their later objects are refused too,
    /// since a recording with a hole is unplayable past it (a segment without its header is refused for good by a
    /// strict ingest). Bounded: past ``refusedSessionsKept`` one of them is forgotten (a session refused that long ago has
    /// ended and writes nothing more).
    let refusedSessions = Mutex<Set<SessionKey>>([])
    static let refusedSessionsKept = 256
    /// Sessions finished since open: every 100th prunes the delivery records.
    let finishedSessions = Atomic<Int>(0)
    /// How long an object may wait for delivery before it is fsync'd (0: fsync'd as it is stored).
    ///
    /// Why defer: an fsync per object (then one of its directory) cleaned the file's last page, the directory block
    /// and the inode block each time, so every object paid for all three again; and most objects reach the ingest
    /// within a second, live. Deferred, an object delivered in time is never synced — an audio object deleted before
    /// the kernel wrote it is never written at all — and the metadata of many objects is written once. What it costs:
    /// a power failure (not kill -9: the page cache outlives the process) may also lose the objects stored in the
    /// last `syncDelay` seconds that were not yet delivered, beside the segment being recorded that it loses anyway;
    /// ``recover()`` then drops files whose data did not reach the disk, logged and counted.
    public let syncDelay: TimeInterval
    /// Objects stored and not yet fsync'd, oldest first. Bounded by the spool itself: an entry leaves when its object
    /// is delivered or synced (``syncOverdue(now:)``, every half `syncDelay`).
    let unsynced = Mutex<[UnsyncedObject]>([])
    /// Undelivered objects found missing or cut short at open (a power failure: see ``syncDelay``), by label: lost, and said so
    /// by whoever delivers that label (`pushav upload` and `record --push` exit non-zero).
    let damaged = Mutex<[String: [UploadObject]]>([:])
    /// Runs ``syncOverdue(now:)``; cancelled (and what is pending synced) when the spool goes.
    nonisolated(unsafe) private var syncTimer: (any DispatchSourceTimer)?

    /// Opens (or creates) the spool: drops journal rows whose file vanished and adopts object files whose row was
    /// lost (see ``recover()``).
    public init(directory: URL, capacity: Int = 1 << 30, recentBytes: Int = 256 << 20, recentSessions: Int = 100,
                syncDelay: TimeInterval = 2, logger: Logger = Logger(label: "pushav.spool")) throws {
        self.directory = directory
        self.syncDelay = max(0, syncDelay)
        self.capacity = capacity
        self.recentBytes = recentBytes
        self.recentSessions = recentSessions
        self.logger = logger
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("objects"), withIntermediateDirectories: true)
        freeSpaceReserve = Self.reserve(for: directory)
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // A commit writes whole pages, to the WAL and again at the checkpoint: a spool's rows are small and each
            // commit touches one or two of them, so 512-byte pages write an eighth of 4 KiB's (flash wear). It takes
            // effect for a new spool only (an existing one keeps its page size).
            try db.execute(sql: "PRAGMA page_size = 512")
            // Exclusive locking before the first WAL access: SQLite then keeps the WAL index in the process's memory
            // instead of a `-shm` file, whose pages every commit dirtied again (2–3 % of the bytes recorded on a
            // Command transport, `Scripts/bench-serve --trace`). One process owns a spool; a second one (or a second
            // spool on the same folder) is refused as busy instead of sharing it.
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            try db.execute(sql: "PRAGMA journal_mode = WAL")
        }
        do {
            database = try DatabaseQueue(path: directory.appendingPathComponent("journal.sqlite").path, configuration: configuration)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            throw SpoolInUse(directory: directory)
        }
        // The journal commits without an fsync (WAL, synchronous = NORMAL): a commit
        // survives kill -9 (it is in the WAL), and a power failure can lose only the last commits — which the files
        // make good: each object's file is renamed into place before its row is written (and fsync'd if it still
        // waits after ``syncDelay``), and ``recover()`` adopts a whole file whose row was lost (a lost "delivered"
        // only means one resend). An fsync per commit (FULL)
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
        // v6: a recent recording keeps its audio track too (the page plays it with sound); older rows have none.
        migrator.registerMigration("v6-recent-audio") { db in
            try db.execute(sql: "ALTER TABLE recent ADD COLUMN audioTrack TEXT")
        }
        try migrator.migrate(database)
        try recover()
        try pruneDeliveryRecords()
        publishMetrics()
        if self.syncDelay > 0 {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "pushav.spool.sync", qos: .utility))
            let period = DispatchTimeInterval.milliseconds(Int(self.syncDelay * 500))
            timer.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(100))
            timer.setEventHandler { [weak self] in self?.syncOverdue() }
            timer.resume()
            syncTimer = timer
        }
    }

    deinit {
        syncTimer?.cancel()
        syncPending()
    }

    // MARK: - Writing

    /// Writes `bytes` to the object's file (whole or not at all to any reader), then journals them: from then on a
    /// kill -9 loses nothing, and ``syncOverdue(now:)`` fsyncs the object if it still waits after ``syncDelay`` (at
    /// once when that is 0). Throws only when the object was not stored. May evict older sessions.
    public func store(_ bytes: [UInt8], for object: UploadObject, connection: String, now: Date = Date()) throws {
        let session = SessionKey(connection: connection, session: object.session)
        if refusedSessions.withLock({ $0.contains(session) }) {
            throw SpoolFull(object: object, capacity: capacity, freeSpaceReserve: freeSpaceReserve, sessionHasHole: true)
        }
        // Room first: the disk keeps its reserve however large the spool's capacity is.
        let room: Bool
        do {
            room = try makeRoom(adding: bytes.count)
        } catch {
            // The journal could not be read or written: storing is still worth a try (it fails on its own if the
            // disk is full).
            logger.error("spool eviction failed", metadata: ["error": "\(error)"])
            room = true
        }
        guard room else {
            refusedSessions.withLock { refused in
                if refused.count >= Self.refusedSessionsKept { refused.remove(refused.first!) }
                refused.insert(session)
            }
            logger.warning("spool full: refused an object, only recordings still being written are left to evict", metadata: [
                "connection": "\(connection)", "object": "\(object)", "bytes": "\(bytes.count)", "capacity": "\(capacity)",
                "freeSpaceReserve": "\(freeSpaceReserve)",
            ])
            throw SpoolFull(object: object, capacity: capacity, freeSpaceReserve: freeSpaceReserve, sessionHasHole: false)
        }
        try DurableFile.write(bytes, to: fileURL(connection: connection, object: object), sync: syncDelay == 0)
        if syncDelay > 0 {
            unsynced.withLock { $0.append(UnsyncedObject(connection: connection, object: object, stored: now)) }
        }
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
        publishMetrics()
    }

    /// The next session number for `connection`: session numbers start at 1 and only ever increase (persisted).
    public func nextSessionNumber(connection: String) throws -> SessionNumber {
        try database.read { db in
            try SessionNumber.fetchOne(db, sql: "SELECT value FROM counter WHERE name = ?", arguments: ["session:" + connection])
        }?.next ?? .first
    }

    /// Marks a session complete: once its objects are delivered, its headers are no longer needed for 412 resends.
    public func finishSession(_ session: SessionNumber, connection: String) throws {
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

    // MARK: - Upload bookkeeping

    /// A delivered segment leaves the spool; a delivered header stays until its session is finished and drained.
    public func markDelivered(connection: String, object: UploadObject) throws {
        forgetUnsynced(connection: connection, object: object)
        var kept = false
        try database.write { db in
            // An object of a recent recording's track stays (delivered) for the status page.
            kept = try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM recent WHERE connection = ? AND session = ? AND ? IN (track, audioTrack))
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
        forgetUnsynced(connection: connection, object: object)
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

    struct SessionKey: Hashable {
        var connection: String
        var session: SessionNumber
    }

    static func entry(_ row: Row) -> SpoolEntry {
        SpoolEntry(connection: row["connection"],
                   object: UploadObject(session: row["session"], track: row["track"], number: row["number"]),
                   bytes: row["bytes"], createdAt: Date(timeIntervalSince1970: row["created"]),
                   attempts: row["attempts"], delivered: row["delivered"])
    }

    /// Where `object`'s bytes are kept (internal: tests break it on purpose).
    func fileURL(connection: String, object: UploadObject) -> URL {
        labelDirectory(connection).appendingPathComponent(object.spoolFileName)
    }

    /// The one directory a label's objects live in, flat (see ``UploadObject/spoolFileName``).
    func labelDirectory(_ connection: String) -> URL {
        directory.appendingPathComponent("objects").appendingPathComponent(Self.safeName(connection))
    }

    /// Connection labels may be URLs; the directory name keeps only safe characters (plus a hash of the original).
    static func safeName(_ connection: String) -> String {
        let kept = String(connection.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) ? Character($0) : "_" }.prefix(48))
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: a stable name across runs (Hasher is seeded per process)
        for byte in connection.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return kept + "-" + String(hash, radix: 16)
    }

    /// Headers of finished sessions whose segments are all delivered are no longer needed.
    func pruneHeaders(connection: String) throws {
        let done: [UploadObject] = try database.write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT o.session, o.track FROM object o JOIN session s ON s.connection = o.connection AND s.session = o.session
                WHERE o.connection = ? AND o.number = 0 AND o.track != '' AND o.delivered = 1 AND s.finished = 1
                  AND NOT EXISTS (SELECT 1 FROM object p WHERE p.connection = o.connection AND p.session = o.session
                                  AND p.track = o.track AND p.delivered = 0)
                  AND NOT EXISTS (SELECT 1 FROM recent r WHERE r.connection = o.connection AND r.session = o.session
                                  AND o.track IN (r.track, r.audioTrack))
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
    func publishMetrics() {
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
    func connectionQueues() throws -> [String: (depth: Int, bytes: Int, oldest: Double?)] {
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
