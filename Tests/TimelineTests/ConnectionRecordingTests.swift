import Domain
import Testing
import Timeline

/// The connection's recording machine, by tables: each row is a scenario of the lifecycle issue (a refused Begin, a
/// writer failing at open or mid-segment, the spool refusing, Inactive or the end of the input while the cluster's
/// answer is on its way, …) as inputs and the actions they must produce, summarised as short strings.
struct ConnectionStep: Sendable {
    var input: ConnectionRecording.Input
    var actions: [String]
}

struct ConnectionCase: Sendable, CustomTestStringConvertible {
    var name: String
    var configuration: ClipTimeline.Configuration
    var announces = true
    var steps: [ConnectionStep]
    var testDescription: String { name }
}

private func s(_ seconds: Double) -> MediaTime { MediaTime(seconds: seconds) }
private func frame(_ t: Double, key: Bool = false) -> ConnectionRecording.Input { .timeline(.frame(s(t), isKeyframe: key)) }
private func key(_ t: Double, _ sequence: Int) -> ConnectionRecording.Input {
    .keyframeFound(.init(pts: s(t), sequence: sequence))
}
private let motion = ClipTimeline.Configuration.motion(ClipTimeControl(initial: 2, augmentation: 1, max: 5, blind: 3))

/// What an action says, briefly: `begin?1` (announce request 1), `open 7`, `end 7` (its End), `close 7` (write its
/// last frames), `abandon 7`, `drop` / `drop 7`, `withdraw 1`, `backoff 1.0`; extensions are left out.
func summary(_ action: ConnectionRecording.Action) -> String? {
    switch action {
    case .announceBegin(let request, _): "begin?\(request)"
    case .withdrawBegin(let request): "withdraw \(request)"
    case .announceEnd(let session): "end \(session)"
    case .openSession(let session, _, _): "open \(session)"
    case .endSession(let session, _): "close \(session)"
    case .abandonSession(let session, _): "abandon \(session)"
    case .dropClip(_, _, let session): session.map { "drop \($0)" } ?? "drop"
    case .backingOff(let retryAt, _): "backoff \(retryAt.seconds)"
    case .extended: nil
    }
}

let connectionCases: [ConnectionCase] = [
    ConnectionCase(
        name: "Continuous, nothing fails: Begin, answer, session, End at the end of the input",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: frame(0.033), actions: []),
            .init(input: .beginAccepted(request: 1, session: 7), actions: ["open 7"]),
            .init(input: .timeline(.endOfInput(s(5))), actions: ["end 7", "close 7"]),
            .init(input: .sessionWritten(session: 7, empty: false), actions: []),
        ]),
    ConnectionCase(
        name: "A refused Begin (privacy on) is a dropped clip and a back-off, never a recording",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: .beginRefused(request: 1, reason: "privacy"), actions: ["drop", "backoff 1.0"]),
            .init(input: frame(0.5), actions: []),
            .init(input: frame(1, key: true), actions: []),
            .init(input: key(1, 30), actions: ["begin?2"]),
            .init(input: .beginAccepted(request: 2, session: 1), actions: ["open 1"]),
        ]),
    ConnectionCase(
        name: "A writer that cannot open (full disk) after the Begin: its End, abandoned, dropped, back-off",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: .beginAccepted(request: 1, session: 4), actions: ["open 4"]),
            .init(input: .sessionFailed(session: 4, reason: "ENOSPC"), actions: ["end 4", "abandon 4", "drop 4", "backoff 1.0"]),
            .init(input: .sessionFailed(session: 4, reason: "ENOSPC again"), actions: []),
        ]),
    ConnectionCase(
        name: "The spool refuses mid-recording: one End, then the next try after the back-off",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: .beginAccepted(request: 1, session: 1), actions: ["open 1"]),
            .init(input: frame(3), actions: []),
            .init(input: .sessionFailed(session: 1, reason: "spool full"), actions: ["end 1", "abandon 1", "drop 1", "backoff 4.0"]),
            .init(input: frame(3.9), actions: []),
            .init(input: frame(4, key: true), actions: []),
            .init(input: key(4, 120), actions: ["begin?2"]),
            .init(input: .beginAccepted(request: 2, session: 2), actions: ["open 2"]),
        ]),
    ConnectionCase(
        name: "A session failing while its last frames are written: its End is already out, no second one",
        configuration: motion,
        steps: [
            .init(input: .timeline(.motion(s(1))), actions: []),
            .init(input: key(1, 30), actions: ["begin?1"]),
            .init(input: .beginAccepted(request: 1, session: 9), actions: ["open 9"]),
            .init(input: frame(3), actions: ["end 9", "close 9"]),
            .init(input: .sessionFailed(session: 9, reason: "I/O error"), actions: ["abandon 9", "drop 9"]),
            .init(input: .sessionWritten(session: 9, empty: false), actions: []),
        ]),
    ConnectionCase(
        name: "Inactive while the Begin's answer is on its way: accepted, written up to Inactive, ended at once",
        configuration: motion,
        steps: [
            .init(input: .timeline(.motion(s(1))), actions: []),
            .init(input: key(1, 30), actions: ["begin?1"]),
            .init(input: .timeline(.status(.inactive, s(1.2))), actions: []),
            .init(input: .beginAccepted(request: 1, session: 3), actions: ["open 3", "end 3", "close 3"]),
            .init(input: .sessionWritten(session: 3, empty: false), actions: []),
        ]),
    ConnectionCase(
        name: "The input ends while the Begin's answer is on its way: withdrawn (its End if accepted), a late answer ignored",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: .timeline(.stop(s(0.1))), actions: ["withdraw 1", "drop"]),
            .init(input: .beginAccepted(request: 1, session: 5), actions: []),
        ]),
    ConnectionCase(
        name: "Inactive, then Active again, before the Begin's answer: the ended one is withdrawn, the next goes ahead",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: .timeline(.status(.inactive, s(0.1))), actions: []),
            .init(input: .timeline(.status(.active, s(0.2))), actions: ["withdraw 1", "drop"]),
            .init(input: .beginAccepted(request: 1, session: 1), actions: []),
            .init(input: key(0.2, 6), actions: ["begin?2"]),
            .init(input: .beginAccepted(request: 2, session: 2), actions: ["open 2"]),
        ]),
    ConnectionCase(
        name: "An answer to a withdrawn or earlier request changes nothing",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: .beginRefused(request: 1, reason: "Inactive"), actions: ["drop", "backoff 1.0"]),
            .init(input: .beginAccepted(request: 1, session: 5), actions: []),
            .init(input: frame(1, key: true), actions: []),
            .init(input: key(1, 30), actions: ["begin?2"]),
            .init(input: .beginRefused(request: 1, reason: "stale"), actions: []),
            .init(input: .beginAccepted(request: 2, session: 6), actions: ["open 6"]),
        ]),
    ConnectionCase(
        name: "A motion clip whose keyframe never comes before its end is dropped, nothing announced",
        configuration: motion,
        steps: [
            .init(input: .timeline(.motion(s(1))), actions: []),
            .init(input: frame(3), actions: ["drop"]),
        ]),
    ConnectionCase(
        name: "A session none of whose frames was written is a dropped clip (its End went out with the others)",
        configuration: motion,
        steps: [
            .init(input: .timeline(.motion(s(1))), actions: []),
            .init(input: key(1, 30), actions: ["begin?1"]),
            .init(input: .beginAccepted(request: 1, session: 2), actions: ["open 2"]),
            .init(input: frame(3), actions: ["end 2", "close 2"]),
            .init(input: .sessionWritten(session: 2, empty: true), actions: ["drop 2"]),
        ]),
    ConnectionCase(
        name: "Without a cluster (pushav record) the machine numbers sessions itself and announces nothing",
        configuration: motion, announces: false,
        steps: [
            .init(input: .timeline(.motion(s(1))), actions: []),
            .init(input: key(1, 30), actions: ["open 1"]),
            .init(input: frame(3), actions: ["end 1", "close 1"]),
            .init(input: .timeline(.motion(s(7))), actions: []),
            .init(input: key(6.5, 200), actions: ["open 2"]),
            .init(input: .timeline(.endOfInput(s(8))), actions: ["end 2", "close 2"]),
        ]),
    ConnectionCase(
        name: "After the end of the input only the writers still finishing report",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), actions: []),
            .init(input: key(0, 0), actions: ["begin?1"]),
            .init(input: .beginAccepted(request: 1, session: 1), actions: ["open 1"]),
            .init(input: .timeline(.endOfInput(s(2))), actions: ["end 1", "close 1"]),
            .init(input: frame(3, key: true), actions: []),
            .init(input: .timeline(.retry(s(3))), actions: []),
            .init(input: .sessionFailed(session: 1, reason: "fsync"), actions: ["abandon 1", "drop 1"]),
        ]),
]

@Suite struct ConnectionRecordingTests {
    @Test(arguments: connectionCases)
    func scenario(_ scenario: ConnectionCase) {
        var machine = ConnectionRecording(timeline: ClipTimeline(configuration: scenario.configuration),
                                          announcesRecordings: scenario.announces)
        for (index, step) in scenario.steps.enumerated() {
            let actions = machine.handle(step.input).compactMap(summary)
            #expect(actions == step.actions, "step \(index + 1): \(step.input)")
        }
    }

    /// Thousands of random interleavings of everything that can happen to a connection — frames, motion, manual
    /// triggers, Active/Inactive, retries, the cluster's answers arriving late or refusing, writers and the spool
    /// failing, sessions finishing — and at the end the input stopping. Whatever the order: every Begin the cluster
    /// accepted gets exactly one End (or is withdrawn, which the announcer turns into its End), no End is sent for a
    /// session that was never accepted, no session opens without its Begin accepted, and at most one request waits
    /// for an answer.
    @Test(arguments: [TriggerType.continuous, .motion, .command])
    func everyAcceptedBeginGetsExactlyOneEnd(_ trigger: TriggerType) {
        var random = SplitMix(seed: 0x5EED_0000 + UInt64(TriggerType.allCases.firstIndex(of: trigger)!))
        for run in 0..<200 {
            let configuration = ClipTimeline.Configuration(
                trigger: trigger, motionTimeControl: ClipTimeControl(initial: 1, augmentation: 1, max: 3, blind: 1),
                continuousSessionLength: .seconds(4))
            var machine = ConnectionRecording(timeline: ClipTimeline(configuration: configuration), announcesRecordings: true)
            var cluster = SimulatedCluster()
            var t = 0.0
            var frameIndex = 0
            for _ in 0..<300 {
                let input: ConnectionRecording.Input
                switch random.next(13) {
                case 0..<5:
                    frameIndex += 1
                    t = Double(frameIndex) / 10
                    input = .timeline(.frame(s(t), isKeyframe: frameIndex % 10 == 0))
                case 5: input = .timeline(.motion(s(t)))
                case 6: input = .timeline(.manualTrigger(s(t), timeControl: nil))
                case 7: input = .timeline(.status(random.next(3) == 0 ? .inactive : .active, s(t)))
                case 8: input = .timeline(.retry(s(t)))
                case 9:
                    guard case .waitingForKeyframe = machine.state else { continue }
                    input = .keyframeFound(.init(pts: s(t), sequence: frameIndex))
                case 10:
                    // The live request, or one the machine withdrew (its answer still comes, and is ignored).
                    guard let request = (cluster.unanswered + cluster.withdrawnUnanswered).randomElement(using: &random)
                    else { continue }
                    input = random.next(4) == 0 ? cluster.refuse(request) : cluster.accept(request)
                case 11:
                    guard let session = cluster.writing.randomElement(using: &random) else { continue }
                    input = .sessionFailed(session: session, reason: "fault")
                default:
                    guard let session = machine.ending.keys.sorted().first else { continue }
                    cluster.writing.removeAll { $0 == session }
                    input = .sessionWritten(session: session, empty: random.next(5) == 0)
                }
                cluster.apply(machine.handle(input))
                #expect(cluster.unanswered.count <= 1, "run \(run): more than one Begin waiting for its answer")
            }
            cluster.apply(machine.handle(.timeline(.stop(s(t + 0.1)))))
            // Answers still on their way arrive after the media thread stopped; the writers finish.
            for request in cluster.unanswered + cluster.withdrawnUnanswered {
                cluster.apply(machine.handle(cluster.accept(request)))
            }
            for session in machine.ending.keys.sorted() {
                cluster.apply(machine.handle(.sessionWritten(session: session, empty: false)))
            }
            #expect(cluster.violations.isEmpty, "run \(run): \(cluster.violations)")
            #expect(cluster.open.isEmpty, "run \(run): Begins without End: \(cluster.open)")
            #expect(machine.isIdle, "run \(run): \(machine.state)")
        }
    }
}

/// The cluster's side of the property test: which Begins it accepted and which Ends it saw.
private struct SimulatedCluster {
    /// Requests the machine waits for (at most one).
    var unanswered: [Int] = []
    /// Requests the machine withdrew before their answer: the cluster still answers them.
    var withdrawnUnanswered: [Int] = []
    var acceptedAs: [Int: SessionNumber] = [:]
    var withdrawn: Set<Int> = []
    /// Sessions whose Begin is out and End not yet.
    var open: Set<SessionNumber> = []
    /// Sessions with a writer (opened and not finished or abandoned).
    var writing: [SessionNumber] = []
    var violations: [String] = []
    private var nextSession = SessionNumber.first

    mutating func accept(_ request: Int) -> ConnectionRecording.Input {
        unanswered.removeAll { $0 == request }
        withdrawnUnanswered.removeAll { $0 == request }
        let session = nextSession
        nextSession = nextSession.next
        acceptedAs[request] = session
        open.insert(session)
        if withdrawn.contains(request) { open.remove(session) }  // the announcer ends a withdrawn accepted Begin
        return .beginAccepted(request: request, session: session)
    }

    mutating func refuse(_ request: Int) -> ConnectionRecording.Input {
        unanswered.removeAll { $0 == request }
        withdrawnUnanswered.removeAll { $0 == request }
        return .beginRefused(request: request, reason: "refused")
    }

    mutating func apply(_ actions: [ConnectionRecording.Action]) {
        for action in actions {
            switch action {
            case .announceBegin(let request, _):
                unanswered.append(request)
            case .withdrawBegin(let request):
                withdrawn.insert(request)
                if unanswered.contains(request) {
                    unanswered.removeAll { $0 == request }
                    withdrawnUnanswered.append(request)
                }
                if let session = acceptedAs[request] { open.remove(session) }
            case .announceEnd(let session):
                if open.remove(session) == nil { violations.append("End of \(session) without an open Begin") }
            case .openSession(let session, _, _):
                if !open.contains(session) { violations.append("session \(session) opened without its Begin accepted") }
                writing.append(session)
            case .endSession(let session, _), .abandonSession(let session, _):
                if case .abandonSession = action { writing.removeAll { $0 == session } }
            case .dropClip, .backingOff, .extended:
                break
            }
        }
    }
}

/// A small deterministic generator (SplitMix64), so every run of the property test sees the same sequences.
struct SplitMix: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
