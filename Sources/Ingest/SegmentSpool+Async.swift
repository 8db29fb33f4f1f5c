import Domain
import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

// MARK: - From async code

/// The same operations for async callers. Each runs on ``BlockingIO``: object files are written and read, journal
/// commits and fsyncs wait for the disk, which must never occupy a cooperative thread. In an async context Swift picks these overloads, so a
/// blocking call cannot slip in unnoticed.
extension SegmentSpool {
    public func store(_ bytes: [UInt8], for object: UploadObject, connection: String, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.store(bytes, for: object, connection: connection, now: now) }
    }

    public func nextSessionNumber(connection: String) async throws -> SessionNumber {
        try await BlockingIO.run { try self.nextSessionNumber(connection: connection) }
    }

    public func finishSession(_ session: SessionNumber, connection: String) async throws {
        try await BlockingIO.run { try self.finishSession(session, connection: connection) }
    }

    public func nextPending(connection: String, track: TrackName) async throws -> SpoolEntry? {
        try await BlockingIO.run { try self.nextPending(connection: connection, track: track) }
    }

    public func tracks(connection: String) async throws -> [TrackName] {
        try await BlockingIO.run { try self.tracks(connection: connection) }
    }

    public func pendingObjects() async throws -> [String: Int] {
        try await BlockingIO.run { try self.pendingObjects() }
    }

    public func isBusy(connection: String) async throws -> Bool {
        try await BlockingIO.run { try self.isBusy(connection: connection) }
    }

    public func isSessionDelivered(_ session: SessionNumber, connection: String) async throws -> Bool {
        try await BlockingIO.run { try self.isSessionDelivered(session, connection: connection) }
    }

    public func waitsForOtherTracks(connection: String, object: UploadObject) async throws -> Bool {
        try await BlockingIO.run { try self.waitsForOtherTracks(connection: connection, object: object) }
    }

    public func entry(connection: String, object: UploadObject) async throws -> SpoolEntry? {
        try await BlockingIO.run { try self.entry(connection: connection, object: object) }
    }

    public func bytes(connection: String, object: UploadObject) async throws -> [UInt8] {
        try await BlockingIO.run { try self.bytes(connection: connection, object: object) }
    }

    public func statistics(now: Date = Date()) async throws -> SpoolStatistics {
        try await BlockingIO.run { try self.statistics(now: now) }
    }

    public func markDelivered(connection: String, object: UploadObject) async throws {
        try await BlockingIO.run { try self.markDelivered(connection: connection, object: object) }
    }

    public func markGivenUp(connection: String, object: UploadObject, reason: String, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.markGivenUp(connection: connection, object: object, reason: reason, now: now) }
    }

    public func connectionQueueStates() async throws -> [String: ConnectionQueue] {
        try await BlockingIO.run { try self.connectionQueueStates() }
    }

    public func sessionDelivery(_ session: SessionNumber, connection: String) async throws -> SessionDelivery {
        try await BlockingIO.run { try self.sessionDelivery(session, connection: connection) }
    }

    public func register(_ destination: UploadDestination, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.register(destination, now: now) }
    }

    public func retire(destination key: String, now: Date = Date()) async throws {
        try await BlockingIO.run { try self.retire(destination: key, now: now) }
    }

    public func storedDestinations() async throws -> [StoredDestination] {
        try await BlockingIO.run { try self.storedDestinations() }
    }

    @discardableResult
    public func forgetDestinationIfDone(_ key: String) async throws -> Bool {
        try await BlockingIO.run { try self.forgetDestinationIfDone(key) }
    }

    public func giveUpPending(destination key: String, reason: String, now: Date = Date()) async throws -> [UploadObject] {
        try await BlockingIO.run { try self.giveUpPending(destination: key, reason: reason, now: now) }
    }

    public func pruneDeliveryRecords(now: Date = Date()) async throws {
        try await BlockingIO.run { try self.pruneDeliveryRecords(now: now) }
    }

    public func sessionDelivery(_ session: SessionNumber, owner: String) async throws -> SessionDelivery {
        try await BlockingIO.run { try self.sessionDelivery(session, owner: owner) }
    }

    public func keepRecent(_ session: SessionNumber, connection: String, track: TrackName, audioTrack: TrackName? = nil,
                           started: Date, owner: String? = nil) async throws {
        try await BlockingIO.run {
            try self.keepRecent(session, connection: connection, track: track, audioTrack: audioTrack, started: started, owner: owner)
        }
    }

    public func forgetRecent(_ session: SessionNumber, connection: String) async throws {
        try await BlockingIO.run { try self.forgetRecent(session, connection: connection) }
    }

    public func recentRecordings() async throws -> [RecentRecording] {
        try await BlockingIO.run { try self.recentRecordings() }
    }

    public func recentRecording(_ session: SessionNumber, owner: String) async throws -> RecentRecording? {
        try await BlockingIO.run { try self.recentRecording(session, owner: owner) }
    }

    public func recentFiles(_ session: SessionNumber, owner: String) async throws -> RecentTracks? {
        try await BlockingIO.run { try self.recentFiles(session, owner: owner) }
    }

    public func refreshMetrics() async {
        _ = try? await BlockingIO.run { self.refreshMetrics() }
    }
}

extension SegmentSpool {
    /// The transport model's BUSY hook (`PushAVStreamTransportServer.setUploadsPendingQuery`) for uploaders whose
    /// spool connection label is the Matter connection ID in decimal. An unreadable spool counts as busy.
    public func uploadsPendingQuery() -> @Sendable (UInt16) async -> Bool {
        { connectionID in (try? await self.isBusy(connection: String(connectionID))) ?? true }
    }
}
