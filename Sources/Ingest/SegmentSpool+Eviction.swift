import Foundation
import GRDB
import Logging
import Metrics

// Room on disk: the spool's bound and the file system's reserve, kept by evicting whole oldest sessions.
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

    /// Evicts whole sessions, oldest first, while over capacity or while storing `adding` more bytes would eat into
    /// the disk's ``freeSpaceReserve``; never the session being written.
    func evictIfFull(keeping current: SessionKey, adding: Int = 0) throws {
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
