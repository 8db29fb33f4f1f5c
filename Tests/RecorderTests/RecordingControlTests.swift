import Domain
import Foundation
import Recorder
import Synchronization
import Testing
import Timeline
import TransportModel

/// Transport connections attached to a running recording through ``RecordingControl`` (what `pushav serve` does):
/// the cluster numbers each session and sees its Begin and End, each connection writes its own format, a refused
/// recording is a dropped clip, never an unannounced one.
@Suite struct RecordingControlTests {
    /// What a connection's hooks saw.
    final class HookLog: Sendable {
        let begins = Mutex<[RecordingTrigger]>([])
        let ends = Mutex<[SessionRecord]>([])
        let ended = Mutex<[SessionNumber]>([])
        let tracks = Mutex<Set<TrackName>>([])
        let next: Mutex<SessionNumber>
        let refuse: Bool

        init(firstSession: SessionNumber, refuse: Bool = false) {
            next = Mutex(firstSession)
            self.refuse = refuse
        }

        var hooks: SessionHooks {
            SessionHooks(
                begin: { trigger in
                    self.begins.withLock { $0.append(trigger) }
                    if self.refuse { throw TransportCommandError.cluster(.invalidTransportStatus, "refused by the test") }
                    return self.next.withLock { n in defer { n = n.next }; return n }
                },
                end: { session in self.ended.withLock { $0.append(session) } },
                finished: { record in self.ends.withLock { $0.append(record) } },
                events: { event in
                    if case .initSegment(_, let track, _, _) = event { self.tracks.withLock { _ = $0.insert(track) } }
                })
        }
    }

    static func options(output: URL) -> RecordingOptions {
        var options = RecordingOptions(output: output, policies: [])
        options.alwaysAnalyseMotion = true
        options.control = RecordingControl()
        return options
    }

    @Test func continuousConnectionWritesItsOwnFormatAndTheClusterNumbersItsSession() async throws {
        let output = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let log = HookLog(firstSession: 41)
        let options = Self.options(output: output)
        var policy = ClipPolicy(trigger: .continuous, maxPreRoll: .zero, output: output)
        policy.hooks = log.hooks
        policy.format = SessionFormat(segmentDuration: .milliseconds(2000), chunkDuration: nil,
                                      trackNames: TrackNames(video: "cam-v", audio: "cam-a"), includeAudio: false)
        options.control!.publish(7, policy)
        let report = try await Recorder.record(input: Fixtures.media("a_720p30_h264_main.mp4").path, options: options)
        #expect(log.begins.withLock { $0 } == [.continuous])
        let ends = log.ends.withLock { $0 }
        try #require(ends.count == 1)
        #expect(ends[0].session == 41 && ends[0].endReason == "endOfInput")
        #expect(log.ended.withLock { $0 } == [41])
        #expect(ends[0].tracks.map(\.name) == ["cam-v"], "muted microphone: no audio track")
        #expect(log.tracks.withLock { $0 } == ["cam-v"])
        let segments = try FileManager.default.contentsOfDirectory(atPath: output.appendingPathComponent("session_41/cam-v").path)
            .filter { $0.hasSuffix(".m4s") }
        #expect(segments.count == 10, "20 s in 2 s segments: \(segments.sorted())")
        #expect(report.sessions.isEmpty, "a live connection's sessions go to its hooks, not the report")
        #expect(options.control!.statistics.framesAnalysed > 0)
    }

    @Test func manualTriggerBeginsACommandClipWithItsReasonAndTimeControl() async throws {
        let output = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let log = HookLog(firstSession: 1)
        let options = Self.options(output: output)
        var policy = ClipPolicy(trigger: .command, maxPreRoll: .zero, output: output)
        policy.hooks = log.hooks
        options.control!.publish(3, policy)
        options.control!.trigger(connection: 3, reason: .doorbellPressed,
                                 timeControl: ClipTimeControl(initial: 3, augmentation: 1, max: 10, blind: 0))
        _ = try await Recorder.record(input: Fixtures.media("a_720p30_h264_main.mp4").path, options: options)
        #expect(log.begins.withLock { $0 } == [.command(.doorbellPressed)])
        let ends = log.ends.withLock { $0 }
        try #require(ends.count == 1)
        #expect(ends[0].endReason == "motionDetectedDuration" && abs(ends[0].duration - 3) < 0.05, "\(ends[0])")
    }

    /// Issue 47: a ManuallyTriggerTransport, then a ModifyPushTransport before the clip's first keyframe was read
    /// (pre-roll 0). Replacing the connection's runner ended the waiting clip: dropped with no frame,
    /// although nothing failed. Now the runner that replaces it begins the same clip — one Begin, one End, to
    /// t0 + InitialDuration, with the modified options, nothing dropped. The steps are placed on the media thread
    /// itself (each `whenApplied` runs there as the next packet's update is taken): trigger at packet 1, Modify at
    /// packet 2, before the first video packet.
    @Test func aModifyBeforeTheFirstKeyframeKeepsTheTriggeredClip() async throws {
        let output = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let log = HookLog(firstSession: 1)
        let options = Self.options(output: output)
        let control = options.control!
        var policy = ClipPolicy(trigger: .command, maxPreRoll: .zero, output: output)
        policy.hooks = log.hooks
        let modified = output.appendingPathComponent("modified")
        var modifiedPolicy = policy
        modifiedPolicy.output = modified
        let first = DesiredRecordings(connections: [3: DesiredRecording(policy: policy, generation: 1, active: true, includeAudio: true)])
        let second = DesiredRecordings(connections: [3: DesiredRecording(policy: modifiedPolicy, generation: 2, active: true,
                                                                         includeAudio: true)])
        control.publish(first) {
            control.trigger(connection: 3, reason: .doorbellPressed,
                            timeControl: ClipTimeControl(initial: 3, augmentation: 1, max: 10, blind: 0))
            control.publish(first) { control.publish(second) }
        }
        let report = try await Recorder.record(input: Fixtures.media("a_720p30_h264_main.mp4").path, options: options)
        #expect(report.droppedClips.isEmpty, "\(report.droppedClips)")
        #expect(log.begins.withLock { $0 } == [.command(.doorbellPressed)])
        let ends = log.ends.withLock { $0 }
        try #require(ends.count == 1)
        // t0 is the media time the trigger was applied at (the first packets all read as 0 s: audio comes first, so
        // the keyframe at 0 s is not in the buffer yet and the clip waits for it); it runs to t0 + 3 s.
        #expect(ends[0].endReason == "motionDetectedDuration" && abs(ends[0].duration - 3) < 0.05, "\(ends[0])")
        #expect(ends[0].trigger == 0 && ends[0].start == 0, "\(ends[0])")
        #expect(FileManager.default.fileExists(atPath: modified.appendingPathComponent("session_1").path),
                "the clip is recorded with the modified options")
    }

    @Test func aRefusedRecordingIsADroppedClipAndNothingIsWritten() async throws {
        let output = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let log = HookLog(firstSession: 1, refuse: true)
        let options = Self.options(output: output)
        var policy = ClipPolicy(trigger: .continuous, maxPreRoll: .zero, output: output)
        policy.hooks = log.hooks
        options.control!.publish(9, policy)
        let report = try await Recorder.record(input: Fixtures.media("e_video_only.mp4").path, options: options)
        // Every refusal is a dropped clip (logged, in the report), never a recording, and the Continuous transport
        // tries again after a back-off that doubles: 1 s, 2 s, 4 s … (it used to stay "recording" and never retry).
        let begins = log.begins.withLock { $0.count }
        #expect(begins >= 3 && log.ends.withLock { $0.isEmpty }, "\(begins) Begins")
        #expect(report.droppedClips.count == begins && report.droppedClips.allSatisfy { $0.reason.contains("refused") },
                "\(report.droppedClips)")
        let triggers = report.droppedClips.map(\.trigger)
        for (index, gap) in zip(triggers.dropFirst(), triggers).map({ $0 - $1 }).enumerated() {
            let expected = Double(1 << index)
            #expect(gap >= expected && gap < expected + 0.1, "retry \(index + 1) after \(gap) s: \(triggers)")
        }
        #expect(!FileManager.default.fileExists(atPath: output.appendingPathComponent("session_1").path))
    }

    /// A microphone muted while a recording runs leaves that recording alone; the next one has no audio track.
    @Test func mutingAudioAppliesFromTheNextRecording() async throws {
        let output = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let log = HookLog(firstSession: 1)
        let options = Self.options(output: output)
        let control = options.control!
        var policy = ClipPolicy(trigger: .command, maxPreRoll: .zero, output: output)
        policy.format = SessionFormat(segmentDuration: .milliseconds(2000), chunkDuration: nil)
        let hooks = log.hooks
        let published = Mutex<ClipPolicy?>(nil)
        policy.hooks = SessionHooks(begin: hooks.begin, withdraw: hooks.withdraw, end: hooks.end, finished: { record in
            hooks.finished(record)
            if record.session == 1 {  // mute (the same policy and generation, no audio), then trigger the second recording
                control.publish(5, published.withLock { $0! }, includeAudio: false)
                control.trigger(connection: 5, reason: .userInitiated,
                                timeControl: ClipTimeControl(initial: 2, augmentation: 1, max: 4, blind: 0))
            }
        }, events: hooks.events)
        published.withLock { $0 = policy }
        control.publish(5, policy)
        control.trigger(connection: 5, reason: .userInitiated,
                        timeControl: ClipTimeControl(initial: 2, augmentation: 1, max: 4, blind: 0))
        _ = try await Recorder.record(input: Fixtures.media("a_720p30_h264_main.mp4").path, options: options)
        let ends = log.ends.withLock { $0 }
        try #require(ends.count == 2, "\(ends.map(\.session))")
        #expect(ends[0].tracks.map(\.name).sorted() == ["audio", "video"])
        #expect(ends[1].tracks.map(\.name) == ["video"])
    }

}

extension RecordingControl {
    /// One connection recording `policy` (generation 1, Active), as `pushav serve` publishes it.
    func publish(_ connection: UInt16, _ policy: ClipPolicy, includeAudio: Bool? = nil) {
        publish(DesiredRecordings(connections: [connection: DesiredRecording(
            policy: policy, generation: 1, active: true, includeAudio: includeAudio ?? policy.format?.includeAudio ?? true)]))
    }
}

/// Motion periods for status pages: frames with motion less than a second apart are one period; the list is bounded.
@Suite struct MotionPeriodTests {
    @Test(arguments: [
        ([0.0, 0.5, 1.0, 1.75], [[0.0, 1.75]]),
        ([0.0, 0.5, 2.0, 2.25], [[0.0, 0.5], [2.0, 2.25]]),
        ([0.0, 1.0, 2.0, 3.0], [[0.0, 3.0]]),
        ([5.0], [[5.0, 5.0]]),
    ])
    func framesFormPeriods(seconds: [Double], expected: [[Double]]) {
        let origin = Date(timeIntervalSince1970: 1_000_000)
        var statistics = RecordingControl.Statistics()
        for second in seconds { statistics.noteMotion(at: origin.addingTimeInterval(second)) }
        #expect(statistics.motionPeriods.map { [$0.start.timeIntervalSince(origin), $0.end.timeIntervalSince(origin)] } == expected)
        #expect(statistics.lastMotion == origin.addingTimeInterval(seconds.last!))
    }

    @Test func onlyTheNewestPeriodsAreKept() {
        let origin = Date(timeIntervalSince1970: 1_000_000)
        var statistics = RecordingControl.Statistics()
        for index in 0..<(MotionPeriod.kept + 5) { statistics.noteMotion(at: origin.addingTimeInterval(Double(index) * 10)) }
        #expect(statistics.motionPeriods.count == MotionPeriod.kept)
        #expect(statistics.motionPeriods.first?.start == origin.addingTimeInterval(50))
    }
}

/// A trigger that comes after a pass's last take (a looped file reaching its end) is not dropped: the owner takes it
/// from the ended control and hands it to the next pass (the serve race test lost round 23 this way).
@Suite struct UnappliedTriggerTests {
    @Test func triggersNoPassAppliedAreTakenOnceInConnectionOrder() {
        let control = RecordingControl()
        control.recordingEnded()
        control.trigger(connection: 3, reason: .userInitiated, timeControl: nil)
        control.trigger(connection: 1, reason: .automation, timeControl: nil)
        #expect(control.trigger(connection: 3, reason: .emergency, timeControl: nil), "a second trigger merges")
        let taken = control.takeUnappliedTriggers()
        #expect(taken.map(\.connection) == [1, 3])
        #expect(taken.last?.trigger.reason == .emergency, "the later reason wins")
        #expect(control.takeUnappliedTriggers().isEmpty, "taken once")
    }
}
