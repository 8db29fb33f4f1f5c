import Foundation
import GRDB
import TransportModel
import Testing
import TestSupport
@testable import TransportStore

/// GRDB's pool switches a WAL database to `synchronous = NORMAL` after the configuration's own statements run, so a
/// FULL asked for there never applied: the camera store's session and event numbers could be handed out twice after
/// a power failure.
@Suite struct CommitDurabilityTests {
    @Test func everyCommitOfTheCameraStoreWaitsForItsFsync() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cam1.sqlite").path
        #expect(try TransportStore(path: path).commitSynchronousLevel() == 2)
        #expect(try TransportStore(path: path).commitSynchronousLevel() == 2, "and after a reopen")
    }

    /// Records whose loss only repeats something (an End's record, an event) commit without their own fsync; the
    /// writer goes back to FULL after each, so the next session number is synced. A Begin's two records and its event
    /// are one commit and all come back after a reopen.
    @Test func repeatableRecordsSkipTheirFsyncAndTheWriterReturnsToFull() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cam1.sqlite").path
        do {
            let store = try TransportStore(path: path)
            let begin = LoggedTransportEvent(number: 1, time: Date(), fabricIndex: 1, event: .pushTransportBegin(.init(
                connectionID: 3, triggerType: .command, activationReason: .userInitiated, containerType: .cmaf, cmafSessionNumber: 7)))
            try store.saveBegin(sessionNumber: 7, openRecording: OpenRecording(sessionNumber: 7, containerType: .cmaf, fabricIndex: 1),
                                connectionID: 3, event: begin)
            try store.append(LoggedTransportEvent(number: 2, time: Date(), fabricIndex: 1,
                                                  event: .pushTransportEnd(.init(connectionID: 3, containerType: .cmaf, cmafSessionNumber: 6))))
            #expect(try store.commitSynchronousLevel() == 2, "back to FULL after an event")
            try store.save(openRecording: nil, connectionID: 4)
            #expect(try store.commitSynchronousLevel() == 2, "back to FULL after an End's record")
            try store.close()
        }
        let reopened = try TransportStore(path: path)
        let state = try reopened.load()
        #expect(state.sessionNumbers[3] == 7)
        #expect(state.openRecordings[3]?.sessionNumber == 7)
        #expect(try reopened.events(after: 0, fabric: nil, limit: 10).map(\.event.name) == ["PushTransportBegin", "PushTransportEnd"])
    }

    /// 512-byte pages for a new store (a commit writes whole pages to the WAL: the store's rows are small).
    @Test func aNewStoreUsesSmallPages() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cam1.sqlite").path
        try TransportStore(path: path).close()
        let pageSize = try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "PRAGMA page_size") }
        #expect(pageSize == 512)
    }

    /// The store is held exclusively, so SQLite keeps the WAL index in memory: no `-shm` file, whose page every commit
    /// dirtied again (2.5 % of a Command transport's recorded bytes written a second time). The WAL itself stays.
    @Test func theWALIndexStaysInMemory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cam1.sqlite").path
        let store = try TransportStore(path: path)
        try store.saveBegin(sessionNumber: 1, openRecording: OpenRecording(sessionNumber: 1, containerType: .cmaf, fabricIndex: 1),
                            connectionID: 1, event: nil)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
        #expect(try store.journalMode() == "wal")
        try store.close()
    }
}
