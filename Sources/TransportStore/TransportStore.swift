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

/// Connections, registries, session counters and the event log in one SQLite file (GRDB, WAL mode).
///
/// Transport options are stored as JSON with sorted keys, so what is read back after a restart encodes to the same
/// bytes (TC-PAVST-2.14). Expiry deadlines are absolute wall-clock times, so a TTL keeps running across restarts.
/// The event log (``TransportEventLog``) keeps what `retention` allows, pruned on every append.
public final class TransportStore: TransportPersistence, TransportEventLog, Sendable {
    public let path: String
    public let retention: EventLogRetention
    private let pool: DatabasePool
    /// Where TLS endpoints' private keys live (nil: in this file).
    private let privateKeys: (any TLSPrivateKeyStore)?

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
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = ON; PRAGMA page_size = 1024") }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // Every commit waits for its fsync: a session number or event number this store handed out must never be
            // handed out again, power failure included (the ingest would overwrite `session_N`). GRDB's pool sets
            // NORMAL when it opens the WAL, after `prepareDatabase`, so FULL is set here, on the writer connection.
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
    private static func moveInlineKeys(to privateKeys: any TLSPrivateKeyStore, in pool: DatabasePool) throws {
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
                state.sessionNumbers[UInt16(truncatingIfNeeded: connectionID)] = UInt64(bitPattern: lastSessionNumber)
            }
            for row in try Row.fetchAll(db, sql: "SELECT connectionID, sessionNumber, containerType, fabricIndex FROM openRecording") {
                let connectionID: Int = row["connectionID"]
                let sessionNumber: Int64 = row["sessionNumber"]
                let containerType: Int = row["containerType"]
                let fabricIndex: Int = row["fabricIndex"]
                state.openRecordings[UInt16(truncatingIfNeeded: connectionID)] = OpenRecording(
                    sessionNumber: UInt64(bitPattern: sessionNumber),
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

    public func save(sessionNumber: UInt64, connectionID: UInt16) throws {
        try pool.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO sessionCounter (connectionID, lastSessionNumber) VALUES (?, ?)",
                arguments: [Int(connectionID), Int64(bitPattern: sessionNumber)])
        }
    }

    public func save(openRecording recording: OpenRecording?, connectionID: UInt16) throws {
        try pool.write { db in
            if let recording {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO openRecording (connectionID, sessionNumber, containerType, fabricIndex) VALUES (?, ?, ?, ?)",
                    arguments: [Int(connectionID), Int64(bitPattern: recording.sessionNumber),
                                Int(recording.containerType.rawValue), Int(recording.fabricIndex)])
            } else {
                try db.execute(sql: "DELETE FROM openRecording WHERE connectionID = ?", arguments: [Int(connectionID)])
            }
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

    /// TLS Client Management's section: endpoints and their certificate chains.
    private static func write(_ tls: TLSClientEndpoints, references: [TLSEndpointKey: String], to db: Database) throws {
        try db.execute(sql: "DELETE FROM tlsClientCertificate")
        try db.execute(sql: "DELETE FROM tlsEndpoint")
        for endpoint in tls.endpoints.values {
            try db.execute(
                sql: """
                    INSERT INTO tlsEndpoint (fabricIndex, endpointID, hostname, port, caCertificate, privateKey, privateKeyRef)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    Int(endpoint.fabricIndex), Int(endpoint.endpointID), endpoint.hostname, Int(endpoint.port),
                    endpoint.caCertificate, references[endpoint.key] == nil ? endpoint.privateKey : Data(),
                    references[endpoint.key],
                ])
            for (position, certificate) in endpoint.clientCertificateChain.enumerated() {
                try db.execute(
                    sql: """
                        INSERT INTO tlsClientCertificate (fabricIndex, endpointID, position, certificate)
                        VALUES (?, ?, ?, ?)
                        """,
                    arguments: [Int(endpoint.fabricIndex), Int(endpoint.endpointID), position, certificate])
            }
        }
    }

    /// Zone Management's section: zones, triggers and the Sensitivity attribute.
    private static func write(_ zoneManagement: ZoneManagement, to db: Database) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for table in ["zone", "zoneTrigger", "zoneSettings"] {
            try db.execute(sql: "DELETE FROM \(table)")
        }
        for zone in zoneManagement.zones.values {
            try db.execute(
                sql: "INSERT INTO zone (zoneID, name, vertices, sensitivity, source, color) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [Int(zone.id), zone.name, try encoder.encode(zone.polygon), zone.sensitivity,
                            Int(zone.source.rawValue), zone.color])
        }
        for trigger in zoneManagement.triggers.values {
            try db.execute(
                sql: """
                    INSERT INTO zoneTrigger (zoneID, initialDuration, augmentationDuration, maxDuration, blindDuration, sensitivity)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [Int(trigger.zoneID), Int64(trigger.initialDuration), Int64(trigger.augmentationDuration),
                            Int64(trigger.maxDuration), Int64(trigger.blindDuration), trigger.sensitivity.map { Int($0) }])
        }
        try db.execute(sql: "INSERT INTO zoneSettings (id, sensitivity) VALUES (1, ?)", arguments: [Int(zoneManagement.sensitivity)])
    }

    /// Camera AV Stream Management's section: allocated streams and the privacy switches.
    private static func write(_ streams: CameraAVStreams, to db: Database) throws {
        for table in ["videoStream", "audioStream", "privacyModes"] {
            try db.execute(sql: "DELETE FROM \(table)")
        }
        for stream in streams.video.values {
            try db.execute(
                sql: """
                    INSERT INTO videoStream (videoStreamID, codec, keyFrameInterval, streamUsage, maxBitRate)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    Int(stream.videoStreamID), Int(stream.codec.rawValue), Int(stream.keyFrameInterval),
                    Int(stream.streamUsage.rawValue), Int(stream.maxBitRate),
                ])
        }
        for stream in streams.audio.values {
            try db.execute(
                sql: "INSERT INTO audioStream (audioStreamID, codec, streamUsage, bitRate) VALUES (?, ?, ?, ?)",
                arguments: [
                    Int(stream.audioStreamID), Int(stream.codec.rawValue), Int(stream.streamUsage.rawValue),
                    Int(stream.bitRate),
                ])
        }
        let privacy = streams.privacy
        try db.execute(
            sql: """
                INSERT INTO privacyModes
                    (id, hardPrivacyModeOn, softRecordingPrivacyModeEnabled, softLivestreamPrivacyModeEnabled)
                VALUES (1, ?, ?, ?)
                """,
            arguments: [
                privacy.hardPrivacyModeOn, privacy.softRecordingPrivacyModeEnabled,
                privacy.softLivestreamPrivacyModeEnabled,
            ])
    }

    // MARK: - TransportEventLog

    /// The persisted reservation, and never less than one above the newest logged number (a store whose
    /// reservation row was lost still never reuses a number it logged).
    public func loadEventNumberReservation() throws -> UInt64 {
        try pool.read { db in
            let reserved = try Int64.fetchOne(db, sql: "SELECT reservedBelow FROM eventNumbering WHERE id = 1") ?? 1
            let newest = try Int64.fetchOne(db, sql: "SELECT MAX(number) FROM eventLog") ?? 0
            return UInt64(max(1, reserved, newest + 1))
        }
    }

    public func reserveEventNumbers(below limit: UInt64) throws {
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO eventNumbering (id, reservedBelow) VALUES (1, ?)
                    ON CONFLICT(id) DO UPDATE SET reservedBelow = MAX(reservedBelow, excluded.reservedBelow)
                    """,
                arguments: [Int64(clamping: limit)])
        }
    }

    public func append(_ entry: LoggedTransportEvent) throws {
        let (type, json) = try Self.encode(entry.event)
        let retention = self.retention
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO eventLog (number, time, fabricIndex, type, event) VALUES (?, ?, ?, ?, ?)",
                arguments: [Int64(clamping: entry.number), entry.time.timeIntervalSince1970, Int(entry.fabricIndex), type, json])
            try db.execute(
                sql: "DELETE FROM eventLog WHERE time < ?",
                arguments: [entry.time.timeIntervalSince1970 - retention.maxAge])
            // The primary key orders by number: the newest maxEntries stay.
            try db.execute(
                sql: "DELETE FROM eventLog WHERE number < (SELECT number FROM eventLog ORDER BY number DESC LIMIT 1 OFFSET ?)",
                arguments: [retention.maxEntries - 1])
        }
    }

    public func events(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent] {
        let decoder = JSONDecoder()
        return try pool.read { db in
            var sql = "SELECT * FROM eventLog WHERE number > ?"
            var arguments: StatementArguments = [Int64(clamping: number)]
            if let fabric {
                // Zone events belong to no fabric: every fabric reads them.
                sql += " AND fabricIndex IN (?, ?)"
                arguments += [Int(fabric), Int(CameraEvent.noFabric)]
            }
            sql += " ORDER BY number LIMIT ?"
            arguments += [max(0, limit)]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let number: Int64 = row["number"]
                let time: Double = row["time"]
                let fabricIndex: Int = row["fabricIndex"]
                let type: String = row["type"]
                let json: Data = row["event"]
                let event: CameraEvent
                do {
                    switch type {
                    case "PushTransportBegin": event = .pushTransportBegin(try decoder.decode(PushTransportBegin.self, from: json))
                    case "PushTransportEnd": event = .pushTransportEnd(try decoder.decode(PushTransportEnd.self, from: json))
                    case "ZoneTriggered": event = .zoneTriggered(try decoder.decode(ZoneTriggeredEvent.self, from: json))
                    case "ZoneStopped": event = .zoneStopped(try decoder.decode(ZoneStoppedEvent.self, from: json))
                    default: throw TransportStoreError.undecodableRow(table: "eventLog", key: "\(number)", reason: "unknown type \(type)")
                    }
                } catch let error as TransportStoreError {
                    throw error
                } catch {
                    throw TransportStoreError.undecodableRow(table: "eventLog", key: "\(number)", reason: "\(error)")
                }
                return LoggedTransportEvent(
                    number: UInt64(number), time: Date(timeIntervalSince1970: time),
                    fabricIndex: FabricIndex(truncatingIfNeeded: fabricIndex), event: event)
            }
        }
    }

    private static func encode(_ event: CameraEvent) throws -> (String, Data) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json: Data = switch event {
        case .pushTransportBegin(let begin): try encoder.encode(begin)
        case .pushTransportEnd(let end): try encoder.encode(end)
        case .zoneTriggered(let triggered): try encoder.encode(triggered)
        case .zoneStopped(let stopped): try encoder.encode(stopped)
        }
        return (event.name, json)
    }

    // MARK: - Reading

    private static func loadConnections(_ db: Database) throws -> [StoredConnection] {
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

    private func loadRegistries(_ db: Database) throws -> TransportRegistries {
        let decoder = JSONDecoder()
        var chains: [TLSEndpointKey: [Data]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT * FROM tlsClientCertificate ORDER BY fabricIndex, endpointID, position") {
            let fabricIndex: Int = row["fabricIndex"]
            let endpointID: Int = row["endpointID"]
            let key = TLSEndpointKey(fabricIndex: FabricIndex(truncatingIfNeeded: fabricIndex), endpointID: UInt16(truncatingIfNeeded: endpointID))
            chains[key, default: []].append(row["certificate"])
        }
        let endpoints = try Row.fetchAll(db, sql: "SELECT * FROM tlsEndpoint").map { row in
            let fabricIndex: Int = row["fabricIndex"]
            let endpointID: Int = row["endpointID"]
            let port: Int = row["port"]
            let key = TLSEndpointKey(fabricIndex: FabricIndex(truncatingIfNeeded: fabricIndex), endpointID: UInt16(truncatingIfNeeded: endpointID))
            var privateKey: Data = row["privateKey"]
            if let reference: String = row["privateKeyRef"] {
                guard let stored = try privateKeys?.key(for: reference) else {
                    throw TransportStoreError.undecodableRow(
                        table: "tlsEndpoint", key: "\(fabricIndex)/\(endpointID)",
                        reason: "its private key (\(reference)) is not in the key store")
                }
                privateKey = stored
            }
            return TLSEndpoint(
                fabricIndex: key.fabricIndex, endpointID: key.endpointID, hostname: row["hostname"],
                port: UInt16(truncatingIfNeeded: port), caCertificate: row["caCertificate"],
                clientCertificateChain: chains[key] ?? [], privateKey: privateKey)
        }
        let zones = try Row.fetchAll(db, sql: "SELECT * FROM zone").map { row in
            let zoneID: Int = row["zoneID"]
            let verticesJSON: Data = row["vertices"]
            do {
                let source: Int = row["source"]
                return MotionZone(
                    id: UInt16(truncatingIfNeeded: zoneID), name: row["name"],
                    polygon: try decoder.decode([ZonePoint].self, from: verticesJSON), sensitivity: row["sensitivity"],
                    source: MotionZone.ZoneSource(rawValue: UInt8(truncatingIfNeeded: source)) ?? .manufacturer,
                    color: row["color"])
            } catch {
                throw TransportStoreError.undecodableRow(table: "zone", key: "\(zoneID)", reason: "\(error)")
            }
        }
        let videoStreams = try Row.fetchAll(db, sql: "SELECT * FROM videoStream").map { row in
            let streamID: Int = row["videoStreamID"]
            let codec: Int = row["codec"]
            let keyFrameInterval: Int = row["keyFrameInterval"]
            let usage: Int = row["streamUsage"]
            let bitRate: Int64 = row["maxBitRate"]
            return AllocatedVideoStream(
                videoStreamID: UInt16(truncatingIfNeeded: streamID), codec: VideoCodecEnum(rawValue: UInt8(truncatingIfNeeded: codec)),
                keyFrameInterval: UInt16(truncatingIfNeeded: keyFrameInterval),
                streamUsage: StreamUsageEnum(rawValue: UInt8(truncatingIfNeeded: usage)), maxBitRate: UInt32(truncatingIfNeeded: bitRate))
        }
        let audioStreams = try Row.fetchAll(db, sql: "SELECT * FROM audioStream").map { row in
            let streamID: Int = row["audioStreamID"]
            let codec: Int = row["codec"]
            let usage: Int = row["streamUsage"]
            let bitRate: Int64 = row["bitRate"]
            return AllocatedAudioStream(
                audioStreamID: UInt16(truncatingIfNeeded: streamID), codec: AudioCodecEnum(rawValue: UInt8(truncatingIfNeeded: codec)),
                streamUsage: StreamUsageEnum(rawValue: UInt8(truncatingIfNeeded: usage)), bitRate: UInt32(truncatingIfNeeded: bitRate))
        }
        var privacy = PrivacyModes()
        if let row = try Row.fetchOne(db, sql: "SELECT * FROM privacyModes WHERE id = 1") {
            privacy = PrivacyModes(
                hardPrivacyModeOn: row["hardPrivacyModeOn"], softRecordingPrivacyModeEnabled: row["softRecordingPrivacyModeEnabled"],
                softLivestreamPrivacyModeEnabled: row["softLivestreamPrivacyModeEnabled"])
        }
        let triggers = try Row.fetchAll(db, sql: "SELECT * FROM zoneTrigger").map { row in
            let zoneID: Int = row["zoneID"]
            let initial: Int64 = row["initialDuration"]
            let augmentation: Int64 = row["augmentationDuration"]
            let maximum: Int64 = row["maxDuration"]
            let blind: Int64 = row["blindDuration"]
            let sensitivity: Int? = row["sensitivity"]
            return ZoneTriggerControlStruct(
                zoneID: UInt16(truncatingIfNeeded: zoneID), initialDuration: UInt32(truncatingIfNeeded: initial),
                augmentationDuration: UInt32(truncatingIfNeeded: augmentation), maxDuration: UInt32(truncatingIfNeeded: maximum),
                blindDuration: UInt32(truncatingIfNeeded: blind), sensitivity: sensitivity.map { UInt8(truncatingIfNeeded: $0) })
        }
        let sensitivity = try Int.fetchOne(db, sql: "SELECT sensitivity FROM zoneSettings WHERE id = 1")
        return TransportRegistries(
            tlsEndpoints: endpoints, zones: zones, videoStreams: videoStreams, audioStreams: audioStreams, privacyModes: privacy,
            zoneTriggers: triggers,
            zoneSensitivity: sensitivity.map { UInt8(truncatingIfNeeded: $0) } ?? ZoneManagement.defaultSensitivity)
    }

    // MARK: - Schema

    /// Append-only: a shipped migration is never edited, later schema changes are new migrations.
    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: connections, registries, session counters") { db in
            try db.create(table: "connection") { t in
                t.primaryKey("connectionID", .integer).check { $0 >= 0 && $0 <= 65534 }
                t.column("fabricIndex", .integer).notNull()
                t.column("transportStatus", .integer).notNull()
                // JSON of TransportOptionsStruct, sorted keys.
                t.column("transportOptions", .blob).notNull()
                // Seconds since 1970; NULL = never expires.
                t.column("expiryDeadline", .double)
            }
            // Kept when a connection is deallocated, so a reused ID never repeats a session number.
            try db.create(table: "sessionCounter") { t in
                t.primaryKey("connectionID", .integer)
                t.column("lastSessionNumber", .integer).notNull()
            }
            try db.create(table: "allocationState") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("lastConnectionID", .integer)
            }
            try db.create(table: "tlsEndpoint") { t in
                t.column("fabricIndex", .integer).notNull()
                t.column("endpointID", .integer).notNull()
                t.column("hostname", .text).notNull()
                t.column("port", .integer).notNull()
                t.column("caCertificate", .blob).notNull()
                t.column("privateKey", .blob).notNull()
                t.primaryKey(["fabricIndex", "endpointID"])
            }
            try db.create(table: "tlsClientCertificate") { t in
                t.column("fabricIndex", .integer).notNull()
                t.column("endpointID", .integer).notNull()
                t.column("position", .integer).notNull()
                t.column("certificate", .blob).notNull()
                t.primaryKey(["fabricIndex", "endpointID", "position"])
                t.foreignKey(["fabricIndex", "endpointID"], references: "tlsEndpoint", onDelete: .cascade)
            }
            try db.create(table: "zone") { t in
                t.primaryKey("zoneID", .integer)
                t.column("name", .text).notNull()
                t.column("vertices", .blob).notNull()
            }
            try db.create(table: "videoStream") { t in
                t.primaryKey("videoStreamID", .integer)
                t.column("codec", .integer).notNull()
                t.column("keyFrameInterval", .integer).notNull()
                t.column("streamUsage", .integer).notNull()
                t.column("maxBitRate", .integer).notNull()
            }
            try db.create(table: "audioStream") { t in
                t.primaryKey("audioStreamID", .integer)
                t.column("codec", .integer).notNull()
                t.column("streamUsage", .integer).notNull()
                t.column("bitRate", .integer).notNull()
            }
            try db.create(table: "privacyModes") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("hardPrivacyModeOn", .boolean).notNull()
                t.column("softRecordingPrivacyModeEnabled", .boolean).notNull()
                t.column("softLivestreamPrivacyModeEnabled", .boolean).notNull()
            }
        }
        // The zone is the detector's MotionZone, whose own sensitivity (PERZONESENS) is kept too.
        migrator.registerMigration("v2: zone sensitivity") { db in
            try db.alter(table: "zone") { t in t.add(column: "sensitivity", .integer) }
        }
        // The cluster's event log and its event-number reservation (see TransportEventLog).
        migrator.registerMigration("v3: event log") { db in
            try db.create(table: "eventLog") { t in
                t.primaryKey("number", .integer)
                // Seconds since 1970.
                t.column("time", .double).notNull().indexed()
                t.column("fabricIndex", .integer).notNull()
                // PushTransportBegin or PushTransportEnd.
                t.column("type", .text).notNull()
                // JSON of the event's fields, sorted keys.
                t.column("event", .blob).notNull()
            }
            try db.create(table: "eventNumbering") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                // Every event number handed out is below this.
                t.column("reservedBelow", .integer).notNull()
            }
        }
        // Recordings between their Begin and End, so a restart after a crash sends the End they are owed.
        migrator.registerMigration("v4: open recordings") { db in
            try db.create(table: "openRecording") { t in
                t.primaryKey("connectionID", .integer)
                t.column("sessionNumber", .integer).notNull()
                t.column("containerType", .integer).notNull()
                t.column("fabricIndex", .integer).notNull()
            }
        }
        // Zone Management over the API: who made each zone (serve.yaml = manufacturer, a controller = user) and its
        // colour. Zones stored before were all serve.yaml's.
        migrator.registerMigration("v5: zone source and color") { db in
            try db.alter(table: "zone") { t in
                t.add(column: "source", .integer).notNull().defaults(to: 0)
                t.add(column: "color", .text)
            }
        }
        // Zone Management's Triggers and Sensitivity attributes.
        migrator.registerMigration("v6: zone triggers and sensitivity") { db in
            try db.create(table: "zoneTrigger") { t in
                t.primaryKey("zoneID", .integer)
                t.column("initialDuration", .integer).notNull()
                t.column("augmentationDuration", .integer).notNull()
                t.column("maxDuration", .integer).notNull()
                t.column("blindDuration", .integer).notNull()
                // Only under PERZONESENS.
                t.column("sensitivity", .integer)
            }
            try db.create(table: "zoneSettings") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("sensitivity", .integer).notNull()
            }
        }
        // TLS endpoints refer to their private key in the process's key store instead of holding it.
        migrator.registerMigration("v7: private key references") { db in
            try db.alter(table: "tlsEndpoint") { t in t.add(column: "privateKeyRef", .text) }
        }
        return migrator
    }

    /// Sorts an open/migrate failure into "corrupt" and "cannot open", the two causes an operator acts on differently.
    private static func classify(_ error: any Error, path: String) -> TransportStoreError {
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
