import Domain
import Foundation
import GRDB
@testable import Ingest
import Testing
import TestSupport

@Suite struct SegmentSpoolTests {
    func object(_ session: SessionNumber, _ number: Int, track: TrackName = "video") -> UploadObject {
        UploadObject(session: session, track: track, number: number)
    }

    @Test func replaysInOrderAfterReopenAndKeepsHeadersForResends() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1, 2, 3]), for: .header(session: 1, track: "video"), connection: "c")
            try spool.store(SpoolObjectBytes.whole(object(1, 1002), [4, 5]), for: object(1, 1002), connection: "c")
            try spool.store(SpoolObjectBytes.whole(object(1, 1001), [6]), for: object(1, 1001), connection: "c")
            try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "audio"), [7]), for: .header(session: 1, track: "audio"), connection: "c")
            #expect(try spool.nextSessionNumber(connection: "c") == 2)
            #expect(try spool.nextSessionNumber(connection: "other") == 1)
        }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try spool.tracks(connection: "c") == ["audio", "video"])
        #expect(try spool.nextPending(connection: "c", track: "video")?.object == .header(session: 1, track: "video"))
        try spool.markDelivered(connection: "c", object: .header(session: 1, track: "video"))
        #expect(try spool.nextPending(connection: "c", track: "video")?.object == object(1, 1001))
        #expect(try spool.bytes(connection: "c", object: object(1, 1001)) == SpoolObjectBytes.whole(object(1, 1001), [6]))
        try spool.markDelivered(connection: "c", object: object(1, 1001))
        try spool.markDelivered(connection: "c", object: object(1, 1002))
        #expect(try spool.nextPending(connection: "c", track: "video") == nil)
        // The session is not finished: its header stays for a 412 resend.
        #expect(try spool.bytes(connection: "c", object: .header(session: 1, track: "video")) == SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1, 2, 3]))
        #expect(try spool.isBusy(connection: "c"))  // the audio header is pending
        try spool.markDelivered(connection: "c", object: .header(session: 1, track: "audio"))
        #expect(try !spool.isBusy(connection: "c"))
        try spool.finishSession(1, connection: "c")
        #expect(try spool.entry(connection: "c", object: .header(session: 1, track: "video")) == nil)
        #expect(try spool.statistics().bytes == 0)
        #expect(try spool.nextSessionNumber(connection: "c") == 2)
    }

    /// A given-up object leaves the queue as a delivered one does (not busy, nothing waits for it, its file is
    /// gone) but stays recorded, across a reopen, so the session reads as given up, not delivered.
    @Test func aGivenUpObjectLeavesTheQueueButItsSessionIsNotDelivered() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            for item in [UploadObject.manifest(session: 1, isFinal: false), .header(session: 1, track: "video"), object(1, 1001),
                         object(1, 1002), .manifest(session: 1, isFinal: true)] {
                try spool.store(SpoolObjectBytes.whole(item, [1]), for: item, connection: "c")
            }
            try spool.finishSession(1, connection: "c")
            for item in [UploadObject.manifest(session: 1, isFinal: false), .header(session: 1, track: "video"), object(1, 1001)] {
                try spool.markDelivered(connection: "c", object: item)
            }
            #expect(try spool.waitsForOtherTracks(connection: "c", object: .manifest(session: 1, isFinal: true)))
            try spool.markGivenUp(connection: "c", object: object(1, 1002), reason: "HTTP 400")
            #expect(!FileManager.default.fileExists(atPath: spool.fileURL(connection: "c", object: object(1, 1002)).path))
            #expect(try !spool.waitsForOtherTracks(connection: "c", object: .manifest(session: 1, isFinal: true)))
            #expect(try spool.nextPending(connection: "c", track: "video") == nil)
            #expect(try spool.sessionDelivery(1, connection: "c") == .pending, "the static manifest is still to send")
            try spool.markDelivered(connection: "c", object: .manifest(session: 1, isFinal: true))
        }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try !spool.isBusy(connection: "c"))
        #expect(try spool.pendingObjects().isEmpty)
        #expect(try spool.statistics().bytes == 0, "the header went once nothing of its track was left")
        #expect(try spool.sessionDelivery(1, connection: "c") == .givenUp([object(1, 1002)]))
        #expect(try !spool.isSessionDelivered(1, connection: "c"))
        #expect(try spool.givenUpObjects(connection: "c").map(\.reason) == ["HTTP 400"])
        #expect(try spool.givenUpObjects(connection: "other").isEmpty)
    }

    /// A spool journal written before given-up objects were recorded (schema v1 only) opens with its queue intact and
    /// takes give-ups.
    @Test func aSpoolFromBeforeGiveUpsOpensWithItsQueueIntact() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pending = object(3, 1001)
        do {
            // The v1 schema and migration name exactly as the spool registered them before v2.
            let old = try DatabaseQueue(path: directory.appendingPathComponent("journal.sqlite").path)
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
            try migrator.migrate(old)
            try old.write { db in
                try db.execute(sql: "INSERT INTO object VALUES ('c', 3, 'video', 1001, 18, 0, 4, 0)")
                try db.execute(sql: "INSERT INTO session VALUES ('c', 3, 1)")
            }
            try old.close()
        }
        let file = directory.appendingPathComponent("objects").appendingPathComponent(SegmentSpool.safeName("c"))
            .appendingPathComponent(pending.spoolFileName)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(SpoolObjectBytes.whole(pending, [9, 9])).write(to: file)

        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try spool.nextPending(connection: "c", track: "video")?.attempts == 4)
        #expect(try spool.bytes(connection: "c", object: pending) == SpoolObjectBytes.whole(pending, [9, 9]))
        #expect(try spool.sessionDelivery(3, connection: "c") == .pending)
        try spool.markGivenUp(connection: "c", object: pending, reason: "HTTP 413")
        #expect(try !spool.isBusy(connection: "c"))
        #expect(try spool.sessionDelivery(3, connection: "c") == .givenUp([pending]))
    }

    /// Stores a 46-byte object (30 of payload in 16 of boxes).
    func put(_ spool: SegmentSpool, _ object: UploadObject, _ label: String, at time: Date) throws {
        try spool.store(SpoolObjectBytes.whole(object, Array(repeating: UInt8(truncatingIfNeeded: object.number), count: 30)),
                        for: object, connection: label, now: time)
    }

    @Test func evictsWholeOldestFinishedSessionsWhenFull() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Three 46-byte objects fit, a fourth does not.
        let spool = try SegmentSpool(directory: directory, capacity: 140, logger: .quiet)
        let start = Date(timeIntervalSince1970: 1_000_000)
        try put(spool, .header(session: 1, track: "video"), "c", at: start)
        try put(spool, object(1, 1001), "c", at: start + 1)
        try spool.finishSession(1, connection: "c")
        try put(spool, .header(session: 2, track: "video"), "c", at: start + 2)
        #expect(try spool.statistics().evictions == 0)
        try put(spool, object(2, 1001), "c", at: start + 3)
        let statistics = try spool.statistics(now: start + 10)
        #expect(statistics.evictions == 1)
        #expect(statistics.bytes == 92)
        #expect(statistics.queueDepth == 2)
        #expect(statistics.oldestAge == 8)
        #expect(try spool.nextPending(connection: "c", track: "video")?.object == .header(session: 2, track: "video"))
    }

    /// Issue 47: with two connections in an outage, eviction took the oldest session whatever its state, breaking
    /// the other connection's recording still being written (its later segments then had no header and were refused
    /// for good). Only finished sessions go, oldest first across destinations; with none left the new object is
    /// refused, and so is the rest of its session, so that every recording in the spool is whole up to its end.
    @Test func neverEvictsASessionStillBeingWrittenOfAnyDestination() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, capacity: 140, logger: .quiet)
        let start = Date(timeIntervalSince1970: 1_000_000)
        try put(spool, .header(session: 1, track: "video"), "a", at: start)       // a's session 1: being written
        try put(spool, .header(session: 7, track: "video"), "b", at: start + 1)   // b's session 7: finished below
        try put(spool, object(7, 1001), "b", at: start + 2)
        try spool.finishSession(7, connection: "b")
        // Full: b's finished session goes, although a's live one is older.
        try put(spool, object(1, 1001), "a", at: start + 3)
        #expect(try spool.statistics().evictions == 1)
        #expect(try spool.entry(connection: "a", object: .header(session: 1, track: "video")) != nil)
        #expect(try spool.entry(connection: "b", object: object(7, 1001)) == nil)
        try put(spool, .header(session: 3, track: "video"), "b", at: start + 4)  // b's next session, being written
        // Full, and only recordings being written are left: the new object is refused, nothing is evicted.
        #expect(throws: SpoolFull.self) { try self.put(spool, object(3, 1001), "b", at: start + 5) }
        #expect(try spool.statistics().evictions == 1)
        #expect(try spool.entry(connection: "a", object: object(1, 1001)) != nil)
        // The rest of the refused session is refused too, even once there is room (it would be unplayable).
        try spool.markDelivered(connection: "a", object: .header(session: 1, track: "video"))
        try spool.markDelivered(connection: "a", object: object(1, 1001))
        #expect(throws: SpoolFull.self) { try self.put(spool, object(3, 1002), "b", at: start + 6) }
        // Another session takes the room.
        try put(spool, .header(session: 2, track: "video"), "a", at: start + 7)
        #expect(try spool.statistics().evictions == 1)
    }

    /// Delivered objects (headers kept for 412 resends, recent recordings) are bounded on their own: they do not
    /// count against the capacity, so they never make a waiting object give way.
    @Test func deliveredObjectsDoNotCountAgainstTheCapacity() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, capacity: 140, logger: .quiet)
        let start = Date(timeIntervalSince1970: 1_000_000)
        // c's session 1 is being written; its header is delivered and kept for a 412 resend.
        try put(spool, .header(session: 1, track: "video"), "c", at: start)
        try spool.markDelivered(connection: "c", object: .header(session: 1, track: "video"))
        try put(spool, .header(session: 2, track: "video"), "d", at: start + 1)
        try put(spool, object(2, 1001), "d", at: start + 2)
        try put(spool, object(2, 1002), "d", at: start + 3)
        #expect(try spool.statistics().evictions == 0)
        #expect(try spool.statistics().queueDepth == 3)
        #expect(try spool.entry(connection: "c", object: .header(session: 1, track: "video")) != nil, "a live session's header was evicted")
    }

    @Test func strayFilesWithoutJournalRowsAreRemovedOnOpen() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stray = directory.appendingPathComponent("objects/x/session_1/video/segment_1001.m4s")
        try FileManager.default.createDirectory(at: stray.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data([1]).write(to: stray)
        _ = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(!FileManager.default.fileExists(atPath: stray.path))
    }
}

@Suite struct BusyQueryTests {
    @Test func transportModelSeesPendingUploadsPerConnectionID() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        let query = spool.uploadsPendingQuery()
        try await spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1]), for: .header(session: 1, track: "video"), connection: "7")
        #expect(await query(7))
        #expect(await !query(8))
        try await spool.markDelivered(connection: "7", object: .header(session: 1, track: "video"))
        #expect(await !query(7))
    }
}
