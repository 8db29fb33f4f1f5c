import Domain
import Foundation
import GRDB
@testable import Ingest
import Testing
import TestSupport

/// The spool's durable record is each object's file; its journal row is an index that the last commits of a power
/// failure may lose (the journal commits without fsync). These tests take rows away behind the spool's back, as a
/// power failure would, and check the files make them good.
@Suite struct SpoolDurabilityTests {
    static let names: [(path: String, object: UploadObject?)] = [
        ("session_1/video/video.init", .header(session: 1, track: "video")),
        ("session_12/video/segment_1001.m4s", UploadObject(session: 12, track: "video", number: 1001)),
        ("session_3/audio/segment_12345.m4s", UploadObject(session: 3, track: "audio", number: 12345)),
        ("session_2/index-dynamic.mpd", .manifest(session: 2, isFinal: false)),
        ("session_2/index-static.mpd", .manifest(session: 2, isFinal: true)),
        ("session_4/a b/a b.init", .header(session: 4, track: "a b")),
        ("session_4/x/y/x/y.init", .header(session: 4, track: "x/y")),
        ("session_4/x/y/segment_1002.m4s", UploadObject(session: 4, track: "x/y", number: 1002)),
        ("session_1/video/.video.init.1a2b3c4d.tmp", nil),  // a write the process did not finish
        ("session_1/video/audio.init", nil),  // a header named after another track
        ("session_1/video/segment_.m4s", nil),
        ("session_1/video/segment_0.m4s", nil),
        ("session_1/video/segment_1001.mp4", nil),
        ("session_x/video/video.init", nil),
        ("session_/video/video.init", nil),
        ("session_1/index.mpd", nil),
        ("session_1", nil),
        ("video/video.init", nil),
    ]

    @Test(arguments: names) func aSpoolFileNameSaysWhichObjectItIs(path: String, object: UploadObject?) {
        #expect(UploadObject(spoolPath: path) == object)
        if let object { #expect(object.spoolPath == path) }
    }

    /// The flat name (one directory per label) says the same, and no other name passes for one.
    @Test(arguments: names) func aFlatSpoolFileNameSaysWhichObjectItIs(path: String, object: UploadObject?) {
        let flat = path.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "/", with: "%2F")
        #expect(UploadObject(spoolFileName: flat) == object)
        if let object {
            #expect(object.spoolFileName == flat)
            #expect(!object.spoolFileName.contains("/"))
        }
        #expect(UploadObject(spoolFileName: path) == nil, "a nested path is not a flat name")
    }

    @Test func aTrackNameWithAPercentSignKeepsItsOwnFlatName() {
        let odd = UploadObject(session: 5, track: "50%2F", number: 1001)
        #expect(odd.spoolFileName == "session_5%2F50%252F%2Fsegment_1001.m4s")
        #expect(UploadObject(spoolFileName: odd.spoolFileName) == odd)
    }

    /// Recording makes no directory: every object of every session sits in its label's one directory (a directory
    /// per session and track was made and removed per recording, and its metadata was the largest write after the
    /// objects themselves on a short clip).
    @Test func sessionsMakeNoDirectories() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        for session in SessionNumber(1)...3 {
            for track: TrackName in ["video", "audio"] {
                try spool.store(SpoolObjectBytes.whole(.header(session: session, track: track), [1]), for: .header(session: session, track: track), connection: "c")
                try spool.store(SpoolObjectBytes.whole(UploadObject(session: session, track: track, number: 1001), [2, 3]), for: UploadObject(session: session, track: track, number: 1001), connection: "c")
            }
            try spool.finishSession(session, connection: "c")
        }
        let label = spool.labelDirectory("c")
        let names = try FileManager.default.contentsOfDirectory(at: label, includingPropertiesForKeys: [.isRegularFileKey])
        #expect(names.count == 12)
        #expect(names.allSatisfy { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true })
    }

    /// A spool written with the old layout (`session_<N>/<track>/…`) opens with every object still queued and
    /// readable: the files are moved to their flat names before the journal is checked against them, and the
    /// emptied directories go.
    @Test func aSpoolInTheNestedLayoutIsMovedToTheFlatOneWithNothingLost() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let objects = [UploadObject.header(session: 2, track: "a b"), UploadObject(session: 2, track: "a b", number: 1001),
                       UploadObject.manifest(session: 2, isFinal: false), UploadObject(session: 3, track: "x/y", number: 1001)]
        let label: URL
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            for (index, object) in objects.enumerated() { try spool.store(SpoolObjectBytes.whole(object, [UInt8(index), 7]), for: object, connection: "c") }
            label = spool.labelDirectory("c")
        }
        for object in objects {
            let nested = label.appendingPathComponent(object.spoolPath)
            try FileManager.default.createDirectory(at: nested.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.moveItem(at: label.appendingPathComponent(object.spoolFileName), to: nested)
        }
        try Data([0]).write(to: label.appendingPathComponent("session_2/a b/notes.txt"))

        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try spool.statistics().queueDepth == objects.count)
        for (index, object) in objects.enumerated() {
            #expect(try spool.bytes(connection: "c", object: object) == SpoolObjectBytes.whole(object, [UInt8(index), 7]), "\(object)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: label.path).sorted()
        #expect(left == objects.map(\.spoolFileName).sorted(), "no directory and no stray is left")
    }

    /// Deletes rows as a power failure losing the last commits would: with SQLite, behind the spool's back.
    func loseRows(in directory: URL, _ sql: String) throws {
        let journal = try DatabaseQueue(path: directory.appendingPathComponent("journal.sqlite").path)
        try journal.write { try $0.execute(sql: sql) }
        try journal.close()
    }

    @Test func objectsWhoseRowsWereLostAreQueuedAgainFromTheirFiles() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = DestinationSpoolTests.destination()
        let label = destination.key
        let header = UploadObject.header(session: 7, track: "a b")
        let segment = UploadObject(session: 7, track: "a b", number: 1001)
        let manifest = UploadObject.manifest(session: 7, isFinal: true)
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try spool.register(destination)
            try spool.store(SpoolObjectBytes.whole(header, [1, 2, 3]), for: header, connection: label)
            try spool.store(SpoolObjectBytes.whole(segment, [4, 5]), for: segment, connection: label)
            try spool.store(SpoolObjectBytes.whole(manifest, [6]), for: manifest, connection: label)
        }
        // The store's commits are lost (rows and the session counter); the files are on disk.
        try loseRows(in: directory, "DELETE FROM object; DELETE FROM session; DELETE FROM counter")
        // A write that never finished and a file no object has are not adopted.
        let labelDirectory = directory.appendingPathComponent("objects").appendingPathComponent(SegmentSpool.safeName(label))
        try Data([0]).write(to: labelDirectory.appendingPathComponent(".session_7%2Fa b%2Fsegment_1002.m4s.deadbeef.tmp"))
        try Data([0]).write(to: labelDirectory.appendingPathComponent("notes.txt"))
        // Files under a label the journal never knew cannot be sent anywhere.
        let unknown = directory.appendingPathComponent("objects/unknown-1/session_1/video")
        try FileManager.default.createDirectory(at: unknown, withIntermediateDirectories: true)
        try Data([0]).write(to: unknown.appendingPathComponent("video.init"))

        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try spool.nextPending(connection: label, track: "a b")?.object == header)
        #expect(try spool.bytes(connection: label, object: segment) == SpoolObjectBytes.whole(segment, [4, 5]))
        #expect(try spool.nextPending(connection: label, track: UploadObject.manifestTrack)?.object == manifest)
        #expect(try spool.statistics().queueDepth == 3)
        #expect(try spool.nextSessionNumber(connection: label) == 8, "session numbers never go back")
        #expect(!FileManager.default.fileExists(atPath: labelDirectory.appendingPathComponent("notes.txt").path))
        #expect(!FileManager.default.fileExists(atPath: unknown.appendingPathComponent("video.init").path))
        // Adopted objects go out and leave like any other; their session is finished, so its header goes too.
        for object in [header, segment, manifest] { try spool.markDelivered(connection: label, object: object) }
        #expect(try spool.statistics().bytes == 0)
        #expect(try !spool.isBusy(connection: label))
    }

    @Test func aLostDeliveryOnlyMeansOneResend() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let segment = UploadObject(session: 1, track: "video", number: 1001)
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1]), for: .header(session: 1, track: "video"), connection: "c")
            try spool.store(SpoolObjectBytes.whole(segment, [2]), for: segment, connection: "c")
            try spool.markDelivered(connection: "c", object: segment)
        }
        // The delivery's row delete reached the disk but its file was still there (the process died in between).
        let file = directory.appendingPathComponent("objects").appendingPathComponent(SegmentSpool.safeName("c"))
            .appendingPathComponent(segment.spoolFileName)
        try Data(SpoolObjectBytes.whole(segment, [2])).write(to: file)
        let spool = try SegmentSpool(directory: directory, logger: .quiet)
        #expect(try spool.entry(connection: "c", object: segment)?.delivered == false)
    }

    /// A new spool's journal has 512-byte pages (each commit writes its changed pages whole, and a row is ~70 bytes);
    /// a spool made with larger pages keeps them and opens as before.
    @Test func aNewJournalUsesSmallPagesAndAnOldOneKeepsItsOwn() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pageSize = { (path: String) in try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "PRAGMA page_size") } }
        do {
            let spool = try SegmentSpool(directory: directory, logger: .quiet)
            try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [1]), for: .header(session: 1, track: "video"), connection: "c")
        }
        #expect(try pageSize(directory.appendingPathComponent("journal.sqlite").path) == 512)

        let old = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: old) }
        let queue = try DatabaseQueue(path: old.appendingPathComponent("journal.sqlite").path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE t (x)") }
        try queue.close()
        do {
            let spool = try SegmentSpool(directory: old, logger: .quiet)
            try spool.store(SpoolObjectBytes.whole(.header(session: 1, track: "video"), [2]), for: .header(session: 1, track: "video"), connection: "c")
            #expect(try spool.bytes(connection: "c", object: .header(session: 1, track: "video")) == SpoolObjectBytes.whole(.header(session: 1, track: "video"), [2]))
        }
        #expect(try pageSize(old.appendingPathComponent("journal.sqlite").path) == 4096)
    }

    @Test func theJournalCommitsWithoutFsyncAndSessionNumbersWithIt() throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try SegmentSpool(directory: directory, logger: .quiet).commitSynchronousLevel() == 1)
        #expect(try SessionLedger(file: directory.appendingPathComponent("sessions.sqlite")).commitSynchronousLevel() == 2)
    }
}
