import Domain
import Foundation
import GRDB
import TransportModel

// TransportEventLog: the endpoint's events and the reserved numbering, in the same file as the state they describe.
extension TransportStore {
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
        // Without its own fsync: a power failure may lose the newest events (the Matter SDK keeps its event buffers in
        // RAM and loses them all at a reboot); kill -9 loses none. Their numbers stay reserved
        // (``reserveEventNumbers(below:)`` syncs), so no number is ever handed out twice.
        try writeWithoutSync { db in try Self.insert(entry, type: type, json: json, retention: retention, db) }
    }

    /// One logged event, and the log pruned to `retention`, inside the caller's transaction.
    static func insert(_ entry: LoggedTransportEvent, type: String, json: Data, retention: EventLogRetention,
                       _ db: Database) throws {
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

    static func encode(_ event: CameraEvent) throws -> (String, Data) {
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
}
