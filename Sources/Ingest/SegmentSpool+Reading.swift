import Domain
import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

// What the uploader and the API read from the journal: the next object of a track, what waits, how a session was
// delivered, statistics.
extension SegmentSpool {
    /// The oldest undelivered object of `track`, in upload order (session, header, segment number).
    public func nextPending(connection: String, track: TrackName) throws -> SpoolEntry? {
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
    public func tracks(connection: String) throws -> [TrackName] {
        try database.read { db in
            try TrackName.fetchAll(db, sql: "SELECT DISTINCT track FROM object WHERE connection = ? AND delivered = 0 ORDER BY track",
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
    public func isSessionDelivered(_ session: SessionNumber, connection: String) throws -> Bool {
        try sessionDelivery(session, connection: connection) == .delivered
    }

    /// Whether `session` of `connection` is still pending, delivered whole, or settled with objects given up.
    public func sessionDelivery(_ session: SessionNumber, connection: String) throws -> SessionDelivery {
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
    public func sessionDelivery(_ session: SessionNumber, owner: String) throws -> SessionDelivery {
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
}
