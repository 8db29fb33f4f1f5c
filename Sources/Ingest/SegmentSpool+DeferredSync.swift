import Foundation
import Logging
import Metrics
import Synchronization

/// An object written to the spool without its fsync yet: see ``SegmentSpool/syncDelay``.
struct UnsyncedObject: Sendable, Equatable {
    var connection: String
    var object: UploadObject
    var stored: Date
}

extension SegmentSpool {
    // MARK: - Deferred fsync

    /// Fsyncs every object stored at least ``syncDelay`` ago that is still waiting for delivery, then the directories
    /// that name them. A delivered object is never synced: it reached the ingest, and if it was deleted before the
    /// kernel wrote it its pages are never written at all. Runs on the spool's own timer (and from tests with their
    /// `now`); returns how many objects it synced. A failed fsync is logged, counted
    /// (`pushav_spool_sync_failures_total`) and tried again on the next pass.
    @discardableResult
    public func syncOverdue(now: Date = Date()) -> Int {
        let due: [UnsyncedObject] = unsynced.withLock { list in
            let due = list.filter { now.timeIntervalSince($0.stored) >= syncDelay }
            list.removeAll { now.timeIntervalSince($0.stored) >= syncDelay }
            return due
        }
        return sync(due)
    }

    /// Fsyncs every object not synced yet, whatever its age: at shutdown, and before the process ends.
    @discardableResult
    public func syncPending() -> Int {
        sync(unsynced.withLock { list in
            defer { list.removeAll() }
            return list
        })
    }

    /// Objects stored and not yet synced (for tests and the shutdown log).
    var unsyncedObjects: [UnsyncedObject] { unsynced.withLock { $0 } }

    /// Delivered or gone: no fsync is owed any more.
    func forgetUnsynced(connection: String, object: UploadObject) {
        unsynced.withLock { list in list.removeAll { $0.connection == connection && $0.object == object } }
    }

    private func sync(_ objects: [UnsyncedObject]) -> Int {
        guard !objects.isEmpty else { return 0 }
        var synced = 0
        var failed: [UnsyncedObject] = []
        var directories = Set<String>()
        for entry in objects {
            let url = fileURL(connection: entry.connection, object: entry.object)
            do {
                if try DurableFile.sync(url) {
                    synced += 1
                    directories.insert(url.deletingLastPathComponent().path)
                }
            } catch {
                failed.append(entry)
                Counter(label: "pushav_spool_sync_failures_total",
                        dimensions: UploadDestination.metricDimensions(ofKey: entry.connection)).increment()
                logger.error("spool: an object could not be made durable; tried again on the next pass", metadata: [
                    "connection": "\(entry.connection)", "object": "\(entry.object)", "error": "\(error)",
                ])
            }
        }
        for directory in directories {
            do { try DurableFile.syncDirectory(URL(fileURLWithPath: directory)) } catch {
                // The files are durable, their names may not be: the directory's objects are synced again next pass.
                synced -= objects.filter { fileURL(connection: $0.connection, object: $0.object).deletingLastPathComponent().path == directory }.count
                failed += objects.filter { fileURL(connection: $0.connection, object: $0.object).deletingLastPathComponent().path == directory }
                Counter(label: "pushav_spool_sync_failures_total").increment()
                logger.error("spool: a directory's new names could not be made durable; tried again on the next pass",
                             metadata: ["directory": "\(directory)", "error": "\(error)"])
            }
        }
        if !failed.isEmpty { unsynced.withLock { $0.insert(contentsOf: failed, at: 0) } }
        return synced
    }
}
