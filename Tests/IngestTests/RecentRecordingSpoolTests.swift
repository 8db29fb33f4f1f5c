import Domain
import Foundation
@testable import Ingest
import Testing
import TestSupport

/// Recent recordings in the spool: a kept session's track stays on disk once delivered (the page plays it, no second
/// copy), across a reopen, bounded by bytes and sessions, oldest first; space for undelivered objects always wins.
@Suite struct RecentRecordingSpoolTests {
    static func object(_ session: SessionNumber, _ number: Int, track: TrackName = "video") -> UploadObject {
        UploadObject(session: session, track: track, number: number)
    }

    /// Stores and delivers a kept session of `segments` segments of `size` bytes (and an audio header, not kept).
    static func record(_ session: SessionNumber, in spool: SegmentSpool, label: String = "cam1/1@a", segments: Int = 2, size: Int = 100,
                       started: Date) throws {
        try spool.keepRecent(session, connection: label, track: "video", started: started)
        let objects = [UploadObject.header(session: session, track: "video"), .header(session: session, track: "audio")]
            + (1...segments).map { object(session, 1000 + $0) }
        // Each object `size` bytes in all: a 16-byte box structure around its payload.
        for item in objects {
            try spool.store(SpoolObjectBytes.whole(item, [UInt8](repeating: UInt8(session.rawValue), count: size - 16)), for: item, connection: label)
        }
        for item in objects { try spool.markDelivered(connection: label, object: item) }
        try spool.finishSession(session, connection: label)
        try spool.finishRecent(session, connection: label, ended: started + 10, endReason: "motionDetectedDuration",
                               triggerType: "motion", triggerOffset: 1.5)
    }

    @Test func aKeptSessionStaysAfterDeliveryAndAReopen() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try Self.record(1, in: spool, started: t0)
            #expect(try !spool.isBusy(connection: "cam1/1@a"), "delivered: nothing waits")
        }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        let kept = try spool.recentRecordings()
        #expect(kept.map(\.session) == [1] && kept[0].owner == "cam1/1" && kept[0].finished)
        #expect(kept[0].endReason == "motionDetectedDuration" && kept[0].triggerOffset == 1.5 && kept[0].bytes == 300)
        let files = try #require(try spool.recentFiles(1, owner: "cam1/1"))
        let objects = [UploadObject.header(session: 1, track: "video"), UploadObject(session: 1, track: "video", number: 1001),
                       UploadObject(session: 1, track: "video", number: 1002)]
        #expect(files.video.map(\.file.lastPathComponent) == objects.map(\.spoolFileName) && files.audio == nil)
        #expect(files.video.allSatisfy { FileManager.default.fileExists(atPath: $0.file.path) && $0.bytes == 100 })
        // No thumbnail is written with it (the page's is made from the kept track): the column old spools filled is empty.
        #expect(try spool.database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM recent WHERE thumbnail IS NOT NULL") } == 0)
        // One recording by its owner and number: what the page's thumbnail is made from (at its trigger offset).
        #expect(try spool.recentRecording(1, owner: "cam1/1") == kept[0])
        #expect(try spool.recentRecording(1, owner: "cam1/2") == nil && spool.recentRecording(2, owner: "cam1/1") == nil)
        // The audio track was not kept: its delivered header went as usual.
        #expect(try spool.entry(connection: "cam1/1@a", object: .header(session: 1, track: "audio")) == nil)
        #expect(try spool.recentFiles(2, owner: "cam1/1") == nil)
    }

    /// The page plays a clip with its sound (issue 48): a recording kept with its audio keeps both tracks once
    /// delivered, counts both against the bound, and both go when it goes.
    @Test func aRecordingKeptWithItsAudioKeepsBothTracksUntilItGoes() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, recentBytes: 1000, logger: .quiet)
        let label = "cam1/1@a"
        func record(_ session: SessionNumber, at started: Date) throws {
            try spool.keepRecent(session, connection: label, track: "video", audioTrack: "audio", started: started)
            let objects = ["video", "audio"].flatMap { track -> [UploadObject] in
                [.header(session: session, track: TrackName(track))] + (1...2).map { Self.object(session, 1000 + $0, track: TrackName(track)) }
            }
            for item in objects {
                try spool.store(SpoolObjectBytes.whole(item, [UInt8](repeating: 7, count: 84)), for: item, connection: label)
                try spool.markDelivered(connection: label, object: item)
            }
            try spool.finishSession(session, connection: label)
            try spool.finishRecent(session, connection: label, ended: started + 10, endReason: "motionDetectedDuration",
                                   triggerType: "motion", triggerOffset: 1)
        }
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        try record(1, at: t0)
        let files = try #require(try spool.recentFiles(1, owner: "cam1/1"))
        #expect(files.video.map(\.file.lastPathComponent)
                    == [UploadObject.header(session: 1, track: "video"), Self.object(1, 1001), Self.object(1, 1002)].map(\.spoolFileName))
        let audio = try #require(files.audio)
        #expect(audio.count == 3 && audio.allSatisfy { FileManager.default.fileExists(atPath: $0.file.path) && $0.bytes == 100 })
        #expect(try spool.recentRecordings().first?.bytes == 600, "both tracks count")
        // A second recording of 600 bytes goes past the 1000-byte bound: the first goes, all six of its files with it.
        try record(2, at: t0 + 60)
        #expect(try spool.recentRecordings().map(\.session) == [2])
        for file in files.video + audio { #expect(!FileManager.default.fileExists(atPath: file.file.path), "\(file.file.lastPathComponent)") }
    }

    /// The count bound is per camera (issue 47's review: it was one bound for all, "20 per camera" in the README), so
    /// a busy camera does not push a quiet one's recordings off its page.
    @Test func theSessionBoundIsPerCamera() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        let spool = try SegmentSpool(directory: directory, recentSessions: 2, logger: .quiet)
        try Self.record(1, in: spool, label: "cam2/1@b", started: t0)  // the quiet camera's one recording, the oldest
        for session in SessionNumber(1)...3 { try Self.record(session, in: spool, started: t0 + Double(session.rawValue)) }
        let kept = try spool.recentRecordings()
        #expect(kept.filter { $0.owner == "cam1/1" }.map(\.session) == [3, 2])
        #expect(kept.filter { $0.owner == "cam2/1" }.map(\.session) == [1])
    }

    @Test func theOldestRecentRecordingsGoPastTheBounds() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        // 300 bytes a session; at most 3 sessions or 700 bytes: the 700-byte bound keeps two.
        do {
            let spool = try SegmentSpool(directory: directory, recentBytes: 700, recentSessions: 3, logger: .quiet)
            for session in SessionNumber(1)...4 { try Self.record(session, in: spool, started: t0 + Double(session.rawValue)) }
            #expect(try spool.recentRecordings().map(\.session) == [4, 3])
            #expect(try spool.statistics().bytes == 600, "the dropped ones' files and headers went")
        }
        let counted = try SegmentSpool(directory: directory, recentBytes: 10_000, recentSessions: 1, logger: .quiet)
        try Self.record(5, in: counted, started: t0 + 5)
        #expect(try counted.recentRecordings().map(\.session) == [5])
    }

    /// A recent recording is delivered: it is bounded by `recentBytes` and does not count against the capacity, so
    /// it never makes a waiting object give way, nor gives way itself to the capacity (only to a disk short of its
    /// reserve, before anything waiting).
    @Test func anUndeliveredObjectNeverGivesWayToARecentRecording() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        // Capacity for about five 100-byte objects; the kept session's 300 bytes do not count.
        let spool = try SegmentSpool(directory: directory, capacity: 500, logger: .quiet)
        try spool.store(SpoolObjectBytes.whole(Self.object(7, 1001), [1]), for: Self.object(7, 1001), connection: "cam1/2@b", now: t0)  // waiting, the oldest
        try Self.record(1, in: spool, started: t0 + 1)
        try spool.store(SpoolObjectBytes.whole(Self.object(8, 1001), [UInt8](repeating: 9, count: 250)), for: Self.object(8, 1001), connection: "cam1/2@b", now: t0 + 2)
        #expect(try spool.recentRecordings().map(\.session) == [1], "the recent recording stays: it does not count")
        #expect(try spool.nextPending(connection: "cam1/2@b", track: "video")?.object == Self.object(7, 1001))
        #expect(try spool.statistics().evictions == 0, "nothing undelivered was evicted")
    }

    @Test func aDroppedRecordingIsNotKept() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        try spool.keepRecent(3, connection: "cam1/1@a", track: "video", started: Date())
        try spool.forgetRecent(3, connection: "cam1/1@a")
        #expect(try spool.recentRecordings().isEmpty)
    }
}
