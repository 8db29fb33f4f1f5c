import ConcurrencyPrimitives
import Delivery
import Foundation
import Ingest
import Logging
import Metrics
import Synchronization

/// One camera's deliveries: a ``DestinationUpload`` per destination its connections record for (or recorded for:
/// a destination that no connection uses any more is *retired* and only finishes what it holds).
///
/// What becomes of each delivery is decided by one pure machine, ``DeliveryRoster``; this type only performs its
/// actions: it makes uploads, runs each as a child task of ``run()`` (itself a child of the camera's service, so
/// nothing outlives the service group), starts patience timers, gives up, forgets, and reports.
///
/// Bounds: one delivery per destination (plus, while it ends, the one it replaces), and a destination exists only
/// while it holds objects or a connection records for it. A retired destination that cannot deliver (ingest gone,
/// its certificate refused) is given *patience* (``retiredPatience``) from its retirement — persisted, so a restart
/// does not renew it — and then what it still holds is given up: every object logged by session, counted in
/// `pushav_upload_objects_given_up_total`, recorded in the spool's `given_up`. It never waits forever, and it never
/// sends anything to another destination. The work queue below holds at most one run and one timer per delivery.
final class CameraDeliveries: Sendable {
    typealias Roster = DeliveryRoster<ContinuousClock.Instant>

    /// A retired destination's deliveries keep trying this long after its retirement (default an hour).
    let retiredPatience: Duration
    private let spool: SegmentSpool
    private let logger: Logger
    /// Told when a destination is forgotten (its credentials may be pruned now).
    private let destinationForgotten: @Sendable (String) async -> Void
    private let state = Mutex(State())
    private let work: AsyncStream<Work>
    private let workContinuation: AsyncStream<Work>.Continuation
    private let allEnded = Latch()

    private struct State {
        var roster = Roster()
        /// The uploads of the roster's entries.
        var uploads: [Roster.DeliveryID: Delivery] = [:]
    }

    /// What a delivery's destination is and the upload that delivers it.
    struct Delivery: Sendable {
        let destination: UploadDestination
        let upload: DestinationUpload
    }

    /// Child tasks of ``run()``.
    private enum Work: Sendable {
        case run(Roster.DeliveryID, Delivery)
        case patience(Roster.DeliveryID, until: ContinuousClock.Instant)
    }

    init(spool: SegmentSpool, retiredPatience: Duration, logger: Logger,
         destinationForgotten: @escaping @Sendable (String) async -> Void = { _ in }) {
        self.spool = spool
        self.retiredPatience = retiredPatience
        self.logger = logger
        self.destinationForgotten = destinationForgotten
        (work, workContinuation) = AsyncStream.makeStream(of: Work.self)
    }

    /// The delivery of `destination`: the running one, or a new one made with `make` (which runs once the one it
    /// replaces, if any, ended). Nil once shutting down.
    func delivery(for destination: UploadDestination, make: () throws -> DestinationUpload) throws -> DestinationUpload? {
        let key = destination.key
        let (upload, actions) = try state.withLock { state -> (DestinationUpload?, [Roster.Action]) in
            if let id = state.roster.reusable(key) { return (state.uploads[id]?.upload, []) }
            guard !state.roster.shuttingDown else { return (nil, []) }
            let upload = try make()
            let id = state.roster.nextDeliveryID
            state.uploads[id] = Delivery(destination: destination, upload: upload)
            return (upload, state.roster.handle(.made(destination: key)))
        }
        performAtOnce(actions)
        return upload
    }

    /// The destination is no longer any connection's: it delivers what it holds, then ends (see ``retiredPatience``).
    /// `retiredAt` is when it was retired first (a restart passes the spool's record); `recorderCatchesUp` opens once
    /// the recorder applied the state that retired it (nil: nothing records for it, as after a restart).
    func retire(_ key: String, retiredAt: Date = Date(), recorderCatchesUp: Latch? = nil) {
        let elapsed = Duration.seconds(max(0, Date().timeIntervalSince(retiredAt)))
        // After a restart a destination gets at least a minute, whatever its age: the ingest may be back now.
        let remaining = max(retiredPatience - elapsed, min(retiredPatience, .seconds(60)))
        let actions = state.withLock { $0.roster.handle(.retired(destination: key, patienceEnds: .now + remaining)) }
        performAtOnce(actions, recorderCatchesUp: recorderCatchesUp)
    }

    /// The delivery connections of `key` use now (not retired, not ending).
    func current(_ key: String) -> DestinationUpload? {
        state.withLock { state in state.roster.reusable(key).flatMap { state.uploads[$0]?.upload } }
    }

    /// Destinations that have a delivery now, in any phase.
    var runningKeys: Set<String> { state.withLock { Set($0.roster.newest.keys) } }

    /// Runs each delivery, and each patience timer, as a child task until ``shutdown(grace:)`` ended them all.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await item in work {
                switch item {
                case .run(let id, let delivery):
                    group.addTask { await self.deliver(id, delivery) }
                case .patience(let id, let deadline):
                    group.addTask {
                        try? await Task.sleep(until: deadline)
                        guard !Task.isCancelled else { return }
                        let actions = self.state.withLock { $0.roster.handle(.patienceExpired(id, at: .now)) }
                        self.performAtOnce(actions)
                    }
                }
            }
            group.cancelAll()  // patience timers of deliveries that ended
        }
        allEnded.open()
    }

    /// Closes every delivery; each has `grace` to deliver what it holds, then stops (the rest stays in the spool).
    /// Returns once all ended.
    func shutdown(grace: Duration) async {
        performAtOnce(state.withLock { $0.roster.handle(.shutdownAsked) })
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.allEnded.wait() }
            group.addTask { try? await Task.sleep(for: grace) }
            await group.next()
            group.cancelAll()
        }
        performAtOnce(state.withLock { $0.roster.handle(.graceExpired) })
        await allEnded.wait()
    }

    /// One delivery's task: runs it, then does what the roster says it leaves behind.
    private func deliver(_ id: Roster.DeliveryID, _ delivery: Delivery) async {
        let summary = await delivery.upload.run()
        for action in state.withLock({ $0.roster.handle(.runEnded(id)) }) {
            guard case .finish(_, let giveUp, let forget) = action else { continue }
            if giveUp { await giveUpWhatIsLeft(delivery) }
            var forgotten = false
            if forget { forgotten = (try? await spool.forgetDestinationIfDone(delivery.destination.key)) ?? false }
            if forget || giveUp {
                logger.info("destination delivery ended", metadata: [
                    "destination": "\(delivery.destination.key)", "delivered": "\(summary.delivered)",
                    "givenUp": "\(summary.givenUp)", "unconfirmed": "\(summary.unconfirmed)", "lost": "\(summary.lost)",
                    "complete": "\(summary.complete)", "forgotten": "\(forgotten)",
                ])
            }
            let next = state.withLock { state -> [Roster.Action] in
                state.uploads[id] = nil
                return state.roster.handle(.finished(id, forgotten: forgotten))
            }
            await perform(next)
        }
    }

    /// Performs the actions that need no waiting (all but registering again and reporting a forgotten destination,
    /// which only ``Roster/Input/finished(_:forgotten:)`` returns).
    private func performAtOnce(_ actions: [Roster.Action], recorderCatchesUp: Latch? = nil) {
        let uploads = state.withLock { $0.uploads }
        for action in actions {
            switch action {
            case .run(let id):
                if let delivery = uploads[id] { workContinuation.yield(.run(id, delivery)) }
            case .close(let id):
                uploads[id]?.upload.close(recorderCatchesUp: recorderCatchesUp)
            case .startPatience(let id, let deadline):
                workContinuation.yield(.patience(id, until: deadline))
            case .stop(let id):
                uploads[id]?.upload.stop()
            case .allEnded:
                workContinuation.finish()
            case .finish, .registerAgain, .destinationForgotten:
                assertionFailure("\(action) is performed by the delivery's own task")
            }
        }
    }

    private func perform(_ actions: [Roster.Action]) async {
        for action in actions {
            switch action {
            case .registerAgain(let id):
                guard let delivery = state.withLock({ $0.uploads[id] }) else { continue }
                do {
                    try await spool.register(delivery.destination)
                } catch {
                    logger.error("could not record a destination in the spool again after its predecessor forgot it", metadata: [
                        "destination": "\(delivery.destination.key)", "error": "\(error)",
                    ])
                }
            case .destinationForgotten(let key):
                await destinationForgotten(key)
            default:
                performAtOnce([action])
            }
        }
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
