import Foundation
@testable import Ingest
import Testing
import TestSupport

/// Objects are fsync'd only when they wait for delivery longer than the spool's `syncDelay` (an object delivered in
/// time is never synced, and one deleted before the kernel wrote it is never written); after a power failure,
/// recovery drops the files whose data did not reach the disk whole — counted, never uploaded broken.
@Suite struct SpoolDeferredSyncTests {
    static let header = UploadObject.header(session: 1, track: "video")
    static let first = UploadObject(session: 1, track: "video", number: 1001)
    static let second = UploadObject(session: 1, track: "video", number: 1002)

    /// Stored objects wait unsynced; a pass before the delay syncs none, one after it syncs exactly those still
    /// waiting (not the delivered one), and they leave the list; a stop syncs whatever is left, however young.
    @Test func onlyObjectsStillWaitingAfterTheDelayAreSynced() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A delay no timer reaches during the test: the passes below are the only ones.
        let spool = try SegmentSpool(directory: directory, syncDelay: 3600, logger: .quiet)
        let t0 = Date()
        for (index, object) in [Self.header, Self.first].enumerated() {
            try spool.store(SpoolObjectBytes.whole(object, [1]), for: object, connection: "c", now: t0 + Double(index))
        }
        try spool.markDelivered(connection: "c", object: Self.first)
        #expect(spool.unsyncedObjects.map(\.object) == [Self.header])
        #expect(spool.syncOverdue(now: t0 + 3599) == 0)
        #expect(spool.syncOverdue(now: t0 + 3600) == 1)
        #expect(spool.unsyncedObjects.isEmpty)
        try spool.store(SpoolObjectBytes.whole(Self.second, [2]), for: Self.second, connection: "c", now: t0 + 3601)
        #expect(spool.syncPending() == 1 && spool.unsyncedObjects.isEmpty)
    }

    /// A delay of 0 is the old behaviour: each object is fsync'd as it is stored, nothing is left to sync.
    @Test func noDelayMeansEveryObjectIsSyncedAsItIsStored() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, syncDelay: 0, logger: .quiet)
        try spool.store(SpoolObjectBytes.whole(Self.header, [1]), for: Self.header, connection: "c")
        #expect(spool.unsyncedObjects.isEmpty && spool.syncPending() == 0)
    }

    /// The spool's own timer syncs an overdue object with nobody asking (polled until it has, within a deadline).
    @Test func theTimerSyncsOverdueObjects() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, syncDelay: 0.2, logger: .quiet)
        try await spool.store(SpoolObjectBytes.whole(Self.header, [1]), for: Self.header, connection: "c")
        try await Fixtures.waitUntil("the timer synced the object", timeout: .seconds(10)) { spool.unsyncedObjects.isEmpty }
        #expect(try await spool.nextPending(connection: "c", track: "video")?.object == Self.header, "synced, still queued")
    }

    /// What a power failure can leave of a file written without its fsync, and what recovery makes of it: a file
    /// shorter than its row, or of its row's length with the end zeroed, is dropped (and counted); so is a row-less
    /// file that is not whole, and a row whose file is missing (its rename never reached the disk). A whole row-less
    /// file is still adopted, and a whole file with its row stays queued.
    @Test func recoveryDropsFilesAPowerFailureCutShort() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let label = "power-cut"
        let third = UploadObject(session: 1, track: "video", number: 1003)
        let fourth = UploadObject(session: 1, track: "video", number: 1004)
        let rowless = UploadObject(session: 2, track: "video", number: 1001)
        let rowlessCut = UploadObject(session: 2, track: "video", number: 1002)
        let payload = [UInt8](repeating: 7, count: 64)
        let damaged = MetricsProbe(counter: "pushav_spool_damaged_objects_total", connection: label)
        let folder: URL
        do {
            let spool = try SegmentSpool(directory: directory, syncDelay: 3600, logger: .quiet)
            for object in [Self.header, Self.first, Self.second, third, fourth] {
                try spool.store(SpoolObjectBytes.whole(object, payload), for: object, connection: label)
            }
            folder = spool.labelDirectory(label)
        }
        let whole = SpoolObjectBytes.whole(Self.first, payload)
        // Cut short: the file's length reached the disk, part of its data did not.
        try Data(whole.prefix(40)).write(to: folder.appendingPathComponent(Self.second.spoolFileName))
        // The right length, everything after the moof zeroed (blocks allocated, never written): no mdat box.
        var zeroed = whole
        for index in 8..<zeroed.count { zeroed[index] = 0 }
        try Data(zeroed).write(to: folder.appendingPathComponent(third.spoolFileName))
        // The journal names it, the disk has no file of that name.
        try FileManager.default.removeItem(at: folder.appendingPathComponent(fourth.spoolFileName))
        // Row-less files (their rows lost with the journal's last commits): one whole, one cut.
        try Data(SpoolObjectBytes.whole(rowless, payload)).write(to: folder.appendingPathComponent(rowless.spoolFileName))
        try Data(SpoolObjectBytes.whole(rowlessCut, payload).prefix(30)).write(to: folder.appendingPathComponent(rowlessCut.spoolFileName))

        let spool = try SegmentSpool(directory: directory, syncDelay: 3600, logger: .quiet)
        #expect(try spool.entry(connection: label, object: Self.header) != nil)
        #expect(try spool.entry(connection: label, object: Self.first) != nil)
        #expect(try spool.entry(connection: label, object: Self.second) == nil)
        #expect(try spool.entry(connection: label, object: third) == nil)
        #expect(try spool.entry(connection: label, object: fourth) == nil)
        #expect(try spool.entry(connection: label, object: rowless) != nil)
        #expect(try spool.entry(connection: label, object: rowlessCut) == nil)
        for gone in [Self.second, third, rowlessCut] {
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent(gone.spoolFileName).path), "\(gone)")
        }
        #expect(damaged.increase == 4)
        #expect(Set(spool.damagedAtOpen(connection: label)) == [Self.second, third, fourth, rowlessCut])
    }

    /// The box check recovery relies on, as a table: whole objects pass; every cut, zeroed box headers, a box that
    /// runs past the end, a size-0 box and a header without `moov` fail; a 64-bit box size is read.
    @Test(arguments: checks) func theBoxCheck(name: String, bytes: [UInt8], required: String, whole: Bool) {
        let isWhole = SpoolFileCheck.isWholeISOBMFF(length: bytes.count, required: required) { offset, count in
            offset + count <= bytes.count ? Array(bytes[offset..<offset + count]) : nil
        }
        #expect(isWhole == whole, "\(name)")
    }

    static let segment = SpoolObjectBytes.whole(first, [1, 2, 3, 4])
    static let headerBytes = SpoolObjectBytes.whole(header, [5, 6])
    static let checks: [(String, [UInt8], String, Bool)] = [
        ("a whole segment", segment, "mdat", true),
        ("a whole header", headerBytes, "moov", true),
        ("a header checked as a segment (no mdat)", headerBytes, "mdat", false),
        ("empty", [], "mdat", false),
        ("the moof alone", Array(segment.prefix(8)), "mdat", false),
        ("cut inside the mdat's header", Array(segment.prefix(12)), "mdat", false),
        ("cut inside the mdat", Array(segment.prefix(segment.count - 1)), "mdat", false),
        ("the mdat's header zeroed", Array(segment.prefix(8)) + [UInt8](repeating: 0, count: segment.count - 8), "mdat", false),
        ("all zeroes", [UInt8](repeating: 0, count: 24), "mdat", false),
        ("a box past the end", [0, 0, 0, 64] + Array("mdat".utf8) + [1, 2], "mdat", false),
        ("a 64-bit size", [0, 0, 0, 1] + Array("mdat".utf8) + [0, 0, 0, 0, 0, 0, 0, 18, 9, 9], "mdat", true),
        ("a 64-bit size past the end", [0, 0, 0, 1] + Array("mdat".utf8) + [0, 0, 0, 0, 0, 0, 1, 0, 9, 9], "mdat", false),
        ("an unprintable type", [0, 0, 0, 8, 0x6D, 0x64, 0x01, 0x74], "mdat", false),
    ]

    /// A manifest is checked whole: UTF-8 that ends with `</MPD>`.
    @Test func theManifestCheck() {
        #expect(SpoolFileCheck.isWholeManifest(Array("<?xml version=\"1.0\"?>\n<MPD>\n</MPD>\n".utf8)))
        #expect(!SpoolFileCheck.isWholeManifest(Array("<?xml version=\"1.0\"?>\n<MPD>\n</MP".utf8)))
        #expect(!SpoolFileCheck.isWholeManifest(Array("<MPD>".utf8) + [0xFF, 0xFE] + Array("</MPD>".utf8)))
        #expect(!SpoolFileCheck.isWholeManifest([UInt8](repeating: 0, count: 40)))
    }
}

/// One process owns a spool: its journal is held exclusively (which keeps SQLite's WAL index in memory instead of a
/// `-shm` file), and a second opener gets one clear error instead of sharing it.
@Suite struct SpoolOwnershipTests {
    @Test func aSecondOpenerIsToldTheSpoolIsInUse() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1]), for: .header(session: 1, track: "video"),
                            connection: "c")
            #expect(throws: SpoolInUse.self) { try SegmentSpool(directory: directory, logger: .quiet) }
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("journal.sqlite-shm").path))
        }
        // Once the owner is gone the next one opens it, with what it stored.
        let reopened = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try reopened.nextPending(connection: "c", track: "video")?.object == .header(session: 1, track: "video"))
    }
}
