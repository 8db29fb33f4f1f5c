import Domain
import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

extension SegmentSpool {
    /// Start-up replay check: journal rows need their file; a file without its row is adopted when its name says
    /// which object of which label it is (the row was lost with the last commits of a power failure, or the process
    /// died between an object's rename and its row, or between a delivered object's row and its file going); other
    /// files (temporary ones, names no object has, labels the journal never knew) are removed.
    func recover() throws {
        let labels = try knownLabels()
        let root = directory.appendingPathComponent("objects")
        let labelDirectories = (try? FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? []
        var strays = 0
        for labelDirectory in labelDirectories {
            strays += flattenLegacyLayout(labelDirectory, known: labels[labelDirectory.lastPathComponent] != nil)
        }
        let entries = try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM object").map(Self.entry) }
        var expected = Set<String>()
        // By label: undelivered objects a power failure left missing or cut short (with the fsync deferred, neither
        // the rename nor all of the data need have reached the disk): lost, counted and reported.
        var damaged: [String: [UploadObject]] = [:]
        for entry in entries {
            let url = fileURL(connection: entry.connection, object: entry.object)
            let values = try? url.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])
            if let values {
                // Something that is not a file where the object goes (only a fault puts one there) stays: reading it
                // fails at upload, which retries, then gives the object up — counted and reported there.
                let size = values.fileSize ?? -1
                if values.isRegularFile != true || (size == entry.bytes && SpoolFileCheck.isWhole(entry.object, at: url, length: size)) {
                    expected.insert(url.standardizedFileURL.path)
                    continue
                }
                try? FileManager.default.removeItem(at: url)
            }
            if !entry.delivered { damaged[entry.connection, default: []].append(entry.object) }
            logger.error(values == nil ? "spool journal names a missing file; dropping the entry"
                                       : "spool: an object's file did not reach the disk whole (power failure); it is dropped",
                         metadata: ["connection": "\(entry.connection)", "object": "\(entry.object)", "bytes": "\(entry.bytes)",
                                    "onDisk": "\(values?.fileSize ?? 0)", "delivered": "\(entry.delivered)"])
            try database.write { db in
                try db.execute(sql: "DELETE FROM object WHERE connection = ? AND session = ? AND track = ? AND number = ?",
                               arguments: [entry.connection, entry.object.session, entry.object.track, entry.object.number])
            }
        }
        var adopted: [(label: String, object: UploadObject, bytes: Int, created: Date)] = []
        let keys: [URLResourceKey] = [.isRegularFileKey, .isDirectoryKey, .fileSizeKey, .contentModificationDateKey]
        for labelDirectory in labelDirectories {
            let label = labels[labelDirectory.lastPathComponent]
            let files = (try? FileManager.default.contentsOfDirectory(at: labelDirectory, includingPropertiesForKeys: keys)) ?? []
            for url in files where !expected.contains(url.standardizedFileURL.path) {
                let values = try? url.resourceValues(forKeys: Set(keys))
                // A directory under an object's name is no object and holds none (only a fault puts one there).
                if values?.isDirectory == true { continue }
                if let label, values?.isRegularFile == true, let object = UploadObject(spoolFileName: url.lastPathComponent),
                   let size = values?.fileSize {
                    guard SpoolFileCheck.isWhole(object, at: url, length: size) else {
                        try? FileManager.default.removeItem(at: url)
                        damaged[label, default: []].append(object)
                        logger.error("spool: an object file without its journal row is not whole (power failure); it is dropped",
                                     metadata: ["connection": "\(label)", "object": "\(object)", "onDisk": "\(size)"])
                        continue
                    }
                    adopted.append((label, object, size, values?.contentModificationDate ?? Date()))
                } else {
                    try? FileManager.default.removeItem(at: url)
                    strays += 1
                }
            }
        }
        if !adopted.isEmpty {
            try database.write { db in
                for file in adopted {
                    try db.execute(sql: """
                        INSERT OR IGNORE INTO object (connection, session, track, number, bytes, created, attempts, delivered)
                        VALUES (?, ?, ?, ?, ?, ?, 0, 0)
                        """, arguments: [file.label, file.object.session, file.object.track, file.object.number, file.bytes,
                                         file.created.timeIntervalSince1970])
                    // No recording writes an old session after a restart: it is finished.
                    try db.execute(sql: """
                        INSERT INTO session (connection, session, finished) VALUES (?, ?, 1)
                        ON CONFLICT(connection, session) DO UPDATE SET finished = 1
                        """, arguments: [file.label, file.object.session])
                    try db.execute(sql: """
                        INSERT INTO counter (name, value) VALUES (?, ?)
                        ON CONFLICT(name) DO UPDATE SET value = excluded.value WHERE excluded.value > value
                        """, arguments: ["session:" + file.label, file.object.session])
                }
            }
            for (label, files) in Dictionary(grouping: adopted, by: \.label) {
                logger.warning("spool: objects whose journal rows were lost are queued again from their files", metadata: [
                    "connection": "\(label)", "objects": "\(files.count)",
                    "sessions": "\(Set(files.map(\.object.session)).sorted().map(String.init).joined(separator: ","))",
                ])
            }
        }
        // A recent recording the last process did not finish (it stopped or was killed mid-recording) ends here.
        try database.write { db in
            try db.execute(sql: "UPDATE recent SET finished = 1, endReason = coalesce(endReason, 'interrupted') WHERE finished = 0")
        }
        for (label, objects) in damaged {
            Counter(label: "pushav_spool_damaged_objects_total", dimensions: UploadDestination.metricDimensions(ofKey: label))
                .increment(by: objects.count)
        }
        self.damaged.withLock { $0 = damaged }
        let pending = entries.filter { !$0.delivered }.count + adopted.count
        logger.info("spool opened", metadata: [
            "directory": "\(directory.path)", "pending": "\(pending)", "strays": "\(strays)", "adopted": "\(adopted.count)",
            "damaged": "\(damaged.values.map(\.count).reduce(0, +))",
        ])
    }

    /// Spools written before the flat layout kept `session_<N>/<track>/…` directories: each object file is renamed
    /// to its flat name in the label's directory (a rename within one file system: no byte is copied or lost), then
    /// the emptied directories go. Files whose names no object has are strays, removed (and counted). Returns the
    /// strays.
    func flattenLegacyLayout(_ labelDirectory: URL, known: Bool) -> Int {
        let children = (try? FileManager.default.contentsOfDirectory(
            at: labelDirectory, includingPropertiesForKeys: [.isDirectoryKey])) ?? []
        // Only the old layout's `session_<N>` directories: anything else sitting there is not ours to move.
        let nested = children.filter {
            let name = $0.lastPathComponent
            return SessionNumber(folderName: name) != nil
                && (try? $0.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true
        }
        guard !nested.isEmpty else { return 0 }
        var strays = 0, moved = 0
        let base = labelDirectory.standardizedFileURL.path + "/"
        for subdirectory in nested {
            let walker = FileManager.default.enumerator(at: subdirectory, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = walker?.nextObject() as? URL {
                guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
                let path = url.standardizedFileURL.path
                if known, path.hasPrefix(base), let object = UploadObject(spoolPath: String(path.dropFirst(base.count))),
                   rename(url.path, labelDirectory.appendingPathComponent(object.spoolFileName).path) == 0 {
                    moved += 1
                } else {
                    try? FileManager.default.removeItem(at: url)
                    strays += 1
                }
            }
            try? FileManager.default.removeItem(at: subdirectory)
        }
        if moved > 0 {
            // The renames must outlive a power failure before the journal is checked against the new names.
            try? DurableFile.syncDirectory(labelDirectory)
            logger.notice("spool: objects moved to the flat layout", metadata: [
                "directory": "\(labelDirectory.lastPathComponent)", "objects": "\(moved)",
            ])
        }
        return strays
    }

    /// Every label the journal knows (destinations, objects, sessions, counters, recent recordings), by the name of
    /// its directory under `objects/`.
    func knownLabels() throws -> [String: String] {
        let labels: [String] = try database.read { db in
            try String.fetchAll(db, sql: """
                SELECT key FROM destination UNION SELECT connection FROM object UNION SELECT connection FROM session
                UNION SELECT connection FROM recent UNION SELECT connection FROM given_up
                UNION SELECT substr(name, 9) FROM counter WHERE name LIKE 'session:%'
                """)
        }
        return Dictionary(labels.map { (Self.safeName($0), $0) }, uniquingKeysWith: { first, _ in first })
    }
}

extension SegmentSpool {
    /// Undelivered objects of `connection` that this open found missing or cut short and dropped: lost.
    public func damagedAtOpen(connection: String) -> [UploadObject] {
        damaged.withLock { $0[connection] ?? [] }
    }
}
