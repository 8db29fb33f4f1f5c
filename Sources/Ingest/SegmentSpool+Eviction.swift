import Foundation
import GRDB
import Logging
import Metrics

// Room on disk: the spool's bound and the file system's reserve, kept by evicting whole finished sessions, oldest
// first; a recording still being written is never broken.
extension SegmentSpool {
    /// The size and the free bytes of the file system holding `directory` (nil when it cannot be read).
    static func fileSystem(of directory: URL) -> (size: Int, free: Int)? {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return nil }
        return (Int(info.f_blocks) * Int(info.f_frsize), Int(info.f_bavail) * Int(info.f_frsize))
    }

    /// The reserve for the file system holding `directory`.
    static func reserve(for directory: URL) -> Int {
        guard let size = fileSystem(of: directory)?.size else { return 256 << 10 }
        return min(max(size / 10, 256 << 10), 64 << 20)
    }

    /// Makes room for `adding` more bytes: evicts whole *finished* sessions, oldest first across every destination,
    /// while the objects still waiting for delivery would exceed ``capacity`` or the disk would fall below its
    /// ``freeSpaceReserve``. Returns false when that is not enough: only sessions still being written are left, and
    /// the object must be refused (see ``SpoolFull``).
    ///
    /// The one rule, and why:
    /// - Only undelivered bytes count against the capacity: a delivered object (a recent recording kept for the page,
    ///   a header kept for 412 resends) is bounded by ``recentBytes`` and gives way first when the *disk* is short.
    /// - A session whose recording has not finished is never evicted: evicting it broke a recording still being
    ///   written, of another connection too, and left its later segments without their header (refused for good by
    ///   a strict ingest: issue 47, 6–24 objects given up per outage). Evicting whole sessions keeps every header
    ///   with its segments.
    /// - When only such sessions are left, the new object is refused: its recording ends there with its End (the
    ///   recorder begins anew once the spool takes objects), is whole up to that point, and becomes the oldest
    ///   finished session, the first to go when room is needed again.
    func makeRoom(adding: Int) throws -> Bool {
        while true {
            let short = Self.fileSystem(of: directory).map { $0.free - adding < freeSpaceReserve } ?? false
            let victim: (SessionKey, Int, Int, Int)?? = try database.read { db in
                let waiting = try Int.fetchOne(db, sql: "SELECT coalesce(sum(bytes), 0) FROM object WHERE delivered = 0") ?? 0
                let over = waiting + adding > capacity
                guard over || short else { return .some(nil) }
                // A session with nothing waiting frees no capacity, only disk: it is a victim when the disk is short,
                // and then before any waiting one. A session without a row (written before rows were kept) counts as
                // finished.
                guard let row = try Row.fetchOne(db, sql: """
                    SELECT o.connection, o.session, sum(o.bytes) AS bytes, count(*) AS objects,
                           sum(o.delivered = 0) AS waiting
                    FROM object o LEFT JOIN session s ON s.connection = o.connection AND s.session = o.session
                    WHERE coalesce(s.finished, 1) = 1
                    GROUP BY o.connection, o.session
                    HAVING ? OR sum(o.delivered = 0) > 0
                    ORDER BY sum(o.delivered = 0) > 0, min(o.created) LIMIT 1
                    """, arguments: [short])
                else { return nil }
                return (SessionKey(connection: row["connection"], session: row["session"]), row["bytes"], row["objects"], row["waiting"])
            }
            guard let candidate = victim else { return false }
            guard let (session, bytes, objects, waiting) = candidate else { return true }
            let files: [UploadObject] = try database.write { db in
                let files = try Row.fetchAll(db, sql: "SELECT track, number FROM object WHERE connection = ? AND session = ?",
                                             arguments: [session.connection, session.session])
                    .map { UploadObject(session: session.session, track: $0["track"], number: $0["number"]) }
                try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ?", arguments: [session.connection, session.session])
                try db.execute(sql: "DELETE FROM recent WHERE connection = ? AND session = ?", arguments: [session.connection, session.session])
                if waiting > 0 {
                    try db.execute(sql: """
                        INSERT INTO counter (name, value) VALUES ('evictions', 1)
                        ON CONFLICT(name) DO UPDATE SET value = value + 1
                        """)
                }
                return files
            }
            for file in files { try? FileManager.default.removeItem(at: fileURL(connection: session.connection, object: file)) }
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
}

/// The spool refused an object: room was needed and only recordings still being written were left to evict (see
/// ``SegmentSpool/makeRoom(adding:)``), or an earlier object of the same session was refused (the rest of it would
/// be unplayable without it). Counted as a spool write failure; the recording ends with its End.
public struct SpoolFull: Error, CustomStringConvertible {
    public let object: UploadObject
    public let capacity: Int
    public let freeSpaceReserve: Int
    /// True when an earlier object of its session was refused.
    public let sessionHasHole: Bool

    public var description: String {
        if sessionHasHole {
            return "the spool refused an earlier object of session \(object.session); the rest of it is refused too"
        }
        return "the spool is full (capacity \(capacity) bytes, disk reserve \(freeSpaceReserve) bytes) and holds only "
            + "recordings still being written, which are never evicted"
    }
}
