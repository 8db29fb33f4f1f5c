import Crypto
import Domain
import Foundation
import GRDB
import TransportModel

/// What a controller provisioned through the TLS Certificate Management and TLS Client Management clusters, per
/// fabric: root certificates (by CAID) and client identities (by CCDID): the P-256 private key this process
/// generated, its CSR and, once the controller returns it signed, the certificate chain.
///
/// One SQLite file, `<state>/tls/credentials.sqlite`, in a folder only the owner may enter, the file itself
/// owner-only: it holds private keys, which never leave the process through the API. Blocking: call off the
/// cooperative pool.
final class TLSCredentialStore: TLSPrivateKeyStore, Sendable {
    struct ClientIdentity: Sendable {
        var ccdid: UInt16
        /// The private key's raw representation (32 bytes, P-256).
        var privateKey: Data
        var csr: Data
        /// DER certificates, leaf first; empty until ProvisionClientCertificate.
        var certificateChain: [Data]
    }

    private let database: DatabaseQueue

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        let file = directory.appendingPathComponent("credentials.sqlite")
        if !FileManager.default.fileExists(atPath: file.path) {
            FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        var configuration = Configuration()
        // Removed keys are zeroed in the file, not left in its free pages.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA secure_delete = ON") }
        database = try DatabaseQueue(path: file.path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE rootCertificate (
                    fabric INTEGER NOT NULL, caid INTEGER NOT NULL, certificate BLOB NOT NULL,
                    PRIMARY KEY (fabric, caid));
                CREATE TABLE clientIdentity (
                    fabric INTEGER NOT NULL, ccdid INTEGER NOT NULL, privateKey BLOB NOT NULL, csr BLOB NOT NULL,
                    certificateChain BLOB NOT NULL DEFAULT X'5B5D',
                    PRIMARY KEY (fabric, ccdid));
                """)
        }
        // The private keys of TLS endpoints (PEM-added or provisioned), which the cameras' stores refer to.
        migrator.registerMigration("v2: endpoint keys") { db in
            try db.execute(sql: "CREATE TABLE endpointKey (reference TEXT PRIMARY KEY NOT NULL, privateKey BLOB NOT NULL)")
        }
        try migrator.migrate(database)
    }

    /// The reference of a key: its SHA-256, so the same key stored by several cameras is kept once.
    static func reference(of key: Data) -> String {
        "sha256:" + SHA256.hash(data: key).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Forgets the endpoint keys no reference in `kept` names (endpoints removed since).
    func pruneEndpointKeys(keeping kept: Set<String>) throws {
        try database.write { db in
            for reference in try String.fetchAll(db, sql: "SELECT reference FROM endpointKey") where !kept.contains(reference) {
                try db.execute(sql: "DELETE FROM endpointKey WHERE reference = ?", arguments: [reference])
            }
        }
    }

    /// Stores a root certificate under the lowest free CAID (0…65534); nil when the fabric has `limit` already.
    func addRootCertificate(_ der: Data, fabric: FabricIndex, limit: Int) throws -> UInt16? {
        try database.write { db in
            let used = Set(try Int.fetchAll(db, sql: "SELECT caid FROM rootCertificate WHERE fabric = ?", arguments: [fabric]))
            guard used.count < limit, let caid = (0...65534).lowestFree(isUsed: used.contains) else { return nil }
            try db.execute(sql: "INSERT INTO rootCertificate (fabric, caid, certificate) VALUES (?, ?, ?)",
                           arguments: [fabric, caid, der])
            return UInt16(caid)
        }
    }

    /// Replaces the certificate of an existing CAID (rotation); false when the fabric has no such CAID.
    func replaceRootCertificate(caid: UInt16, with der: Data, fabric: FabricIndex) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "UPDATE rootCertificate SET certificate = ? WHERE fabric = ? AND caid = ?",
                           arguments: [der, fabric, caid])
            return db.changesCount > 0
        }
    }

    /// The fabric's root certificates, by CAID.
    func rootCertificates(fabric: FabricIndex) throws -> [(caid: UInt16, certificate: Data)] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT caid, certificate FROM rootCertificate WHERE fabric = ? ORDER BY caid",
                             arguments: [fabric]).map { (caid: UInt16(truncatingIfNeeded: $0["caid"] as Int), certificate: $0["certificate"]) }
        }
    }

    func rootCertificate(caid: UInt16, fabric: FabricIndex) throws -> Data? {
        try database.read { db in
            try Data.fetchOne(db, sql: "SELECT certificate FROM rootCertificate WHERE fabric = ? AND caid = ?",
                              arguments: [fabric, caid])
        }
    }

    /// False when the fabric has no such CAID.
    func removeRootCertificate(caid: UInt16, fabric: FabricIndex) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "DELETE FROM rootCertificate WHERE fabric = ? AND caid = ?", arguments: [fabric, caid])
            return db.changesCount > 0
        }
    }

    /// Stores a new key pair's private key and CSR under the lowest free CCDID; nil when the fabric has `limit` already.
    func addClientIdentity(privateKey: Data, csr: Data, fabric: FabricIndex, limit: Int) throws -> UInt16? {
        try database.write { db in
            let used = Set(try Int.fetchAll(db, sql: "SELECT ccdid FROM clientIdentity WHERE fabric = ?", arguments: [fabric]))
            guard used.count < limit, let ccdid = (0...65534).lowestFree(isUsed: used.contains) else { return nil }
            try db.execute(sql: "INSERT INTO clientIdentity (fabric, ccdid, privateKey, csr) VALUES (?, ?, ?, ?)",
                           arguments: [fabric, ccdid, privateKey, csr])
            return UInt16(ccdid)
        }
    }

    /// A new key pair for an existing CCDID (ClientCSR naming it: key rotation). The certificate of the old key no
    /// longer certifies this one, so the chain is cleared until ProvisionClientCertificate; endpoints provisioned
    /// before keep their own copy of the old identity. False when the fabric has no such CCDID.
    func replaceKey(ccdid: UInt16, privateKey: Data, csr: Data, fabric: FabricIndex) throws -> Bool {
        try database.write { db in
            try db.execute(sql: """
                UPDATE clientIdentity SET privateKey = ?, csr = ?, certificateChain = X'5B5D' WHERE fabric = ? AND ccdid = ?
                """, arguments: [privateKey, csr, fabric, ccdid])
            return db.changesCount > 0
        }
    }

    func clientIdentity(ccdid: UInt16, fabric: FabricIndex) throws -> ClientIdentity? {
        try database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM clientIdentity WHERE fabric = ? AND ccdid = ?",
                                             arguments: [fabric, ccdid]) else { return nil }
            return try Self.identity(row)
        }
    }

    /// The fabric's client identities, by CCDID.
    func clientIdentities(fabric: FabricIndex) throws -> [ClientIdentity] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM clientIdentity WHERE fabric = ? ORDER BY ccdid", arguments: [fabric])
                .map(Self.identity)
        }
    }

    /// False when the fabric has no such CCDID.
    func removeClientIdentity(ccdid: UInt16, fabric: FabricIndex) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "DELETE FROM clientIdentity WHERE fabric = ? AND ccdid = ?", arguments: [fabric, ccdid])
            return db.changesCount > 0
        }
    }

    private static func identity(_ row: Row) throws -> ClientIdentity {
        let chain = try JSONDecoder().decode([Data].self, from: row["certificateChain"] as Data)
        return ClientIdentity(ccdid: UInt16(truncatingIfNeeded: row["ccdid"] as Int), privateKey: row["privateKey"],
                              csr: row["csr"], certificateChain: chain)
    }

    func setCertificateChain(_ chain: [Data], ccdid: UInt16, fabric: FabricIndex) throws {
        let encoded = try JSONEncoder().encode(chain)
        try database.write { db in
            try db.execute(sql: "UPDATE clientIdentity SET certificateChain = ? WHERE fabric = ? AND ccdid = ?",
                           arguments: [encoded, fabric, ccdid])
        }
    }
}

extension TLSCredentialStore {
    func reference(storing key: Data) throws -> String {
        let reference = Self.reference(of: key)
        try database.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO endpointKey (reference, privateKey) VALUES (?, ?)", arguments: [reference, key])
        }
        return reference
    }

    func key(for reference: String) throws -> Data? {
        try database.read { db in try Data.fetchOne(db, sql: "SELECT privateKey FROM endpointKey WHERE reference = ?", arguments: [reference]) }
    }
}
