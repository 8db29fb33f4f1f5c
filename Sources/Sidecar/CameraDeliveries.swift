import Foundation
import Ingest
import Logging
import Metrics
import Synchronization

/// One camera's deliveries: a ``DestinationUpload`` per destination its connections record for (or recorded for:
/// a destination that no connection uses any more is *retired* and only finishes what it holds).
///
/// Every delivery runs as a child task of ``run()``, itself a child of the camera's service: nothing outlives the
/// service group, and a shutdown ends them all (``shutdown(grace:)``).
///
/// Bounds: one delivery per destination, and a destination exists only while it holds objects or a connection records
/// for it. A retired destination that cannot deliver (ingest gone, its certificate refused) is given *patience*
/// (``retiredPatience``) from its retirement — persisted, so a restart does not renew it — and then what it still holds
/// is given up: every object logged by session, counted in `pushav_upload_objects_given_up_total`, recorded in the
/// spool's `given_up`. It never waits forever, and it never sends anything to another destination.
final class CameraDeliveries: Sendable {
    /// A retired destination's deliveries keep trying this long after its retirement (default an hour).
    let retiredPatience: Duration
    private let spool: SegmentSpool
    private let logger: Logger
    /// Told when a destination is forgotten (its credentials may be pruned now).
    private let destinationForgotten: @Sendable (String) async -> Void
    private let state = Mutex(State())
    private let starts: AsyncStream<Delivery>
    private let startsContinuation: AsyncStream<Delivery>.Continuation
    private let allEnded = Latch()

    private struct State {
        /// The running delivery of each destination label.
        var deliveries: [String: Delivery] = [:]
        /// Set by ``shutdown(grace:)``: no new delivery starts.
        var shuttingDown = false
    }

    /// One destination's delivery and what its task needs to know.
    final class Delivery: Sendable {
        let destination: UploadDestination
        let upload: DestinationUpload
        /// Opened with the time patience runs out, once retired.
        let retired = Latch()
        private let patienceEnds = Mutex<ContinuousClock.Instant?>(nil)
        /// Opened when its task ended: a later delivery of the same destination waits for it (two deliveries of one
        /// label would send the same objects twice).
        let ended = Latch()
        /// Set when patience ran out: what is left is given up.
        let abandoned = Atomic<Bool>(false)
        /// The delivery it replaces (same destination, ending), if any.
        let predecessor: Delivery?

        init(destination: UploadDestination, upload: DestinationUpload, predecessor: Delivery?) {
            self.destination = destination
            self.upload = upload
            self.predecessor = predecessor
        }

        func retire(patienceEnds deadline: ContinuousClock.Instant, recorderCatchesUp: Latch?) {
            patienceEnds.withLock { $0 = $0.map { min($0, deadline) } ?? deadline }
            upload.close(recorderCatchesUp: recorderCatchesUp)
            retired.open()
        }

        var isRetired: Bool { retired.isOpen }
        var deadline: ContinuousClock.Instant? { patienceEnds.withLock { $0 } }
    }

    init(spool: SegmentSpool, retiredPatience: Duration, logger: Logger,
         destinationForgotten: @escaping @Sendable (String) async -> Void = { _ in }) {
        self.spool = spool
        self.retiredPatience = retiredPatience
        self.logger = logger
        self.destinationForgotten = destinationForgotten
        (starts, startsContinuation) = AsyncStream.makeStream(of: Delivery.self)
    }

    /// The delivery of `destination`, started if it has none running (or only a retired one, which then ends at once,
    /// handing what it holds to the new one). Nil once shutting down.
    func delivery(for destination: UploadDestination, make: () throws -> DestinationUpload) throws -> DestinationUpload? {
        let key = destination.key
        return try state.withLock { state -> DestinationUpload? in
            guard !state.shuttingDown else { return nil }
            if let running = state.deliveries[key], !running.isRetired { return running.upload }
            let previous = state.deliveries[key]
            previous?.upload.stop()
            let delivery = Delivery(destination: destination, upload: try make(), predecessor: previous)
            state.deliveries[key] = delivery
            startsContinuation.yield(delivery)
            return delivery.upload
        }
    }

    /// The destination is no longer any connection's: it delivers what it holds, then ends (see ``retiredPatience``).
    /// `retiredAt` is when it was retired first (a restart passes the spool's record); `recorderCatchesUp` opens once
    /// the recorder applied the state that retired it (nil: nothing records for it, as after a restart).
    func retire(_ key: String, retiredAt: Date = Date(), recorderCatchesUp: Latch? = nil) {
        guard let delivery = state.withLock({ $0.deliveries[key] }) else { return }
        let elapsed = Duration.seconds(max(0, Date().timeIntervalSince(retiredAt)))
        // After a restart a destination gets at least a minute, whatever its age: the ingest may be back now.
        let remaining = max(retiredPatience - elapsed, min(retiredPatience, .seconds(60)))
        delivery.retire(patienceEnds: .now + remaining, recorderCatchesUp: recorderCatchesUp)
    }

    /// The running (not retired) delivery of `key`.
    func current(_ key: String) -> DestinationUpload? {
        state.withLock { state in state.deliveries[key].flatMap { $0.isRetired ? nil : $0.upload } }
    }

    /// Labels of the deliveries running now, retired or not.
    var runningKeys: Set<String> { state.withLock { Set($0.deliveries.keys) } }

    /// Runs each delivery as a child task until ``shutdown(grace:)`` ended them all.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await delivery in starts {
                group.addTask { await self.deliver(delivery) }
            }
        }
        allEnded.open()
    }

    /// Closes every delivery; each has `grace` to deliver what it holds, then stops (the rest stays in the spool).
    /// Returns once all ended.
    func shutdown(grace: Duration) async {
        let deliveries = state.withLock { state -> [Delivery] in
            state.shuttingDown = true
            return Array(state.deliveries.values)
        }
        startsContinuation.finish()
        for delivery in deliveries { delivery.upload.close() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.allEnded.wait() }
            group.addTask { try? await Task.sleep(for: grace) }
            await group.next()
            group.cancelAll()
        }
        for delivery in state.withLock({ Array($0.deliveries.values) }) { delivery.upload.stop() }
        await allEnded.wait()
    }

    /// One delivery's task: waits for the delivery it replaces, runs it, gives up what is left if its patience ran
    /// out, and forgets its destination once nothing of it waits.
    private func deliver(_ delivery: Delivery) async {
        if let predecessor = delivery.predecessor { await predecessor.ended.wait() }
        let key = delivery.destination.key
        let summary = await withTaskGroup(of: UploadSummary?.self) { group in
            group.addTask { await delivery.upload.run() }
            group.addTask {
                // Patience: from retirement to its deadline; then the delivery stops and what is left is given up.
                await delivery.retired.wait()
                guard let deadline = delivery.deadline, !Task.isCancelled else { return nil }
                try? await Task.sleep(until: deadline)
                guard !Task.isCancelled else { return nil }
                delivery.abandoned.store(true, ordering: .relaxed)
                delivery.upload.stop()
                return nil
            }
            var summary: UploadSummary?
            for await result in group where result != nil {
                summary = result
                group.cancelAll()
            }
            return summary ?? UploadSummary(delivered: 0, retries: 0, complete: false)
        }
        let replaced = state.withLock { state -> Bool in
            guard state.deliveries[key] === delivery else { return true }
            return false
        }
        if delivery.abandoned.load(ordering: .relaxed) && !replaced {
            await giveUpWhatIsLeft(delivery)
        }
        var forgotten = false
        if delivery.isRetired && !replaced {
            forgotten = (try? await spool.forgetDestinationIfDone(key)) ?? false
        }
        state.withLock { state in
            if state.deliveries[key] === delivery { state.deliveries[key] = nil }
        }
        if delivery.isRetired || forgotten {
            logger.info("destination delivery ended", metadata: [
                "destination": "\(key)", "delivered": "\(summary.delivered)", "givenUp": "\(summary.givenUp)",
                "unconfirmed": "\(summary.unconfirmed)", "lost": "\(summary.lost)", "complete": "\(summary.complete)",
            ])
        }
        if forgotten { await destinationForgotten(key) }
        delivery.ended.open()
    }

    /// A retired destination's patience ran out: everything still waiting for it is given up, by session in the log.
    private func giveUpWhatIsLeft(_ delivery: Delivery) async {
        let key = delivery.destination.key
        let reason = "its destination was retired and could not be reached for \(retiredPatience)"
        do {
            let objects = try await spool.giveUpPending(destination: key, reason: reason)
            guard !objects.isEmpty else { return }
            Counter(label: "pushav_upload_objects_given_up_total", dimensions: UploadDestination.metricDimensions(ofKey: key)).increment(by: objects.count)
            for (session, objects) in Dictionary(grouping: objects, by: \.session).sorted(by: { $0.key < $1.key }) {
                logger.error("upload given up: a retired destination stayed unreachable; its objects are dropped from the spool", metadata: [
                    "destination": "\(key)", "url": "\(delivery.destination.url)", "session": "\(session)",
                    "objects": "\(objects.count)", "reason": "\(reason)",
                ])
            }
        } catch {
            // Kept in the spool: the next start retires it again and tries once more.
            logger.error("could not give up a retired destination's objects; they stay in the spool", metadata: [
                "destination": "\(key)", "error": "\(error)",
            ])
        }
    }
}
