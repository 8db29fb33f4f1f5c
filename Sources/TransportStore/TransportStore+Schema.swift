import Domain
import Foundation
import GRDB
import TransportModel

extension TransportStore {
    /// Append-only: a shipped migration is never edited, later schema changes are new migrations.
    static var migrator: DatabaseMigrator {
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
}
