import Foundation
import TestSupport

/// A seeded schedule of what happens to a running `pushav serve` (the way Jepsen tests databases): commands of the
/// controllers, ingests failing, the process killed, I/O faults, a lossy link. The same seed gives the same schedule,
/// so a failing seed, printed, runs again exactly.
struct ChaosSchedule: Sendable, CustomStringConvertible {
    enum Ingest: String, Sendable, CaseIterable {
        case a, b
        var other: Ingest { self == .a ? .b : .a }
    }

    enum Trigger: String, Sendable, CaseIterable {
        case continuous, motion, command
    }

    enum Modification: Sendable, Equatable {
        /// Another URL and TLS endpoint (the other ingest): a new destination.
        case moveTo(Ingest)
        /// ExpiryTime alone (how a controller keeps a transport alive): nothing changes for the recording.
        case expiryOnly
        /// Other container options (segment duration): a new recording, the same destination.
        case segmentDuration(Int)
    }

    enum IOFault: String, Sendable, CaseIterable {
        /// Every fsync and fdatasync fails.
        case fsync
        /// 10 % of positioned writes fail (SQLite's pages).
        case pwrite
        /// 20 % of file opens fail.
        case open
    }

    enum Action: Sendable, Equatable {
        case allocate(slot: Int, Trigger, Ingest)
        case modify(slot: Int, Modification)
        case setActive(slot: Int, Bool)
        case deallocate(slot: Int)
        case trigger(slot: Int)
        /// Soft recording privacy on for this long, then off again.
        case privacy(seconds: Double)
        /// The ingest is gone (not listening) for this long.
        case ingestDown(Ingest, seconds: Double)
        /// The ingest answers 401 to the next `times` requests.
        case ingestRefuses(Ingest, times: Int)
        /// The ingest answers 400 to every attempt at the segments numbered 1003 for a while (given up).
        case ingestRejectsOneObject(Ingest)
        /// The ingest holds the next `times` answers past the client's deadline.
        case ingestSlow(Ingest, times: Int)
        /// SIGTERM (false) or kill -9 (true), then a new start.
        case restart(kill: Bool)
        /// An I/O fault injected with libfiu for this long.
        case ioFault(IOFault, seconds: Double)
        /// The link to the ingests drops packets for this long.
        case lossyLink(seconds: Double)
        /// ManuallyTriggerTransport, and a Modify to `Ingest` sent as its answer arrives (issue 47: a Modify while the
        /// Begin is in flight lost the session).
        case triggerThenModify(slot: Int, Ingest)
        /// The ingest down for `seconds`; as it comes back three in ten pwrite calls fail for 5 s, while the backlog
        /// drains (issue 47: failed journal commits re-sent delivered objects).
        case drainUnderWriteFaults(Ingest, seconds: Double)
    }

    struct Step: Sendable, Equatable {
        /// Seconds after the previous step.
        var after: Double
        var action: Action
    }

    let seed: UInt64
    let steps: [Step]

    /// How many transport connections a schedule juggles.
    static let slots = 3

    /// A schedule of about `seconds` of steps, every 0.5–2.5 s. Slots start empty; the generator keeps to what makes
    /// sense for each slot (a Modify or trigger goes to an allocated slot, an allocation to an empty one), so every
    /// step is a command a controller could send.
    init(seed: UInt64, seconds: Double) {
        self.seed = seed
        var random = SeededGenerator(seed: seed)
        var allocated: [Int: Trigger] = [:]
        var steps: [Step] = []
        var elapsed = 0.0
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        func chance(_ p: Double) -> Bool { Double(random.next() >> 11) / Double(1 << 53) < p }
        // Every schedule starts with two connections recording, so there is something to disturb.
        steps.append(Step(after: 0, action: .allocate(slot: 0, .continuous, .a)))
        steps.append(Step(after: 0, action: .setActive(slot: 0, true)))
        steps.append(Step(after: 0, action: .allocate(slot: 1, .command, .b)))
        steps.append(Step(after: 0, action: .setActive(slot: 1, true)))
        allocated = [0: .continuous, 1: .command]
        while elapsed < seconds {
            let after = 0.5 + Double(random.next() % 2001) / 1000
            elapsed += after
            let roll = random.next() % 100
            let action: Action
            let slots = allocated.keys.sorted()
            switch roll {
            case 0..<8 where allocated.count < Self.slots:
                let slot = (0..<Self.slots).first { allocated[$0] == nil }!
                let trigger = pick(Trigger.allCases)
                allocated[slot] = trigger
                action = .allocate(slot: slot, trigger, pick(Ingest.allCases))
            case 0..<20 where !slots.isEmpty:
                let modification: Modification = switch random.next() % 3 {
                case 0: .moveTo(pick(Ingest.allCases))
                case 1: .expiryOnly
                default: .segmentDuration(pick([2000, 4000]))
                }
                action = .modify(slot: pick(slots), modification)
            case 20..<30 where !slots.isEmpty:
                action = .setActive(slot: pick(slots), chance(0.7))
            case 30..<35 where !slots.isEmpty:
                let slot = pick(slots)
                allocated[slot] = nil
                action = .deallocate(slot: slot)
            case 35..<41 where slots.contains(where: { allocated[$0] == .command }):
                action = .triggerThenModify(slot: pick(slots.filter { allocated[$0] == .command }), pick(Ingest.allCases))
            case 35..<50 where slots.contains(where: { allocated[$0] != .continuous }):
                action = .trigger(slot: pick(slots.filter { allocated[$0] != .continuous }))
            case 50..<55:
                action = .privacy(seconds: 1 + Double(random.next() % 4))
            case 55..<60:
                action = .ingestDown(pick(Ingest.allCases), seconds: 2 + Double(random.next() % 6))
            case 60..<64:
                action = .drainUnderWriteFaults(pick(Ingest.allCases), seconds: 3 + Double(random.next() % 6))
            case 64..<70:
                action = .ingestRefuses(pick(Ingest.allCases), times: 2 + Int(random.next() % 6))
            case 70..<74:
                action = .ingestRejectsOneObject(pick(Ingest.allCases))
            case 74..<78:
                action = .ingestSlow(pick(Ingest.allCases), times: 1 + Int(random.next() % 3))
            case 78..<84:
                action = .restart(kill: chance(0.5))
            case 84..<92:
                action = .ioFault(pick(IOFault.allCases), seconds: 1 + Double(random.next() % 4))
            case 92..<100:
                action = .lossyLink(seconds: 2 + Double(random.next() % 5))
            default:
                action = .trigger(slot: -1)  // nothing fits this roll: a no-op the runner skips
            }
            if case .trigger(slot: -1) = action { continue }
            steps.append(Step(after: after, action: action))
        }
        self.steps = steps
    }

    var description: String {
        "seed \(seed): " + steps.map { step in
            String(format: "+%.1fs %@", step.after, "\(step.action)".replacingOccurrences(of: "IngestTests.ChaosSchedule.", with: ""))
        }.joined(separator: "; ")
    }
}
