import Domain
import Foundation
import Testing
import TestSupport
import TransportModel
import TransportStore

@Suite("TC-PAVST-2.14")
struct PersistenceAcrossRebootTests {
    @Test("An allocated transport survives a reopen byte for byte; after Deallocate the list stays empty")
    func reboot() async throws {
        try await withTemporaryDirectory { directory in
            let camera = try await StoredCamera(in: directory)
            let allocated = try await camera.server.allocatePushTransport(continuousOptions(), fabric: fabric1)
            _ = try await camera.server.allocatePushTransport(motionOptions(), fabric: fabric2)
            try await camera.server.setTransportStatus(connectionID: nil, transportStatus: .active, fabric: fabric2)
            #expect(allocated.connectionID != 0)
            let before = try sortedJSON(await camera.server.currentConnections(fabric: fabric1))
            let beforeOther = try sortedJSON(await camera.server.currentConnections(fabric: fabric2))

            try camera.restart()
            #expect(try sortedJSON(await camera.server.currentConnections(fabric: fabric1)) == before)
            #expect(try sortedJSON(await camera.server.currentConnections(fabric: fabric2)) == beforeOther)
            #expect(await camera.server.currentRegistries == testRegistries)

            try await camera.server.deallocatePushTransport(connectionID: allocated.connectionID, fabric: fabric1)
            try camera.restart()
            #expect(await camera.server.currentConnections(fabric: fabric1).isEmpty)
            #expect(await camera.server.currentConnections(fabric: fabric2).count == 1)
            try camera.stop()
        }
    }
}

@Suite("Transport store")
struct TransportStoreTests {
    @Test("The database runs in WAL mode")
    func walMode() async throws {
        try await withTemporaryDirectory { directory in
            let store = try TransportStore(path: directory.appendingPathComponent("t.sqlite").path)
            #expect(try store.journalMode() == "wal")
        }
    }

    @Test("Session numbers only increase: across recordings, reopens, and a reused connection ID")
    func sessionNumbers() async throws {
        try await withTemporaryDirectory { directory in
            let camera = try await StoredCamera(in: directory)
            let id = try await camera.server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
            try await camera.server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1)
            for expected in UInt64(1)...3 {
                let session = try await camera.server.recordingStarted(connectionID: id, trigger: .continuous)
                #expect(session == SessionNumber(expected))
                await camera.server.recordingEnded(connectionID: id, sessionNumber: session)
            }
            // A restart in the middle of a recording: the number it used is never handed out again.
            _ = try await camera.server.recordingStarted(connectionID: id, trigger: .continuous)

            try camera.restart()
            #expect(try await camera.server.recordingStarted(connectionID: id, trigger: .continuous) == 5)
            try await camera.server.setTransportStatus(connectionID: id, transportStatus: .inactive, fabric: fabric1)
            try await camera.server.deallocatePushTransport(connectionID: id, fabric: fabric1)
            try camera.stop()

            // The ID comes round again (seeded so the next allocation wraps to it): numbering continues.
            try camera.start { try $0.save(connections: [], lastConnectionID: id - 1) }
            let reused = try await camera.server.allocatePushTransport(continuousOptions(), fabric: fabric2).connectionID
            #expect(reused == id)
            try await camera.server.setTransportStatus(connectionID: reused, transportStatus: .active, fabric: fabric2)
            #expect(try await camera.server.recordingStarted(connectionID: reused, trigger: .continuous) == 6)
            try camera.stop()
        }
    }

    @Test("An ExpiryTime deadline keeps running across a reopen")
    func expiryAcrossReopen() async throws {
        try await withTemporaryDirectory { directory in
            let camera = try await StoredCamera(in: directory)
            _ = try await camera.server.allocatePushTransport(continuousOptions(expiryTime: 100), fabric: fabric1)
            try camera.stop()

            camera.clock.advance(by: 60)
            try camera.start()
            #expect(await camera.server.currentConnections(fabric: fabric1).count == 1)
            #expect(await camera.server.currentConnections(fabric: fabric1).first?.transportOptions?.expiryTime == 100)
            try camera.stop()

            camera.clock.advance(by: 41)
            try camera.start()
            #expect(await camera.server.currentConnections(fabric: fabric1).isEmpty)
            try camera.stop()
            try camera.start { (store: TransportStore) throws in
                #expect(try store.load().connections.isEmpty, "the expired connection was deleted from the file too")
            }
            try camera.stop()
        }
    }

    @Test("Connection IDs continue after the last issued one across a reopen")
    func lastConnectionID() async throws {
        try await withTemporaryDirectory { directory in
            let camera = try await StoredCamera(in: directory)
            _ = try await camera.server.allocatePushTransport(continuousOptions(), fabric: fabric1)
            let second = try await camera.server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
            try await camera.server.deallocatePushTransport(connectionID: second, fabric: fabric1)
            try camera.restart()
            #expect(try await camera.server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID == 3)
            try camera.stop()
        }
    }

    @Test("Registries round-trip, including TLS chains, and removing a fabric forgets its endpoints")
    func registries() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.sqlite").path
            var registries = testRegistries
            registries.streams.privacy = PrivacyModes(softLivestreamPrivacyModeEnabled: true)
            registries.zoneManagement.sensitivity = 4
            registries.zoneManagement.triggers = [
                1: ZoneTriggerControlStruct(zoneID: 1, initialDuration: 5, augmentationDuration: 2, maxDuration: 65535, blindDuration: 0),
                7: ZoneTriggerControlStruct(zoneID: 7, initialDuration: 1, augmentationDuration: 1, maxDuration: 1, blindDuration: 9, sensitivity: 3),
            ]
            var store = try TransportStore(path: path)
            try store.save(registries: registries, changed: .all)
            try store.close()
            store = try TransportStore(path: path)
            #expect(try store.load().registries == registries)

            let server = try openServer(store, clock: ManualClock())
            try await server.removeFabric(fabric2)
            try store.close()
            store = try TransportStore(path: path)
            #expect(try store.load().registries.tls.endpoints.keys.map(\.fabricIndex) == [fabric1])
        }
    }

    @Test("A file that is not a database → corrupt, at startup")
    func corruptFile() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.sqlite").path
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
            do {
                _ = try TransportStore(path: path)
                Issue.record("a corrupt store opened")
            } catch let error as TransportStoreError {
                guard case .corrupt(let reportedPath, _) = error else { Issue.record("got \(error)"); return }
                #expect(reportedPath == path)
                #expect(error.description.contains("corrupt"))
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(repeating: 0x5A, count: 8192), "the file is left alone")
        }
    }

    @Test("A store whose directory cannot be created or written → cannotOpen, at startup", arguments: [
        "missing/deeper/t.sqlite",  // a directory that does not exist
        "blocker/t.sqlite",  // "blocker" is a regular file
        "",  // the temp directory itself
    ])
    func unwritable(relativePath: String) async throws {
        try await withTemporaryDirectory { directory in
            try Data("x".utf8).write(to: directory.appendingPathComponent("blocker"))
            let path = relativePath.isEmpty ? directory.path : directory.appendingPathComponent(relativePath).path
            do {
                _ = try TransportStore(path: path)
                Issue.record("an unwritable store opened")
            } catch let error as TransportStoreError {
                guard case .cannotOpen = error else { Issue.record("got \(error)"); return }
                #expect(error.description.contains(path))
            }
        }
    }

    @Test("A stored row that no longer decodes → a startup error naming the row, not a silently shorter list")
    func undecodableRow() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.sqlite").path
            var store = try TransportStore(path: path)
            var server = try openServer(store, clock: ManualClock())
            try await server.setRegistries(testRegistries)
            let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
            try store.close()
            try await sqlite(path, "UPDATE connection SET transportOptions = CAST('{\"url\":1}' AS BLOB) WHERE connectionID = \(id)")
            store = try TransportStore(path: path)
            do {
                server = try openServer(store, clock: ManualClock())
                Issue.record("the server started without connection \(id)")
            } catch let error as TransportStoreError {
                guard case .undecodableRow(let table, let key, _) = error else { Issue.record("got \(error)"); return }
                #expect(table == "connection")
                #expect(key == "\(id)")
            }
        }
    }

    @Test("A database written by a newer version → newerSchema, untouched")
    func newerSchema() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("t.sqlite").path
            try TransportStore(path: path).close()
            try await sqlite(path, "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
            #expect {
                _ = try TransportStore(path: path)
            } throws: { error in
                guard let error = error as? TransportStoreError, case .newerSchema = error else { return false }
                return true
            }
        }
    }

    @Test("A write that fails after start answers FAILURE and changes nothing")
    func failedWrite() async throws {
        try await withTemporaryDirectory { directory in
            let store = try TransportStore(path: directory.appendingPathComponent("t.sqlite").path)
            let server = try openServer(store, clock: ManualClock())
            try await server.setRegistries(testRegistries)
            try store.close()
            do {
                _ = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
                Issue.record("allocation succeeded without storage")
            } catch let error as TransportCommandError {
                #expect(error.status == .interactionModel(.failure))
                #expect(error.message.contains("storage"))
            }
            #expect(await server.currentConnections(fabric: fabric1).isEmpty)
        }
    }
}
