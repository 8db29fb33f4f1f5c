import Foundation

/// What a chaos run saw, and the invariants it must hold (issue 28). Pure: the runner collects, this judges; tested by
/// tables with hand-made observations.
struct ChaosObservations: Sendable {
    /// One destination of one connection: its URL path is `path` (`k<allocation>/g<generation>/`) at `ingest`. Valid
    /// for the sessions begun from `from` (the command that made it was sent) until `until` (the command that replaced
    /// it was answered; nil: still current).
    struct Generation: Sendable, Hashable {
        var connection: Int
        var path: String
        var ingest: ChaosSchedule.Ingest
        var from: Date
        var until: Date?
    }

    struct Event: Sendable, Hashable {
        var number: UInt64
        var time: Date
        var isBegin: Bool
        var connection: Int
        var session: Int
    }

    struct Command: Sendable, Hashable {
        var name: String
        /// HTTP status; nil when it got no answer in time.
        var status: UInt?
        var body: String
    }

    var generations: [Generation] = []
    /// Begin and End events (the event log and the live stream together, by number).
    var events: [Event] = []
    /// What each ingest stored (paths as the PUT named them).
    var stored: [ChaosSchedule.Ingest: [String]] = [:]
    var commands: [Command] = []
    var logLines: [String] = []
    /// Active Continuous connections at the end, and whether each had a running recording within 5 s of the faults
    /// clearing.
    var recovered: [Int: Bool] = [:]
}

enum ChaosChecker {
    /// How long after a replacing command was answered the camera may still begin a recording for the replaced
    /// destination (its reconcile follows the answer).
    static let reconcileSlack: TimeInterval = 2

    /// Every violation, each a sentence naming what broke.
    static func violations(_ seen: ChaosObservations) -> [String] {
        var problems: [String] = []
        let begins = Dictionary(grouping: seen.events.filter(\.isBegin), by: { [$0.connection, $0.session] })
        let ends = Dictionary(grouping: seen.events.filter { !$0.isBegin }, by: { [$0.connection, $0.session] })

        // (1) Every object reaches only the destination its session was recorded for.
        var sessionGeneration: [[Int]: String] = [:]
        for (ingest, paths) in seen.stored.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            for path in paths {
                guard let made = seen.generations.first(where: { path.hasPrefix($0.path) }),
                      let session = session(in: path.dropFirst(made.path.count))
                else {
                    problems.append("\(ingest): stored \(path), which no destination's URL names")
                    continue
                }
                let (connection, generation) = (made.connection, made.path)
                if made.ingest != ingest {
                    problems.append("\(path) reached ingest \(ingest); its destination is ingest \(made.ingest)")
                }
                if let earlier = sessionGeneration.updateValue(generation, forKey: [connection, session]), earlier != generation {
                    problems.append("connection \(connection) session \(session) arrived under generations \(earlier) and \(generation)")
                }
                guard let begin = begins[[connection, session]]?.first else {
                    problems.append("\(path) stored, but no Begin of connection \(connection) session \(session)")
                    continue
                }
                if begin.time < made.from {
                    problems.append("\(path): session \(session) began before its destination was made")
                }
                if let until = made.until, begin.time > until.addingTimeInterval(reconcileSlack) {
                    problems.append("\(path): session \(session) began \(begin.time.timeIntervalSince(until)) s after its destination was replaced")
                }
            }
        }

        // (2) Exactly one End per Begin, across restarts.
        for (key, list) in begins where list.count > 1 {
            problems.append("connection \(key[0]) session \(key[1]) has \(list.count) Begins")
        }
        for key in Set(begins.keys).union(ends.keys).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let b = begins[key]?.count ?? 0
            let e = ends[key]?.count ?? 0
            if b == 1 && e != 1 { problems.append("connection \(key[0]) session \(key[1]): \(e) Ends for its Begin") }
            if b == 0 { problems.append("connection \(key[0]) session \(key[1]): an End without a Begin") }
        }

        // (3) Once faults clear, every Active Continuous transport records again within 5 s.
        for (connection, recovered) in seen.recovered.sorted(by: { $0.key < $1.key }) where !recovered {
            problems.append("Continuous connection \(connection) was not recording within 5 s of the faults clearing")
        }

        // (4) Nothing dropped without a log line: a session that reached no ingest is named where it was lost.
        let arrived = Set(sessionGeneration.keys)
        for key in begins.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where !arrived.contains(key) {
            let (connection, session) = (key[0], key[1])
            let named = seen.logLines.contains { line in
                (line.contains("session=\(session) ") || line.contains("session=\(session)\n") || line.hasSuffix("session=\(session)")
                    || line.contains("session_\(session)/"))
                    && (line.contains("connection=\(connection) ") || line.contains("cam1/\(connection)@"))
                    && ["clip dropped", "given up", "evicted", "is lost", "no frame of the clip"].contains { line.contains($0) }
            }
            if !named { problems.append("connection \(connection) session \(session) reached no ingest and no log line says why") }
        }

        // (5) No command timed out, answered BUSY or a server error.
        for command in seen.commands {
            switch command.status {
            case nil: problems.append("\(command.name) got no answer in time")
            case _ where command.body.contains(#""status":"BUSY""#): problems.append("\(command.name) answered BUSY: \(command.body)")
            case let status? where status >= 500: problems.append("\(command.name) answered \(status): \(command.body)")
            default: break
            }
        }
        return problems
    }

    /// `session_<n>/…` → n.
    static func session(in rest: Substring) -> Int? {
        guard let first = rest.split(separator: "/").first, first.hasPrefix("session_") else { return nil }
        return Int(first.dropFirst(8))
    }
}
