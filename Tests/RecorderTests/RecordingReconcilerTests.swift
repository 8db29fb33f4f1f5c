import Foundation
@testable import Recorder
import Testing
import Timeline

/// The recording's reconciler by table: desired × running → steps, and the control's inbox (latest state wins, triggers
/// merge per connection, failed sessions are kept once each).
@Suite struct RecordingReconcilerTests {
    typealias Target = RecordingReconciler.Target

    static let filter = MotionTriggerFilter(sensitivity: 5)
    static let other = MotionTriggerFilter(sensitivity: 9)

    static func target(_ generation: Int, active: Bool = true, audio: Bool = true, filter: MotionTriggerFilter = filter,
                       retry: Int = 0) -> Target {
        Target(generation: generation, active: active, includeAudio: audio, motionFilter: filter, retryEpoch: retry)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var desired: [UInt16: Target]
        var running: [UInt16: Target]
        var steps: [RecordingReconciler.Step]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "nothing to do", desired: [:], running: [:], steps: []),
        Case(name: "the same state twice: no step", desired: [1: target(1)], running: [1: target(1)], steps: []),
        Case(name: "new connection starts", desired: [1: target(1)], running: [:], steps: [.start(1)]),
        Case(name: "deallocated connection stops", desired: [:], running: [1: target(1)], steps: [.stop(1)]),
        Case(name: "a new generation replaces (Modify, another destination)", desired: [1: target(2)], running: [1: target(1)],
             steps: [.replace(1)]),
        Case(name: "a replace carries no other step", desired: [1: target(2, active: false, audio: false, retry: 3)],
             running: [1: target(1)], steps: [.replace(1)]),
        Case(name: "Inactive or private", desired: [1: target(1, active: false)], running: [1: target(1)], steps: [.setActive(1, false)]),
        Case(name: "Active again", desired: [1: target(1)], running: [1: target(1, active: false)], steps: [.setActive(1, true)]),
        Case(name: "microphone muted", desired: [1: target(1, audio: false)], running: [1: target(1)], steps: [.setAudio(1, false)]),
        Case(name: "Zone Management Sensitivity written", desired: [1: target(1, filter: other)], running: [1: target(1)],
             steps: [.setMotionFilter(1, other)]),
        Case(name: "a registry change asks a backing-off recording to retry", desired: [1: target(1, retry: 2)],
             running: [1: target(1, retry: 1)], steps: [.retry(1)]),
        Case(name: "an older retry epoch does not retry", desired: [1: target(1, retry: 1)], running: [1: target(1, retry: 2)], steps: []),
        Case(name: "audio, filter and status together, in that order",
             desired: [1: target(1, active: false, audio: false, filter: other)], running: [1: target(1)],
             steps: [.setAudio(1, false), .setMotionFilter(1, other), .setActive(1, false)]),
        Case(name: "stops first, then the rest by connection ID",
             desired: [5: target(1), 2: target(3)], running: [9: target(1), 2: target(2), 1: target(1)],
             steps: [.stop(1), .stop(9), .replace(2), .start(5)]),
    ]

    @Test(arguments: cases)
    func steps(_ check: Case) {
        #expect(RecordingReconciler.steps(desired: check.desired, running: check.running) == check.steps)
    }

    /// Level-triggered: the running state after the steps gives no more steps.
    @Test(arguments: cases)
    func applyingTheStepsConverges(_ check: Case) {
        var running = check.running
        for step in RecordingReconciler.steps(desired: check.desired, running: check.running) {
            switch step {
            case .start(let id), .replace(let id): running[id] = check.desired[id]
            case .stop(let id): running[id] = nil
            case .setActive(let id, let active): running[id]?.active = active
            case .setAudio(let id, let audio): running[id]?.includeAudio = audio
            case .setMotionFilter(let id, let filter): running[id]?.motionFilter = filter
            case .retry(let id): running[id]?.retryEpoch = check.desired[id]!.retryEpoch
            }
        }
        #expect(RecordingReconciler.steps(desired: check.desired, running: running) == [])
    }

    static func desired(_ ids: [UInt16], generation: Int = 1) -> DesiredRecordings {
        let policy = ClipPolicy(trigger: .continuous, maxPreRoll: .zero, output: URL(fileURLWithPath: "/tmp"))
        return DesiredRecordings(connections: Dictionary(uniqueKeysWithValues: ids.map {
            ($0, DesiredRecording(policy: policy, generation: generation, active: true, includeAudio: true))
        }))
    }

    @Test func theLatestPublishedStateIsTakenOnceAndNothingIsQueued() {
        let control = RecordingControl()
        #expect(control.take().desired == nil)
        for index in 0..<1000 { control.publish(Self.desired([UInt16(index % 7)], generation: index)) }
        let update = control.take()
        #expect(update.desired?.connections.keys.sorted() == [UInt16(999 % 7)])
        #expect(update.desired?.connections.values.first?.generation == 999)
        #expect(control.take().desired == nil, "taken once")
        control.publish(Self.desired([1]))
        #expect(control.take().desired != nil, "a newer one again")
    }

    @Test func triggersMergePerConnectionAndFailedSessionsAreKeptOnce() {
        let control = RecordingControl()
        #expect(!control.trigger(connection: 2, reason: .userInitiated, timeControl: nil))
        #expect(control.trigger(connection: 2, reason: .doorbellPressed, timeControl: nil), "merged")
        #expect(!control.trigger(connection: 1, reason: .userInitiated, timeControl: nil))
        control.sessionFailed(connection: 2, session: 7, reason: "disk full")
        control.sessionFailed(connection: 2, session: 7, reason: "disk full again")
        control.sessionFailed(connection: 1, session: 3, reason: "I/O error")
        let update = control.take()
        #expect(update.triggers.map(\.connection) == [1, 2])
        #expect(update.triggers.last?.trigger.reason == .doorbellPressed, "the later reason wins")
        #expect(update.failedSessions.map { "\($0.connection)/\($0.session) \($0.reason)" } == ["1/3 I/O error", "2/7 disk full"])
        let next = control.take()
        #expect(next.triggers.isEmpty && next.failedSessions.isEmpty)
    }
}
