import Domain
import Testing
import Timeline

/// A step of a failure scenario: an input, and which recordings (by timeline number) it must begin and end.
struct FailureStep: Sendable {
    var input: TimelineInput
    var begins: [Int] = []
    var ends: [Int] = []
}

/// A transport whose recordings fail (the cluster refused the Begin, the writer failed) and how its timeline
/// recovers: never stuck "recording" a recording nobody records, a back-off between tries, an immediate try on
/// `.retry` or a status change, and a clean End/Begin pairing for everything that did run.
struct FailureCase: Sendable, CustomTestStringConvertible {
    var name: String
    var configuration: ClipTimeline.Configuration
    var steps: [FailureStep]
    var testDescription: String { name }
}

private func s(_ seconds: Double) -> MediaTime { MediaTime(seconds: seconds) }
private func frame(_ t: Double, key: Bool = false) -> TimelineInput { .frame(s(t), isKeyframe: key) }

let failureCases: [FailureCase] = [
    FailureCase(
        name: "Continuous: a refused Begin is tried again after 1 s, not at the next session cut",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: frame(0.5)),
            .init(input: frame(0.99)),
            .init(input: frame(1.0), begins: [2]),
        ]),
    FailureCase(
        name: "Continuous: failures in a row back off 1, 2, 4 s",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: frame(1), begins: [2]),
            .init(input: .recordingFailed(s(1))),
            .init(input: frame(2.9)),
            .init(input: frame(3), begins: [3]),
            .init(input: .recordingFailed(s(3))),
            .init(input: frame(6.9)),
            .init(input: frame(7), begins: [4]),
        ]),
    FailureCase(
        name: "Continuous: .retry (privacy off) begins at once, whatever the back-off",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: frame(0.5)),
            .init(input: .retry(s(0.6)), begins: [2]),
        ]),
    FailureCase(
        name: "Continuous: a recording that ran after failures resets the back-off",
        configuration: .init(trigger: .continuous, continuousSessionLength: .seconds(10)),
        steps: [
            .init(input: frame(0, key: true), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: frame(1), begins: [2]),
            .init(input: frame(11, key: true), begins: [3], ends: [2]),
            .init(input: .recordingFailed(s(11))),
            .init(input: frame(12), begins: [4]),
        ]),
    FailureCase(
        name: "Continuous: Inactive then Active (a cut) tries at once",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: .status(.inactive, s(0.2))),
            .init(input: .status(.active, s(0.2)), begins: [2]),
        ]),
    FailureCase(
        name: "Motion: a refused Begin leaves the activation; it is recorded for its remaining time after the back-off",
        configuration: .motion(tc(10, 5, 30, 5)),
        steps: [
            .init(input: .motion(s(0)), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: frame(0.5)),
            .init(input: frame(1), begins: [2]),
            .init(input: frame(10), ends: [2]),
        ]),
    FailureCase(
        name: "Motion: an activation that ends while backing off ends unrecorded, and leaves its blind window",
        configuration: .motion(tc(2, 1, 4, 5)),
        steps: [
            .init(input: .motion(s(0)), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: .recordingFailed(s(0))),  // not recording: still counts as a failure, no decision
            .init(input: frame(1.5)),
            .init(input: frame(2)),  // the activation ended at 2 s; retry due at 2 s finds no activation
            .init(input: .motion(s(3))),  // blind until 7 s
            .init(input: .motion(s(7)), begins: [2]),
        ]),
    FailureCase(
        name: "Motion: motion while backing off activates without a Begin; the back-off's end begins it",
        configuration: .motion(tc(1, 1, 1, 0)),
        steps: [
            .init(input: .motion(s(0)), begins: [1]),
            .init(input: .recordingFailed(s(0))),  // retry at 1 s
            .init(input: .motion(s(1)), begins: [2]),  // the first activation ended at 1 s; a new one, due
            .init(input: .recordingFailed(s(1))),  // second in a row: retry at 3 s
            .init(input: frame(2)),  // that activation ended unrecorded
            .init(input: .motion(s(2.5))),  // activates, backing off: no Begin
            .init(input: frame(3), begins: [3]),  // resumed for its remaining time
            .init(input: frame(3.5), ends: [3]),
        ]),
    FailureCase(
        name: "Command: a failed writer mid-clip, the next trigger after the back-off records",
        configuration: .init(trigger: .command),
        steps: [
            .init(input: .manualTrigger(s(0), timeControl: tc(10, 5, 30, 0)), begins: [1]),
            .init(input: .recordingFailed(s(3))),
            .init(input: frame(3.5)),
            .init(input: frame(4), begins: [2]),
            .init(input: frame(10), ends: [2]),
            .init(input: .manualTrigger(s(12), timeControl: tc(2, 1, 2, 0)), begins: [3]),
            .init(input: frame(14), ends: [3]),
        ]),
    FailureCase(
        name: "Inactive: a failure while Inactive never begins until Active",
        configuration: .init(trigger: .continuous),
        steps: [
            .init(input: frame(0, key: true), begins: [1]),
            .init(input: .recordingFailed(s(0))),
            .init(input: .status(.inactive, s(0.5))),
            .init(input: frame(5)),
            .init(input: .retry(s(6))),
            .init(input: .status(.active, s(7)), begins: [2]),
        ]),
]

@Suite struct RecordingFailureTests {
    @Test(arguments: failureCases)
    func recoversAsTheTableSays(_ scenario: FailureCase) {
        var timeline = ClipTimeline(configuration: scenario.configuration)
        var open: Set<Int> = []
        for (index, step) in scenario.steps.enumerated() {
            let decisions = timeline.handle(step.input)
            let begins = decisions.compactMap { if case .begin(let b) = $0 { b.recording } else { nil } }
            let ends = decisions.compactMap { if case .end(let e) = $0 { e.recording } else { nil } }
            #expect(begins == step.begins, "step \(index) \(step.input): begins \(begins)")
            #expect(ends == step.ends, "step \(index) \(step.input): ends \(ends)")
            // Every End closes a recording that began and did not fail; a failed one is never ended by the timeline.
            for end in ends { #expect(open.remove(end) != nil, "step \(index): End of \(end) that is not running") }
            open.formUnion(begins)
            if case .recordingFailed = step.input, let running = open.max() {
                open.remove(running)
                #expect(timeline.recording == nil, "step \(index): still recording after a failure")
            }
        }
    }

    @Test(arguments: [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 16.0), (6, 30.0), (40, 30.0)])
    func backOffDoublesUpToHalfAMinute(failures: Int, seconds: Double) {
        #expect(ClipTimeline.retryDelay(afterFailures: failures) == MediaTime(seconds: seconds))
    }
}
