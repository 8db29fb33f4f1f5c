import Domain
import Foundation
import GRDB
import TransportModel

/// Why the transport store could not be used. Thrown at startup rather than starting empty, so a damaged or
/// unreachable database never silently loses the controllers' configuration.
public enum TransportStoreError: Error, Sendable, CustomStringConvertible {
    /// The file or its directory cannot be opened or written (missing directory, permissions, read-only media).
    case cannotOpen(path: String, reason: String)
    /// The file is not a SQLite database or fails its integrity check.
    case corrupt(path: String, reason: String)
    /// The database was written by a newer version of this program (it has migrations this one does not know).
    case newerSchema(path: String)
    /// A stored row cannot be decoded into the model.
    case undecodableRow(table: String, key: String, reason: String)
    /// A write failed after a successful start.
    case writeFailed(reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "transport store \(path) cannot be opened for writing: \(reason)"
        case .corrupt(let path, let reason): "transport store \(path) is corrupt: \(reason)"
        case .newerSchema(let path): "transport store \(path) was written by a newer version; refusing to use it"
        case .undecodableRow(let table, let key, let reason): "transport store row \(table)[\(key)] is unreadable: \(reason)"
        case .writeFailed(let reason): "transport store write failed: \(reason)"
        }
    }
}

/// Connections, registries, session counters and the event log in one SQLite file (GRDB, WAL mode, held exclusively).
///
/// Transport options are stored as JSON with sorted keys, so what is read back after a restart encodes to the same
/// bytes (TC-PAVST-2.14). Expiry deadlines are absolute wall-clock times, so a TTL keeps running across restarts.
/// The event log (``TransportEventLog``) keeps what `retention` allows, pruned on every append.
public final class TransportStore: TransportPersistence, TransportEventLog, Sendable {
    public let path: String
    public let retention: EventLogRetention
    /// One connection (exclusive locking allows no second): reads wait for a commit, which is a few milliseconds.
    let pool: DatabaseQueue
    /// Where TLS endpoints' private keys live (nil: in this file).
    let privateKeys: (any TLSPrivateKeyStore)?

    /// Opens (creating if needed) and migrates the store at `path`.
    /// - Parameter privateKeys: where TLS endpoints' private keys go; this store keeps only a reference to each (and
    ///   moves any key an older version stored here into it at once). nil keeps keys in this file (tests, tools).
    /// `PRAGMA synchronous` of the connection that commits (2 is FULL).
    func commitSynchronousLevel() throws -> Int {
        try pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }

    public init(path: String, retention: EventLogRetention = EventLogRetention(),
                privateKeys: (any TLSPrivateKeyStore)? = nil) throws(TransportStoreError) {
        self.path = path
        self.retention = retention
        self.privateKeys = privateKeys
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(5)
        // Deleted and overwritten content is zeroed, not left in free pages: a key moved out of this file is gone.
        // 1 KiB pages: each Begin and End commits a few small rows, and a commit writes whole pages (to the WAL, then
        // again at the checkpoint): a quarter of 4 KiB's writes (flash wear). Takes effect for a new store only.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON; PRAGMA page_size = 512")
            // Held exclusively, before the first WAL access: SQLite keeps the WAL index in the process's memory instead
            // of a `-shm` file whose page every commit dirtied again (2.5 % of the bytes recorded on a Command
            // transport, `Scripts/bench-serve --trace`). One `pushav serve` owns a camera's store; a second process
            // on the same state directory is refused as busy instead of sharing it.
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            try db.execute(sql: "PRAGMA journal_mode = WAL")
        }
        do {
            pool = try DatabaseQueue(path: path, configuration: configuration)
            // Every commit waits for its fsync: a session number or event number this store handed out must never be
            // handed out again, power failure included (the ingest would overwrite `session_N`). Set explicitly, on the
            // connection that commits (GRDB's pool used to set NORMAL after `prepareDatabase`; `CommitDurabilityTests`).
            // A few commits per recording: about 4 KiB written each (`Scripts/bench-serve`).
            try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        } catch {
            throw Self.classify(error, path: path)
        }
        do {
            let check = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            guard check == ["ok"] else { throw TransportStoreError.corrupt(path: path, reason: check.joined(separator: "; ")) }
            let migrator = Self.migrator
            if try pool.read(migrator.hasBeenSuperseded) { throw TransportStoreError.newerSchema(path: path) }
            try migrator.migrate(pool)
            if let privateKeys { try Self.moveInlineKeys(to: privateKeys, in: pool) }
        } catch let error as TransportStoreError {
            throw error
        } catch {
            throw Self.classify(error, path: path)
        }
    }

    /// Keys an older version stored in this file move to `privateKeys`; the rows keep a reference, the file keeps
    /// nothing of them (secure_delete zeroes the old cells, the checkpoint empties the WAL that still held them).
    static func moveInlineKeys(to privateKeys: any TLSPrivateKeyStore, in pool: DatabaseQueue) throws {
        let inline = try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT fabricIndex, endpointID, privateKey FROM tlsEndpoint WHERE privateKeyRef IS NULL AND length(privateKey) > 0")
        }
        guard !inline.isEmpty else { return }
        try pool.write { db in
            for row in inline {
                let key: Data = row["privateKey"]
                try db.execute(sql: "UPDATE tlsEndpoint SET privateKey = X'', privateKeyRef = ? WHERE fabricIndex = ? AND endpointID = ?",
                               arguments: [try privateKeys.reference(storing: key), row["fabricIndex"] as Int, row["endpointID"] as Int])
            }
        }
        try pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }

    /// Closes the database; later calls fail.
    public func close() throws {
        try pool.close()
    }

    /// SQLite's journal mode (`wal` once opened).
    public func journalMode() throws -> String {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    // MARK: - TransportPersistence

    public func load() throws -> PersistentTransportState {
        try pool.read { db in
            var state = PersistentTransportState()
            state.connections = try Self.loadConnections(db)
            state.registries = try self.loadRegistries(db)
            state.lastConnectionID = try Int.fetchOne(db, sql: "SELECT lastConnectionID FROM allocationState WHERE id = 1")
                .map { UInt16(truncatingIfNeeded: $0) }
            for row in try Row.fetchAll(db, sql: "SELECT connectionID, lastSessionNumber FROM sessionCounter") {
                let connectionID: Int = row["connectionID"]
                let lastSessionNumber: Int64 = row["lastSessionNumber"]
                state.sessionNumbers[UInt16(truncatingIfNeeded: connectionID)] = SessionNumber(UInt64(bitPattern: lastSessionNumber))
            }
            for row in try Row.fetchAll(db, sql: "SELECT connectionID, sessionNumber, containerType, fabricIndex FROM openRecording") {
                let connectionID: Int = row["connectionID"]
                let sessionNumber: Int64 = row["sessionNumber"]
                let containerType: Int = row["containerType"]
                let fabricIndex: Int = row["fabricIndex"]
                state.openRecordings[UInt16(truncatingIfNeeded: connectionID)] = OpenRecording(
                    sessionNumber: SessionNumber(UInt64(bitPattern: sessionNumber)),
                    containerType: ContainerFormatEnum(rawValue: UInt8(truncatingIfNeeded: containerType)),
                    fabricIndex: FabricIndex(truncatingIfNeeded: fabricIndex))
            }
            return state
        }
    }

    public func save(connections: [StoredConnection], lastConnectionID: UInt16?) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let rows = try connections.map { ($0, try encoder.encode($0.transportOptions)) }
        try pool.write { db in
            for (connection, options) in rows {
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO connection
                            (connectionID, fabricIndex, transportStatus, transportOptions, expiryDeadline)
                        VALUES (?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        Int(connection.connectionID), Int(connection.fabricIndex),
                        Int(connection.transportStatus.rawValue), options,
                        connection.expiryDeadline?.timeIntervalSince1970,
                    ])
            }
            try db.execute(
                sql: "INSERT OR REPLACE INTO allocationState (id, lastConnectionID) VALUES (1, ?)",
                arguments: [lastConnectionID.map { Int($0) }])
        }
    }

    public func deleteConnections(_ connectionIDs: [UInt16]) throws {
        try pool.write { db in
            for connectionID in connectionIDs {
                try db.execute(sql: "DELETE FROM connection WHERE connectionID = ?", arguments: [Int(connectionID)])
            }
        }
    }

    public func save(openRecording recording: OpenRecording?, connectionID: UInt16) throws {
        guard let recording else {
            // An End's record may be lost with a power failure: a restart then sends that End once more (the
            // recording's Begin was durable). Not worth an fsync.
            try writeWithoutSync { db in
                try db.execute(sql: "DELETE FROM openRecording WHERE connectionID = ?", arguments: [Int(connectionID)])
            }
            return
        }
        try pool.write { db in try Self.insert(openRecording: recording, connectionID: connectionID, db) }
    }

    public func saveBegin(sessionNumber: SessionNumber, openRecording recording: OpenRecording, connectionID: UInt16,
                          event: LoggedTransportEvent?) throws {
        let encoded = try event.map { ($0, try Self.encode($0.event)) }
        try pool.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO sessionCounter (connectionID, lastSessionNumber) VALUES (?, ?)",
                arguments: [Int(connectionID), Int64(bitPattern: sessionNumber.rawValue)])
            try Self.insert(openRecording: recording, connectionID: connectionID, db)
            if let (event, (type, json)) = encoded {
                try Self.insert(event, type: type, json: json, retention: retention, db)
            }
        }
    }

    static func insert(openRecording recording: OpenRecording, connectionID: UInt16, _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO openRecording (connectionID, sessionNumber, containerType, fabricIndex) VALUES (?, ?, ?, ?)",
            arguments: [Int(connectionID), Int64(bitPattern: recording.sessionNumber.rawValue),
                        Int(recording.containerType.rawValue), Int(recording.fabricIndex)])
    }

    /// One transaction committed without waiting for its fsync (`synchronous = NORMAL` for it alone): it survives
    /// kill -9 (it is in the WAL) and reaches the disk with the next synced commit or checkpoint; a power failure
    /// may lose it. For records whose loss only repeats something (an End resent, an event not replayed) — a
    /// number handed out is never written this way. Why: with FULL every commit writes and syncs the WAL's last,
    /// partly filled page again; on flash that was most of what the store wrote per recording.
    func writeWithoutSync<T>(_ updates: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            defer { try? db.execute(sql: "PRAGMA synchronous = FULL") }
            var result: T?
            try db.inTransaction {
                result = try updates(db)
                return .commit
            }
            return result!
        }
    }

    /// Rewrites the sections of `registries` that `changed` names, in one transaction: each cluster owns its tables,
    /// so a zone edit never touches the TLS keys, and a start-up configuration that changes several stays atomic.
    public func save(registries: TransportRegistries, changed: RegistrySections) throws {
        // The keys go to the key store first: a row is never written with a reference that finds nothing.
        var references: [TLSEndpointKey: String] = [:]
        if changed.contains(.tlsClient), let privateKeys {
            for endpoint in registries.tls.endpoints.values {
                references[endpoint.key] = try privateKeys.reference(storing: endpoint.privateKey)
            }
        }
        try pool.write { db in
            if changed.contains(.tlsClient) { try Self.write(registries.tls, references: references, to: db) }
            if changed.contains(.zoneManagement) { try Self.write(registries.zoneManagement, to: db) }
            if changed.contains(.streams) { try Self.write(registries.streams, to: db) }
        }
    }

    // MARK: - Reading

    static func loadConnections(_ db: Database) throws -> [StoredConnection] {
        let decoder = JSONDecoder()
        return try Row.fetchAll(db, sql: "SELECT * FROM connection ORDER BY connectionID").map { row in
            let connectionID: Int = row["connectionID"]
            let fabricIndex: Int = row["fabricIndex"]
            let status: Int = row["transportStatus"]
            let optionsJSON: Data = row["transportOptions"]
            let deadline: Double? = row["expiryDeadline"]
            let options: TransportOptionsStruct
            do {
                options = try decoder.decode(TransportOptionsStruct.self, from: optionsJSON)
            } catch {
                throw TransportStoreError.undecodableRow(table: "connection", key: "\(connectionID)", reason: "\(error)")
            }
            return StoredConnection(
                connectionID: UInt16(truncatingIfNeeded: connectionID), fabricIndex: FabricIndex(truncatingIfNeeded: fabricIndex),
                transportStatus: TransportStatusEnum(rawValue: UInt8(truncatingIfNeeded: status)), transportOptions: options,
                expiryDeadline: deadline.map(Date.init(timeIntervalSince1970:)))
        }
    }

    /// Sorts an open/migrate failure into "corrupt" and "cannot open", the two causes an operator acts on differently.
    static func classify(_ error: any Error, path: String) -> TransportStoreError {
        if let error = error as? TransportStoreError { return error }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_NOTADB, .SQLITE_CORRUPT:
                return .corrupt(path: path, reason: error.message ?? "\(error)")
            default:
                return .cannotOpen(path: path, reason: "\(error)")
            }
        }
        return .cannotOpen(path: path, reason: "\(error)")
    }
}
