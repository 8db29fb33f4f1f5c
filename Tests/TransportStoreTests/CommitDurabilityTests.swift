import Foundation
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
}
