import Domain
import Foundation
import Testing
import TestSupport
import TransportModel
import TransportStore

/// The event log in the camera's store: numbers that only increase across reopens, reservation blocks skipped after
/// a reopen, retention bounds, and a database from before the log opening with it.
@Suite("Event log store")
struct EventLogStoreTests {
    /// An Active continuous transport of `fabric`.
    private func activeTransport(_ server: PushAVStreamTransportServer, fabric: FabricIndex) async throws -> UInt16 {
        let id = try await server.allocatePushTransport(continuousOptions(expiryTime: nil), fabric: fabric).connectionID
        try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric)
        return id
    }

    private func record(_ id: UInt16, on server: PushAVStreamTransportServer) async throws {
        let session = try await server.recordingStarted(connectionID: id, trigger: .continuous)
        #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
    }

    @Test("Numbers increase across close and reopen; the rest of the reserved block is skipped; entries read back as sent")
    func numbersAcrossReopen() async throws {
        let block = PushAVStreamTransportServer.eventNumberReservationBlock
        try await withTemporaryDirectory { directory in
            let fresh = try TransportStore(path: directory.appendingPathComponent("t.sqlite").path)
            #expect(try fresh.loadEventNumberReservation() == 1, "a new store starts at 1")
            try fresh.close()
            let camera = try await StoredCamera(in: directory, logsEvents: true)
            let server = camera.server
            let one = try await activeTransport(server, fabric: fabric1)
            let two = try await activeTransport(server, fabric: fabric2)
            let stream = await server.events()
            try await record(one, on: server)
            camera.clock.advance(by: 2.5)
            try await record(two, on: server)
            await server.emitZoneEvent(.triggered(zone: 3, at: .seconds(1)))
            await server.emitZoneEvent(.stopped(zone: 3, reason: .actionStopped, at: .seconds(9)))
            await server.finishSubscriptions()
            let sent = await collect(stream)
            #expect(sent.map(\.number) == [1, 2, 3, 4, 5, 6])
            try camera.stop()

            try camera.start { (store: TransportStore) throws in
                #expect(try store.events(after: 0, fabric: nil, limit: 100) == sent, "number, time, fabric and fields round-trip")
                // A fabric reads its own transport events and every zone event (zones belong to no fabric).
                #expect(try store.events(after: 0, fabric: fabric2, limit: 100) == Array(sent.suffix(4)))
                #expect(try store.events(after: 0, fabric: fabric1, limit: 100).map(\.number) == [1, 2, 5, 6])
                #expect(try store.loadEventNumberReservation() == 1 + block)
            }
            try await record(one, on: camera.server)
            #expect(try camera.store.events(after: 6, fabric: nil, limit: 100).map(\.number) == [1 + block, 2 + block],
                    "numbers 7…\(block) were reserved before the reopen: never used")

            // A third life: above everything before.
            try camera.restart()
            try await record(one, on: camera.server)
            #expect(try camera.store.events(after: 0, fabric: nil, limit: 100).map(\.number)
                    == [1, 2, 3, 4, 5, 6, 1 + block, 2 + block, 1 + 2 * block, 2 + 2 * block])
            try camera.stop()
        }
    }

    @Test("Pruning on append keeps the newest maxEntries, none older than maxAge", arguments: [
        // (maxEntries, maxAge s, appended (number, seconds after start), numbers kept)
        (3, 3600.0, [(1, 0.0), (2, 1), (3, 2), (4, 3), (5, 4)], [3, 4, 5]),
        (10, 60.0, [(1, 0.0), (2, 30), (3, 61), (4, 90)], [2, 3, 4]),
        (10, 60.0, [(1, 0.0), (2, 30), (3, 200)], [3]),
        (2, 60.0, [(1, 0.0), (2, 50), (3, 100)], [2, 3]),
        (5, 3600.0, [(1, 0.0), (2, 1)], [1, 2]),
    ] as [(Int, Double, [(UInt64, Double)], [UInt64])])
    func pruning(maxEntries: Int, maxAge: Double, appended: [(UInt64, Double)], kept: [UInt64]) async throws {
        try await withTemporaryDirectory { directory in
            let store = try TransportStore(path: directory.appendingPathComponent("t.sqlite").path,
                                           retention: EventLogRetention(maxEntries: maxEntries, maxAge: maxAge))
            let start = Date(timeIntervalSince1970: 1_750_000_000)
            for (number, seconds) in appended {
                try store.append(LoggedTransportEvent(
                    number: number, time: start.addingTimeInterval(seconds), fabricIndex: fabric1,
                    event: .pushTransportEnd(.init(connectionID: 1, containerType: .cmaf, cmafSessionNumber: SessionNumber(number)))))
            }
            #expect(try store.events(after: 0, fabric: nil, limit: 1000).map(\.number) == kept)
            // Pruning never lowers the numbering.
            #expect(try store.loadEventNumberReservation() == appended.last!.0 + 1)
            try store.close()
        }
    }

    @Test("A store written before the event log opens with its state, an empty log, and numbering from 1")
    func migrationFromBeforeTheLog() async throws {
        try await withTemporaryDirectory { directory in
            let camera = try await StoredCamera(in: directory, logsEvents: true)
            let id = try await activeTransport(camera.server, fabric: fabric1)
            try camera.stop()
            // What v2 left on disk: the v1/v2 schema only (those migrations are unchanged).
            try await sqlite(camera.path, """
                DROP TABLE eventLog; DROP TABLE eventNumbering;
                DELETE FROM grdb_migrations WHERE identifier = 'v3: event log';
                """)

            try camera.start()
            #expect(await camera.server.storedConnection(id)?.transportStatus == .active)
            #expect(try camera.store.events(after: 0, fabric: nil, limit: 10).isEmpty)
            try await record(id, on: camera.server)
            #expect(try camera.store.events(after: 0, fabric: nil, limit: 10).map(\.number) == [1, 2])
            try camera.stop()
        }
    }
}

/// Everything a subscription received until the server finished its subscriptions.
private func collect<Element: Sendable>(_ stream: AsyncStream<Element>) async -> [Element] {
    var all: [Element] = []
    for await element in stream { all.append(element) }
    return all
}
