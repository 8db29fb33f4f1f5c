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

    /// A fault of the schedule and when it held (an injection that lasts until it is used up has no end: `until` is
    /// `.distantFuture`; a signal is an instant).
    struct Fault: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case ingestDown(ChaosSchedule.Ingest)
            /// Answers 401 for a few requests: delivery stalls behind the back-off.
            case ingestRefuses(ChaosSchedule.Ingest)
            /// Answers stalled past the uploader's timeout: a 2xx may arrive after the uploader gave up waiting.
            case ingestSlow(ChaosSchedule.Ingest)
            case ingestRejectsObject(ChaosSchedule.Ingest)
            case lossyLink
            case ioFault(String)
            case kill
            case terminate
        }

        var kind: Kind
        var from: Date
        var until: Date

        /// Whether it keeps objects from leaving the spool, so that the spool can fill.
        var holdsDeliveryBack: Bool {
            switch kind {
            case .ingestDown, .ingestRefuses, .ingestSlow, .lossyLink: true
            default: false
            }
        }
    }

    /// One answered PUT at an ingest: 2xx only (what the ingest holds).
    struct Arrival: Sendable, Hashable {
        var path: String
        var time: Date
    }

    var generations: [Generation] = []
    /// Every 2xx at each ingest, in order.
    var arrivals: [ChaosSchedule.Ingest: [Arrival]] = [:]
    var faults: [Fault] = []
    /// The newest event number logged before the last start, made only to read the event log: the events after it
    /// are that start's own, and its recordings have not ended when the log is read. (By number, not time: the log
    /// keeps whole seconds, so a Begin just after the start could read as one just before it.)
    var lastEventBeforeLastStart: UInt64?
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
            // A recording the last start (made only to read the event log) began is still running when it is read.
            let runningAtTheEnd = e == 0 && seen.lastEventBeforeLastStart.map { last in begins[key]!.allSatisfy { $0.number > last } } ?? false
            if b == 1 && e != 1 && !runningAtTheEnd { problems.append("connection \(key[0]) session \(key[1]): \(e) Ends for its Begin") }
            if b == 0 { problems.append("connection \(key[0]) session \(key[1]): an End without a Begin") }
        }

        // (3) Once faults clear, every Active Continuous transport records again within 5 s.
        for (connection, recovered) in seen.recovered.sorted(by: { $0.key < $1.key }) where !recovered {
            problems.append("Continuous connection \(connection) was not recording within 5 s of the faults clearing")
        }

        // (4) Nothing dropped without a log line: a session that reached no ingest is named where it was lost.
        let arrived = Set(sessionGeneration.keys)
        let observed = begins.filter { _, list in seen.lastEventBeforeLastStart.map { last in list.contains { $0.number <= last } } ?? true }
        for key in observed.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where !arrived.contains(key) {
            let (connection, session) = (key[0], key[1])
            let named = seen.logLines.contains { line in
                (line.contains("session=\(session) ") || line.contains("session=\(session)\n") || line.hasSuffix("session=\(session)")
                    || line.contains("session_\(session)/"))
                    && (line.contains("connection=\(connection) ") || line.contains("cam1/\(connection)@"))
                    && ["clip dropped", "given up", "evicted", "is lost", "no frame of the clip"].contains { line.contains($0) }
            }
            if !named { problems.append("connection \(connection) session \(session) reached no ingest and no log line says why") }
        }

        // (6) Object by object: what the recorder wrote (its "recording finished" line names every segment of every
        // track) reaches an ingest exactly once within a process, or its loss is one of those a fault forces.
        problems += objectViolations(seen)

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

    /// A session the recorder finished writing, as its log line says: when, and per track the segment numbers.
    struct Written: Sendable {
        var connection: Int
        var session: Int
        var time: Date
        var tracks: [(name: String, segments: [Int])]

        /// The objects' paths below the destination's URL: each track's header, then its segments.
        var objects: [String] {
            tracks.flatMap { track in
                ["session_\(session)/\(track.name)/\(track.name).init"]
                    + track.segments.map { "session_\(session)/\(track.name)/segment_\(String(format: "%04d", $0)).m4s" }
            }
        }
    }

    /// The "recording finished" lines: `… connection=3 … session=5 … written=video:1001,1002;audio:1001 [Sidecar] recording finished`.
    static func written(in lines: [String]) -> [Written] {
        lines.compactMap { line in
            guard line.hasSuffix("recording finished"), let time = time(of: line),
                  let connection = field("connection", in: line).flatMap(Int.init),
                  let session = field("session", in: line).flatMap(Int.init),
                  let written = field("written", in: line) else { return nil }
            let tracks = written.split(separator: ";").compactMap { track -> (name: String, segments: [Int])? in
                let parts = track.split(separator: ":", maxSplits: 1)
                guard let name = parts.first else { return nil }
                return (String(name), parts.count > 1 ? parts[1].split(separator: ",").compactMap { Int($0) } : [])
            }
            return Written(connection: connection, session: session, time: time, tracks: tracks)
        }
    }

    /// Rule (6): per written object.
    static func objectViolations(_ seen: ChaosObservations) -> [String] {
        var problems: [String] = []
        // When each stopped process had exited (its fault's end): a copy after that is the next process's.
        let restarts = seen.faults.filter { $0.kind == .kill || $0.kind == .terminate }.map { $0.until == .distantFuture ? $0.from : $0.until }
        for written in Self.written(in: seen.logLines) {
            let destinations = seen.generations.filter { $0.connection == written.connection }
            for object in written.objects {
                let hits = seen.arrivals.flatMap { ingest, arrivals in
                    arrivals.filter { arrival in destinations.contains { arrival.path == $0.path + object } }
                }.sorted { $0.time < $1.time }
                if hits.isEmpty {
                    if forcedLoss(of: object, written, seen) == nil {
                        problems.append("connection \(written.connection) \(object) was written and reached no ingest; no fault forced its loss")
                    }
                    continue
                }
                // Twice within one process is a re-send nothing forced, unless the first answer may have been lost.
                for (first, second) in zip(hits, hits.dropFirst()) {
                    let restarted = restarts.contains { first.time < $0 && $0 < second.time }
                    let answerLost = seen.faults.contains { fault in
                        switch fault.kind {
                        case .lossyLink, .ingestSlow, .ingestDown: fault.from <= first.time && first.time <= fault.until + 2
                        default: false
                        }
                    }
                    if !restarted && !answerLost {
                        problems.append("connection \(written.connection) \(object) arrived again \(String(format: "%.3f", second.time.timeIntervalSince(first.time))) s after its 2xx, within one process")
                    }
                }
            }
        }
        return problems
    }

    /// The fault that forced `object`'s loss, from the closed list; nil when none did.
    /// - evicted: the spool evicted its whole session after a fault held delivery back (an ingest down, refusing or
    ///   stalling, a lossy link: the spool filled);
    /// - refused for good: the ingest rejected that object (the schedule's `ingestRejectsOneObject`, every
    ///   `segment_1003`), and the uploader gave it up;
    /// - I/O error: the spool could not write it while a libfiu fault held;
    /// - refused by a full spool: an ingest was down and only recordings being written were left to evict;
    /// - kill -9: the process was killed within 5 s of the session's end, before the spool had all of it.
    static func forcedLoss(of object: String, _ written: Written, _ seen: ChaosObservations) -> String? {
        let label = "cam1/\(written.connection)@"
        func near(_ time: Date, _ fault: ChaosObservations.Fault) -> Bool { fault.from.addingTimeInterval(-2) <= time && time <= fault.until.addingTimeInterval(2) }
        for line in seen.logLines where line.contains(label) {
            guard let time = time(of: line) else { continue }
            if line.contains("evicted a whole session"), field("session", in: line) == "\(written.session)",
               seen.faults.contains(where: { $0.holdsDeliveryBack && $0.from <= time }) {
                return "evicted"
            }
            if line.contains("upload given up"), field("object", in: line) == object, object.hasSuffix("segment_1003.m4s"),
               seen.faults.contains(where: { if case .ingestRejectsObject = $0.kind { $0.from <= time } else { false } }) {
                return "refused for good"
            }
            if line.contains(object), line.contains("is lost") || line.contains("could not spool"),
               seen.faults.contains(where: { if case .ioFault = $0.kind { near(time, $0) } else { false } }) {
                return "I/O error"
            }
            if line.contains(object), line.contains("is lost"), line.contains("spool is full") || line.contains("spool refused"),
               seen.faults.contains(where: { $0.holdsDeliveryBack && $0.from <= time }) {
                return "refused by a full spool"
            }
        }
        if seen.faults.contains(where: { $0.kind == .kill && written.time.addingTimeInterval(-1) <= $0.from && $0.from <= written.time.addingTimeInterval(5) }) {
            return "kill -9"
        }
        return nil
    }

    /// A log line's `key=value` (values hold no spaces).
    static func field(_ key: String, in line: String) -> String? {
        guard let range = line.range(of: " \(key)=") else { return nil }
        return String(line[range.upperBound...].prefix { $0 != " " })
    }

    /// A log line's time (its first word, whole seconds): the middle of that second.
    static func time(of line: String) -> Date? {
        guard let first = line.split(separator: " ", maxSplits: 1).first else { return nil }
        return logTime.date(from: String(first)).map { $0 + 0.5 }
    }

    nonisolated(unsafe) static let logTime: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }()

    /// `session_<n>/…` → n.
    static func session(in rest: Substring) -> Int? {
        guard let first = rest.split(separator: "/").first, first.hasPrefix("session_") else { return nil }
        return Int(first.dropFirst(8))
    }
}
