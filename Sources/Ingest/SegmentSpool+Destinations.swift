import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

extension SegmentSpool {
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
            try? FileManager.default.removeItem(at: labelDirectory(key))
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
}
