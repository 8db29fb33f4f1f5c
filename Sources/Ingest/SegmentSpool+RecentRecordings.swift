import Domain
import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

extension SegmentSpool {
    // MARK: - Recent recordings

    /// A recording that is kept once delivered: the header and segments of `track` (its video) and of `audioTrack`
    /// stay on disk (marked delivered) so the status page plays them, instead of a second copy being written. Call when
    /// the session begins, before any of its objects is stored. No thumbnail is stored: one is made from the kept
    /// video when asked for (``recentFiles``), which writes nothing (the `thumbnail` column only holds what spools
    /// before that stored).
    public func keepRecent(_ session: SessionNumber, connection: String, track: TrackName, audioTrack: TrackName? = nil,
                           started: Date, owner: String? = nil) throws {
        try database.write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO recent (connection, session, track, audioTrack, owner, started) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [connection, session, track, audioTrack, owner ?? UploadDestination.owner(ofKey: connection),
                                 started.timeIntervalSince1970])
        }
    }

    /// The recent recording ended: what the page shows of it. Then the oldest recent recordings go
    /// beyond the bounds (``recentBytes``, ``recentSessions``).
    public func finishRecent(_ session: SessionNumber, connection: String, ended: Date, endReason: String?, triggerType: String?,
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
    public func forgetRecent(_ session: SessionNumber, connection: String) throws {
        try dropRecent([(connection, session)])
    }

    /// The recent recordings, newest first.
    public func recentRecordings() throws -> [RecentRecording] {
        try database.read { db in
            try Row.fetchAll(db, sql: "\(Self.recentSelection) ORDER BY r.started DESC").map(Self.recentRecording)
        }
    }

    /// The recent recording `session` of `owner`, if it is kept.
    public func recentRecording(_ session: SessionNumber, owner: String) throws -> RecentRecording? {
        try database.read { db in
            try Row.fetchOne(db, sql: "\(Self.recentSelection) WHERE r.owner = ? AND r.session = ?",
                             arguments: [owner, session]).map(Self.recentRecording)
        }
    }

    private static let recentSelection = """
        SELECT r.connection, r.owner, r.session, r.track, r.started, r.ended, r.endReason, r.triggerType,
               r.triggerOffset, r.finished,
               (SELECT coalesce(sum(o.bytes), 0) FROM object o
                WHERE o.connection = r.connection AND o.session = r.session AND o.track IN (r.track, r.audioTrack)) AS bytes
        FROM recent r
        """

    private static func recentRecording(_ row: Row) -> RecentRecording {
        let ended: Double? = row["ended"]
        return RecentRecording(
            connection: row["connection"], owner: row["owner"], session: row["session"], track: row["track"],
            started: Date(timeIntervalSince1970: row["started"]), ended: ended.map { Date(timeIntervalSince1970: $0) },
            endReason: row["endReason"], triggerType: row["triggerType"], triggerOffset: row["triggerOffset"],
            bytes: row["bytes"], finished: row["finished"])
    }

    /// The files of a recent recording of `owner`, each kept track's header then its segments by number. Nil when it
    /// is not kept, or its video's header is gone; an audio track without its header is left out (the video plays).
    public func recentFiles(_ session: SessionNumber, owner: String) throws -> RecentTracks? {
        try database.read { db -> RecentTracks? in
            guard let row = try Row.fetchOne(db, sql: "SELECT connection, track, audioTrack FROM recent WHERE owner = ? AND session = ?",
                                             arguments: [owner, session]) else { return nil }
            let connection: String = row["connection"]
            func files(_ track: TrackName) throws -> [RecentFile]? {
                let objects = try Row.fetchAll(db, sql: """
                    SELECT number, bytes FROM object WHERE connection = ? AND session = ? AND track = ? ORDER BY number
                    """, arguments: [connection, session, track])
                guard let first = objects.first, (first["number"] as Int) == 0 else { return nil }
                return objects.map { object in
                    RecentFile(file: fileURL(connection: connection, object: UploadObject(session: session, track: track, number: object["number"])),
                               bytes: object["bytes"])
                }
            }
            guard let video = try files(row["track"]) else { return nil }
            let audioTrack: TrackName? = row["audioTrack"]
            return RecentTracks(video: video, audio: try audioTrack.flatMap(files))
        }
    }

    func trimRecent() throws {
        let over: [(String, SessionNumber)] = try database.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT r.connection, r.session, r.owner, (SELECT coalesce(sum(o.bytes), 0) FROM object o
                    WHERE o.connection = r.connection AND o.session = r.session AND o.track IN (r.track, r.audioTrack)
                      AND o.delivered = 1) AS bytes
                FROM recent r WHERE r.finished = 1 ORDER BY r.started DESC
                """)
            // The bytes are one bound for the spool; the count is per camera (an owner is `camera/connection`), so a
            // busy camera cannot push another's recordings off the page.
            var total = 0
            var perCamera: [Substring: Int] = [:]
            var dropped: [(String, SessionNumber)] = []
            for row in rows {
                total += row["bytes"] as Int
                let owner: String = row["owner"]
                let camera = owner.lastIndex(of: "/").map { owner[..<$0] } ?? owner[...]
                let index = perCamera[camera, default: 0]
                perCamera[camera] = index + 1
                if index >= recentSessions || total > recentBytes { dropped.append((row["connection"], row["session"])) }
            }
            return dropped
        }
        try dropRecent(over)
    }

    /// Forgets recent recordings: their delivered objects (rows and files) go; objects still waiting stay queued.
    func dropRecent(_ sessions: [(String, SessionNumber)]) throws {
        guard !sessions.isEmpty else { return }
        let gone: [(String, UploadObject)] = try database.write { db in
            var gone: [(String, UploadObject)] = []
            for (connection, session) in sessions {
                let objects = try Row.fetchAll(db, sql: """
                    SELECT o.track, o.number FROM object o JOIN recent r ON r.connection = o.connection AND r.session = o.session
                    WHERE o.connection = ? AND o.session = ? AND o.delivered = 1 AND o.track IN (r.track, r.audioTrack)
                      AND o.number != 0
                    """, arguments: [connection, session])
                for object in objects {
                    gone.append((connection, UploadObject(session: session, track: object["track"], number: object["number"])))
                }
                try db.execute(sql: """
                    DELETE FROM object WHERE connection = ?1 AND session = ?2 AND delivered = 1 AND number != 0
                      AND track IN (SELECT track FROM recent WHERE connection = ?1 AND session = ?2
                                    UNION SELECT audioTrack FROM recent WHERE connection = ?1 AND session = ?2)
                    """, arguments: [connection, session])
                try db.execute(sql: "DELETE FROM recent WHERE connection = ? AND session = ?", arguments: [connection, session])
            }
            return gone
        }
        for (connection, object) in gone { try? FileManager.default.removeItem(at: fileURL(connection: connection, object: object)) }
        for connection in Set(sessions.map(\.0)) { try pruneHeaders(connection: connection) }
        publishMetrics()
    }
}
