import Foundation
import Ingest
import Testing

@Suite struct SegmentSpoolTests {
    func object(_ session: Int, _ number: Int, track: String = "video") -> UploadObject {
        UploadObject(session: session, track: track, number: number)
    }

    @Test func replaysInOrderAfterReopenAndKeepsHeadersForResends() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try spool.store([1, 2, 3], for: .header(session: 1, track: "video"), connection: "c")
            try spool.store([4, 5], for: object(1, 1002), connection: "c")
            try spool.store([6], for: object(1, 1001), connection: "c")
            try spool.store([7], for: .header(session: 1, track: "audio"), connection: "c")
            #expect(try spool.nextSessionNumber(connection: "c") == 2)
            #expect(try spool.nextSessionNumber(connection: "other") == 1)
        }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try spool.tracks(connection: "c") == ["audio", "video"])
        #expect(try spool.nextPending(connection: "c", track: "video")?.object == .header(session: 1, track: "video"))
        try spool.markDelivered(connection: "c", object: .header(session: 1, track: "video"))
        #expect(try spool.nextPending(connection: "c", track: "video")?.object == object(1, 1001))
        #expect(try spool.bytes(connection: "c", object: object(1, 1001)) == [6])
        try spool.markDelivered(connection: "c", object: object(1, 1001))
        try spool.markDelivered(connection: "c", object: object(1, 1002))
        #expect(try spool.nextPending(connection: "c", track: "video") == nil)
        // The session is not finished: its header stays for a 412 resend.
        #expect(try spool.bytes(connection: "c", object: .header(session: 1, track: "video")) == [1, 2, 3])
        #expect(try spool.isBusy(connection: "c"))  // the audio header is pending
        try spool.markDelivered(connection: "c", object: .header(session: 1, track: "audio"))
        #expect(try !spool.isBusy(connection: "c"))
        try spool.finishSession(1, connection: "c")
        #expect(try spool.entry(connection: "c", object: .header(session: 1, track: "video")) == nil)
        #expect(try spool.statistics().bytes == 0)
        #expect(try spool.nextSessionNumber(connection: "c") == 2)
    }

    @Test func evictsWholeOldestSessionsWhenFullButNeverTheCurrentOne() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, capacity: 100, logger: .quiet)
        let start = Date(timeIntervalSince1970: 1_000_000)
        try spool.store(Array(repeating: 1, count: 30), for: .header(session: 1, track: "video"), connection: "c", now: start)
        try spool.store(Array(repeating: 1, count: 30), for: object(1, 1001), connection: "c", now: start + 1)
        try spool.store(Array(repeating: 2, count: 30), for: .header(session: 2, track: "video"), connection: "c", now: start + 2)
        #expect(try spool.statistics().evictions == 0)
        try spool.store(Array(repeating: 2, count: 30), for: object(2, 1001), connection: "c", now: start + 3)
        let statistics = try spool.statistics(now: start + 10)
        #expect(statistics.evictions == 1)
        #expect(statistics.bytes == 60)
        #expect(statistics.queueDepth == 2)
        #expect(statistics.oldestAge == 8)
        #expect(try spool.nextPending(connection: "c", track: "video")?.object == .header(session: 2, track: "video"))
        // One session larger than the spool is kept (nothing older to evict); the cap is exceeded, not the data lost.
        try spool.store(Array(repeating: 2, count: 80), for: object(2, 1002), connection: "c", now: start + 4)
        #expect(try spool.statistics().queueDepth == 3)
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
        try await spool.store([1], for: .header(session: 1, track: "video"), connection: "7")
        #expect(await query(7))
        #expect(await !query(8))
        try await spool.markDelivered(connection: "7", object: .header(session: 1, track: "video"))
        #expect(await !query(7))
    }
}
