import Foundation
import Synchronization
import Testing
import TestSupport
import TransportModel
import TransportStore

/// TLS endpoints' private keys live in the process's one key store; a camera's store keeps a reference. Checked on
/// the file itself: after a save (and after the move of a key an older version stored inline) the camera's SQLite
/// file holds no byte sequence of the key.
@Suite struct PrivateKeyReferenceTests {
    /// A key store in memory, counting what it holds.
    final class KeyStore: TLSPrivateKeyStore {
        let keys = Mutex<[String: Data]>([:])
        /// How many times a key was handed over to be stored.
        let stores = Mutex(0)
        func reference(storing key: Data) throws -> String {
            stores.withLock { $0 += 1 }
            let reference = "key-" + key.map { String($0, radix: 16) }.joined().prefix(24)
            keys.withLock { $0[reference] = key }
            return reference
        }
        func key(for reference: String) throws -> Data? { keys.withLock { $0[reference] } }
    }

    /// A key long enough that finding it in the file cannot be chance.
    static let key = Data((0..<48).map { UInt8(($0 * 37 + 11) & 0xFF) })

    static var registries: TransportRegistries {
        var registries = testRegistries
        registries.tls.endpoints[TLSEndpointKey(fabricIndex: fabric1, endpointID: 1)]?.privateKey = key
        return registries
    }

    static func fileHoldsKey(_ path: String) throws -> Bool {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data()
        return bytes.range(of: key) != nil || wal.range(of: key) != nil
    }

    @Test func keysLiveInTheKeyStoreAndTheFileHoldsAReference() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("cam.sqlite").path
            let keys = KeyStore()
            var store = try TransportStore(path: path, privateKeys: keys)
            try store.save(registries: Self.registries, changed: .all)
            try store.close()
            #expect(try !Self.fileHoldsKey(path))
            #expect(keys.keys.withLock { $0.values.contains(Self.key) })

            store = try TransportStore(path: path, privateKeys: keys)
            #expect(try store.load().registries == Self.registries)
            try store.close()

            // Without its key store the reference finds nothing: a clear startup error, not an endpoint without a key.
            store = try TransportStore(path: path)
            #expect(throws: TransportStoreError.self) { _ = try store.load() }
            try store.close()
        }
    }

    /// Each cluster is its own persistence section: a zone or privacy change rewrites its own tables and hands no
    /// key to the key store again (every registry change used to rewrite every table, keys included).
    @Test func aZoneOrPrivacyChangeLeavesTheTLSSectionAlone() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("cam.sqlite").path
            let keys = KeyStore()
            let store = try TransportStore(path: path, privateKeys: keys)
            let server = try PushAVStreamTransportServer(capabilities: TransportCapabilities(maxZones: 8), persistence: store)
            try await server.setRegistries(Self.registries)
            let storesAfterSetUp = keys.stores.withLock { $0 }
            #expect(storesAfterSetUp == Self.registries.tls.endpoints.count)

            let zone = TwoDCartesianZoneStruct(name: "gate", vertices: [.init(x: 1, y: 1), .init(x: 9, y: 1), .init(x: 9, y: 9)])
            let zoneID = try await server.createTwoDCartesianZone(zone)
            try await server.setPrivacyModes(PrivacyModes(softRecordingPrivacyModeEnabled: true))
            #expect(keys.stores.withLock { $0 } == storesAfterSetUp)

            // What the store holds after the section writes is what the node holds.
            let stored = try store.load().registries
            let held = await server.currentRegistries
            #expect(stored == held)
            #expect(stored.zoneManagement.zones[zoneID]?.name == "gate" && stored.streams.privacy.softRecordingPrivacyModeEnabled)
            #expect(stored.tls == Self.registries.tls)
            try store.close()
        }
    }

    /// A store written by a version that kept keys inline: opening it with a key store moves them out.
    @Test func keysStoredInlineBeforeMoveOutAtOpen() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("cam.sqlite").path
            var store = try TransportStore(path: path)
            try store.save(registries: Self.registries, changed: .all)
            try store.close()
            #expect(try Self.fileHoldsKey(path), "the old layout keeps the key in the file")

            let keys = KeyStore()
            store = try TransportStore(path: path, privateKeys: keys)
            #expect(try store.load().registries == Self.registries)
            try store.close()
            #expect(try !Self.fileHoldsKey(path))
            #expect(keys.keys.withLock { $0.values.contains(Self.key) })
        }
    }
}
