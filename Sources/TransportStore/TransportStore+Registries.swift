import Domain
import Foundation
import GRDB
import TransportModel

// Each cluster's persistence section: the tables it owns, written and read as one group.
extension TransportStore {
    /// TLS Client Management's section: endpoints and their certificate chains.
    static func write(_ tls: TLSClientEndpoints, references: [TLSEndpointKey: String], to db: Database) throws {
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
    static func write(_ zoneManagement: ZoneManagement, to db: Database) throws {
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
    static func write(_ streams: CameraAVStreams, to db: Database) throws {
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


    func loadRegistries(_ db: Database) throws -> TransportRegistries {
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
}
