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
        var failed: [UnsyncedObject] = []
        var synced: [String: [UnsyncedObject]] = [:]  // by directory: whose names its fsync makes durable
        for entry in objects {
            let url = fileURL(connection: entry.connection, object: entry.object)
            do {
                if try DurableFile.sync(url) { synced[url.deletingLastPathComponent().path, default: []].append(entry) }
            } catch {
                failed.append(entry)
                syncFailed(entry.connection, "spool: an object could not be made durable; tried again on the next pass",
                           ["object": "\(entry.object)", "error": "\(error)"])
            }
        }
        for (directory, entries) in synced {
            do { try DurableFile.syncDirectory(URL(fileURLWithPath: directory)) } catch {
                // The files are durable, their names may not be: they are synced again on the next pass.
                synced[directory] = nil
                failed += entries
                syncFailed(entries[0].connection, "spool: new names in a directory could not be made durable; tried again on the next pass",
                           ["directory": "\(directory)", "error": "\(error)"])
            }
        }
        if !failed.isEmpty { unsynced.withLock { $0.insert(contentsOf: failed, at: 0) } }
        return synced.values.map(\.count).reduce(0, +)
    }

    private func syncFailed(_ connection: String, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        Counter(label: "pushav_spool_sync_failures_total", dimensions: UploadDestination.metricDimensions(ofKey: connection))
            .increment()
        logger.error(message, metadata: metadata.merging(["connection": "\(connection)"]) { first, _ in first })
    }
}
