/// Which delivery each of a camera's destinations has, and what becomes of it: made, running, retired, out of
/// patience, replaced, finishing, gone. Pure (no clock, no I/O, no tasks); ``CameraDeliveries`` feeds it inputs and
/// performs the actions it returns, the way ``DeliveryLifecycle`` drives one delivery's events.
///
/// Why a machine: a destination's delivery is changed by five independent things — a reconcile wanting it, a Modify
/// or Deallocate retiring it, its patience running out, its run ending, a shutdown — and the rules between them are
/// where recordings were lost or sent twice:
/// - two deliveries of one destination must never run at once (they would send the same objects twice), so a new
///   one made while the old one ends *waits* for it (``Entry/waitingFor``);
/// - what is left is given up, and a destination forgotten, only by the delivery that is still its destination's
///   newest: a replaced one leaves both to its successor;
/// - a destination forgotten while a successor was being made is registered again before the successor runs (the
///   forget removed its row and folder);
/// - credentials are pruned (``Action/destinationForgotten(_:)``) only when no successor needs them.
///
/// Bounds: one entry per destination plus, while it ends, the one it replaces; an entry goes once its run ended and
/// its finishing was reported (``Input/finished(_:forgotten:)``).
public struct DeliveryRoster<Instant: Comparable & Hashable & Sendable>: Sendable {
    public struct DeliveryID: Sendable, Hashable, Comparable, CustomStringConvertible {
        public let number: Int
        public init(_ number: Int) { self.number = number }
        public static func < (a: DeliveryID, b: DeliveryID) -> Bool { a.number < b.number }
        public var description: String { "#\(number)" }
    }

    public enum Phase: Sendable, Hashable {
        /// Connections record for it.
        case serving
        /// No connection records for it: it delivers what it holds until its patience ends.
        case retired(patienceEnds: Instant)
        /// Retired, and the patience ran out: it was stopped; what is left is given up when its run ends.
        case outOfPatience
        /// A newer delivery of the same destination replaced it: it was stopped, and leaves the rest to the newer one.
        case replaced
        /// Its run ended; what it leaves (given up, destination forgotten) is being done.
        case finishing
    }

    public struct Entry: Sendable, Hashable {
        public let id: DeliveryID
        public let destination: String
        public var phase: Phase
        /// The delivery of the same destination that must end before this one runs.
        public var waitingFor: DeliveryID?
        /// Closed by a shutdown (it delivers within the grace, then is stopped).
        public var draining = false
    }

    public enum Input: Sendable, Hashable {
        /// A connection records for `destination`, and no delivery of it can be reused (see ``reusable(_:)``): one was
        /// made (``Action/run(_:)`` follows when it may run).
        case made(destination: String)
        /// No connection records for `destination` any more; its patience ends at `patienceEnds` (the earliest of
        /// every retirement counts).
        case retired(destination: String, patienceEnds: Instant)
        /// A patience timer started by ``Action/startPatience(_:until:)`` fired.
        case patienceExpired(DeliveryID, at: Instant)
        /// The delivery's run returned.
        case runEnded(DeliveryID)
        /// What ``Action/finish(_:giveUp:forget:)`` asked for is done; `forgotten`: the spool forgot the destination.
        case finished(DeliveryID, forgotten: Bool)
        /// The service shuts down: every delivery is closed and nothing new is made.
        case shutdownAsked
        /// A shutdown's grace passed: every delivery still running is stopped.
        case graceExpired
    }

    public enum Action: Sendable, Hashable {
        /// Run the delivery (its predecessor, if any, has ended).
        case run(DeliveryID)
        /// No new session comes for it: deliver what it holds, then end.
        case close(DeliveryID)
        /// Fire ``Input/patienceExpired(_:at:)`` at `until`.
        case startPatience(DeliveryID, until: Instant)
        /// End its run now; what is left stays in the spool.
        case stop(DeliveryID)
        /// Its run ended: give up what is left (patience ran out), then forget the destination if nothing of it
        /// waits (it was retired); answer with ``Input/finished(_:forgotten:)``.
        case finish(DeliveryID, giveUp: Bool, forget: Bool)
        /// Record the destination in the spool again: a finishing predecessor forgot it after this delivery was made.
        case registerAgain(DeliveryID)
        /// The destination is gone from the spool and nothing delivers for it: its credentials may be pruned.
        case destinationForgotten(String)
        /// Shutting down and no delivery is left.
        case allEnded
    }

    public private(set) var entries: [DeliveryID: Entry] = [:]
    /// The newest delivery of each destination.
    public private(set) var newest: [String: DeliveryID] = [:]
    public private(set) var shuttingDown = false
    private var nextID = 1

    public init() {}

    /// The delivery a connection recording for `destination` uses now, if one can be: the newest, made or running for
    /// connections (not retired, not ending). Nil: make one (``Input/made(destination:)``), unless ``shuttingDown``.
    public func reusable(_ destination: String) -> DeliveryID? {
        guard let id = newest[destination], let entry = entries[id], entry.phase == .serving, !entry.draining else { return nil }
        return id
    }

    /// The id ``Input/made(destination:)`` gives the next delivery.
    public var nextDeliveryID: DeliveryID { DeliveryID(nextID) }

    public mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .made(let destination):
            guard !shuttingDown else { return [] }
            let id = DeliveryID(nextID)
            nextID += 1
            var actions: [Action] = []
            var entry = Entry(id: id, destination: destination, phase: .serving)
            if let previous = newest[destination], var old = entries[previous] {
                entry.waitingFor = previous
                switch old.phase {
                case .serving, .retired:
                    // Serving: a reconcile that found it draining; retired: used again. Either way it stops, leaving
                    // what it holds to the new one (which waits for it).
                    old.phase = .replaced
                    entries[previous] = old
                    actions.append(.stop(previous))
                case .outOfPatience:
                    // Already stopped; what is left is the new one's to deliver, not to give up.
                    old.phase = .replaced
                    entries[previous] = old
                case .replaced, .finishing:
                    break
                }
            }
            entries[id] = entry
            newest[destination] = id
            if entry.waitingFor == nil { actions.append(.run(id)) }
            return actions
        case .retired(let destination, let deadline):
            guard let id = newest[destination], var entry = entries[id] else { return [] }
            switch entry.phase {
            case .serving:
                entry.phase = .retired(patienceEnds: deadline)
                entries[id] = entry
                return [.close(id), .startPatience(id, until: deadline)]
            case .retired(let earlier):
                guard deadline < earlier else { return [.close(id)] }
                entry.phase = .retired(patienceEnds: deadline)
                entries[id] = entry
                return [.close(id), .startPatience(id, until: deadline)]
            case .outOfPatience, .replaced, .finishing:
                return []
            }
        case .patienceExpired(let id, let at):
            guard var entry = entries[id], case .retired(let deadline) = entry.phase, at >= deadline else { return [] }
            entry.phase = .outOfPatience
            entries[id] = entry
            return [.stop(id)]
        case .runEnded(let id):
            guard var entry = entries[id] else { return [] }
            let newestOfItsDestination = newest[entry.destination] == id
            let giveUp = entry.phase == .outOfPatience && newestOfItsDestination
            let forget: Bool
            switch entry.phase {
            case .retired, .outOfPatience: forget = newestOfItsDestination
            case .serving, .replaced, .finishing: forget = false
            }
            entry.phase = .finishing
            entries[id] = entry
            return [.finish(id, giveUp: giveUp, forget: forget)]
        case .finished(let id, let forgotten):
            guard let entry = entries.removeValue(forKey: id) else { return [] }
            var actions: [Action] = []
            let successor = entries.values.first { $0.waitingFor == id }?.id
            if newest[entry.destination] == id { newest[entry.destination] = nil }
            if let successor {
                entries[successor]?.waitingFor = nil
                if forgotten { actions.append(.registerAgain(successor)) }
                actions.append(.run(successor))
                if shuttingDown { actions.append(.close(successor)) }
            } else if forgotten {
                actions.append(.destinationForgotten(entry.destination))
            }
            if shuttingDown && entries.isEmpty { actions.append(.allEnded) }
            return actions
        case .shutdownAsked:
            guard !shuttingDown else { return [] }
            shuttingDown = true
            var actions: [Action] = []
            for id in entries.keys.sorted() {
                entries[id]?.draining = true
                actions.append(.close(id))
            }
            if entries.isEmpty { actions.append(.allEnded) }
            return actions
        case .graceExpired:
            guard shuttingDown else { return [] }
            return entries.values.filter { $0.phase != .finishing }.map(\.id).sorted().map { .stop($0) }
        }
    }
}
