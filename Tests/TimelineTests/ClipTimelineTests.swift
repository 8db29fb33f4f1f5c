import Domain
import Testing
import Timeline

@Suite struct ClipTimelineTableTests {
    @Test(arguments: timelineCases)
    func recordingsMatchTheRules(_ scenario: TimelineCase) {
        let (clips, _) = run(scenario)
        #expect(clips.count == scenario.expected.count, "got \(clips)")
        for (produced, expected) in zip(clips, scenario.expected) {
            #expect(produced.matches(expected), "got \(produced), expected \(expected)")
        }
    }

    /// Properties every case must have, whatever its expected clips: one End per Begin, numbering, no Begin on
    /// augmentation, ends at t0 + D unless something else ended the recording, and the pre-roll bounds of rule 9.
    @Test(arguments: timelineCases)
    func invariantsHold(_ scenario: TimelineCase) {
        let (clips, decisions) = run(scenario)
        let begins = decisions.compactMap { if case .begin(let b) = $0 { b } else { nil } }
        let ends = decisions.compactMap { if case .end(let e) = $0 { e } else { nil } }
        #expect(begins.count == ends.count)
        #expect(begins.map(\.recording) == Array(1..<(begins.count + 1)))
        for clip in clips {
            #expect(clip.end.end >= clip.begin.anchor)
            if clip.end.reason == .motionDetectedDuration || clip.end.reason == .maxDuration {
                #expect(clip.end.end == clip.end.activationTime + clip.end.motionDetectedDuration!)
            }
            guard let start = clip.start else { continue }
            let preRoll = clip.begin.anchor - start
            #expect(preRoll >= .zero, "the trigger frame is always in the clip")
            let p = MediaTime.milliseconds(Int64(clip.begin.trigger == .continuous ? 0 : scenario.maxPreRollMs))
            // At most max(P, the distance back to the containing keyframe), which is < one GOP.
            #expect(preRoll <= max(p, scenario.gop.time) || preRoll < scenario.gop.time)
        }
    }

    @Test func tableIsLargeEnough() {
        #expect(timelineCases.count >= 100)
    }
}

@Suite struct ClipTimelineBehaviourTests {
    private let t = { (s: Double) in MediaTime(seconds: s) }

    @Test func endComesBeforeTheNextBeginAtTheSameTime() {
        var timeline = ClipTimeline(configuration: .motion(tc(10, 5, 30, 0)))
        _ = timeline.motion(at: t(0))
        let decisions = timeline.motion(at: t(10))
        guard decisions.count == 2, case .end(let end) = decisions[0], case .begin(let begin) = decisions[1] else {
            Issue.record("expected End then Begin, got \(decisions)")
            return
        }
        #expect(end.end == t(10) && end.recording == 1)
        #expect(begin.anchor == t(10) && begin.recording == 2 && begin.scheduledEnd == t(20))
    }

    @Test func augmentationIsReportedButNeverBegins() {
        var timeline = ClipTimeline(configuration: .motion(.matterDefaults))
        let first = timeline.motion(at: t(0))
        #expect(first.count == 1)
        let second = timeline.motion(at: t(1))
        #expect(second == [.extend(ClipExtension(
            recording: 1, activationTime: t(0), time: t(1), motionDetectedDuration: .seconds(15), augmentations: 1))])
        #expect(timeline.activation?.previousDuration == .seconds(10))
        #expect(timeline.frame(at: t(14.9)).isEmpty)
        #expect(timeline.frame(at: t(15)) == [.end(ClipEnd(
            recording: 1, trigger: .motion, activationTime: t(0), end: t(15), motionDetectedDuration: .seconds(15),
            augmentations: 1, reason: .motionDetectedDuration))])
        #expect(timeline.blindUntil == t(45))
    }

    @Test func exactAcrossTimeBases() {
        // t0 on a 1/90000 clock, frames on 1/15360: the end is exactly t0 + 10 s, not a rounded Double.
        var timeline = ClipTimeline(configuration: .motion(.matterDefaults))
        let t0 = MediaTime(value: 30_001, timescale: 90_000)
        _ = timeline.motion(at: t0)
        let justBefore = MediaTime(value: 930_000, timescale: 90_000)  // t0 + 10 s − 1 tick
        #expect(timeline.frame(at: justBefore).isEmpty)
        let decisions = timeline.frame(at: MediaTime(value: 930_001, timescale: 90_000))
        guard case .end(let end) = decisions.first else { Issue.record("no end"); return }
        #expect(end.end == t0 + .seconds(10))
    }

    @Test func lateInputsAreTreatedAsTheLatestTime() {
        var timeline = ClipTimeline(configuration: .motion(.matterDefaults))
        _ = timeline.motion(at: t(5))
        _ = timeline.frame(at: t(6))
        // A sample stamped before the clock counts at 6 s: e = 1, so it augments.
        #expect(timeline.motion(at: t(3)).count == 1)
        #expect(timeline.activation?.motionDetectedDuration == .seconds(15))
        #expect(timeline.activation?.activationTime == t(5))
    }

    @Test func nothingHappensAfterEndOfInput() {
        var timeline = ClipTimeline(configuration: .motion(.matterDefaults))
        _ = timeline.motion(at: t(0))
        #expect(timeline.endOfInput(at: t(4)).count == 1)
        #expect(timeline.isFinished)
        #expect(timeline.motion(at: t(50)).isEmpty)
        #expect(timeline.manualTrigger(at: t(60), timeControl: .matterDefaults).isEmpty)
    }

    @Test func nothingHappensAfterAStop() {
        var timeline = ClipTimeline(configuration: ClipTimeline.Configuration(trigger: .continuous))
        _ = timeline.frame(at: t(0), isKeyframe: true)
        let decisions = timeline.stop(at: t(4))
        guard case .end(let end) = decisions.first, decisions.count == 1 else { Issue.record("\(decisions)"); return }
        #expect(end.reason == .interrupted && end.end == t(4))
        #expect(timeline.isFinished)
        #expect(timeline.frame(at: t(400), isKeyframe: true).isEmpty)
        #expect(timeline.endOfInput(at: t(500)).isEmpty)
    }

    @Test func beginCarriesTheCurrentDurationWhenResumed() {
        var timeline = ClipTimeline(configuration: .motion(.matterDefaults), activity: .inactive)
        _ = timeline.motion(at: t(0))
        _ = timeline.motion(at: t(2))
        let decisions = timeline.setStatus(.active, at: t(3))
        guard case .begin(let begin) = decisions.first else { Issue.record("no begin"); return }
        #expect(begin.activationTime == t(0) && begin.anchor == t(3))
        #expect(begin.motionDetectedDuration == .seconds(15) && begin.scheduledEnd == t(15) && begin.augmentations == 1)
    }
}

// MARK: Rule 9

struct PreRollCase: Sendable, CustomTestStringConvertible {
    var keyframes: [Seconds]
    var trigger: Seconds
    var maxPreRollMs: Int
    /// nil: no keyframe at or before the trigger.
    var start: Seconds?
    var testDescription: String { "t0=\(trigger) P=\(maxPreRollMs)ms keyframes=\(keyframes.prefix(6))… → \(start.map(\.description) ?? "none")" }
}

private let everyTwo: [Seconds] = [0, 2, 4, 6, 8]
private let irregular: [Seconds] = [0, 1, 5, 5.5, 9]
private let ntsc: [Seconds] = (0..<5).map { Seconds(MediaTime(value: Int64($0) * 60 * 1001, timescale: 30000)) }  // GOP 2.002 s

let preRollRuleCases: [PreRollCase] = [
    PreRollCase(keyframes: everyTwo, trigger: 5, maxPreRollMs: 4000, start: 2),
    PreRollCase(keyframes: everyTwo, trigger: 5, maxPreRollMs: 0, start: 4),
    PreRollCase(keyframes: everyTwo, trigger: 6, maxPreRollMs: 0, start: 6),
    PreRollCase(keyframes: everyTwo, trigger: 6, maxPreRollMs: 4000, start: 2),
    PreRollCase(keyframes: everyTwo, trigger: 6, maxPreRollMs: 2000, start: 4),
    PreRollCase(keyframes: everyTwo, trigger: 5, maxPreRollMs: 1000, start: 4),  // P < GOP: at most c's distance
    PreRollCase(keyframes: everyTwo, trigger: 5.5, maxPreRollMs: 1000, start: 4),  // never later than c
    PreRollCase(keyframes: everyTwo, trigger: 9, maxPreRollMs: 4000, start: 6),
    PreRollCase(keyframes: everyTwo, trigger: 1, maxPreRollMs: 4000, start: 0),  // not enough history
    PreRollCase(keyframes: [10, 12, 14], trigger: 13, maxPreRollMs: 10000, start: 10),  // ring starts at 10
    PreRollCase(keyframes: [10, 12], trigger: 9, maxPreRollMs: 4000, start: nil),
    PreRollCase(keyframes: [], trigger: 5, maxPreRollMs: 4000, start: nil),
    PreRollCase(keyframes: [0, 2, 4, 6, 8, 10, 12], trigger: 5, maxPreRollMs: 4000, start: 2),  // later keyframes ignored
    PreRollCase(keyframes: irregular, trigger: 7, maxPreRollMs: 4000, start: 5),
    PreRollCase(keyframes: irregular, trigger: 9, maxPreRollMs: 4000, start: 5),
    PreRollCase(keyframes: irregular, trigger: 9, maxPreRollMs: 3500, start: 5.5),
    PreRollCase(keyframes: irregular, trigger: 0.5, maxPreRollMs: 0, start: 0),
    PreRollCase(keyframes: everyTwo, trigger: 6, maxPreRollMs: 6000, start: 0),  // t0 − P exactly on a keyframe
    PreRollCase(keyframes: everyTwo, trigger: 6.5, maxPreRollMs: 6000, start: 2),
    PreRollCase(keyframes: [0, 2, 4], trigger: "359999/90000", maxPreRollMs: 2000, start: 2),
    PreRollCase(keyframes: ntsc, trigger: "125125/30000", maxPreRollMs: 4000, start: "60060/30000"),
    PreRollCase(keyframes: ntsc, trigger: "125125/30000", maxPreRollMs: 2000, start: "120120/30000"),
    PreRollCase(keyframes: ntsc, trigger: "120120/30000", maxPreRollMs: 0, start: "120120/30000"),
    PreRollCase(keyframes: [0, 2, 4], trigger: 4.001, maxPreRollMs: 2001, start: 2),
    PreRollCase(keyframes: [0, 2, 4], trigger: 4.001, maxPreRollMs: 2000, start: 4),
    PreRollCase(keyframes: stride(from: 0, through: 30, by: 2).map { Seconds(.seconds(Int64($0))) }, trigger: 30, maxPreRollMs: 65535, start: 0),
    PreRollCase(keyframes: stride(from: 0, through: 30, by: 2).map { Seconds(.seconds(Int64($0))) }, trigger: 30, maxPreRollMs: 10000, start: 20),
    PreRollCase(keyframes: stride(from: 0, through: 30, by: 2).map { Seconds(.seconds(Int64($0))) }, trigger: 29.999, maxPreRollMs: 10000, start: 20),
]

@Suite struct PreRollRuleTests {
    @Test(arguments: preRollRuleCases)
    func startFollowsRule9(_ scenario: PreRollCase) {
        let choice = PreRollRule.start(
            keyframes: scenario.keyframes.map(\.time), trigger: scenario.trigger.time, maxPreRollMilliseconds: scenario.maxPreRollMs)
        #expect(choice?.start == scenario.start?.time)
        if let choice {
            #expect(choice.preRoll == scenario.trigger.time - choice.start)
            #expect(choice.preRoll >= .zero)
            #expect(scenario.keyframes.map(\.time).contains(choice.start))
        }
    }

    @Test(arguments: [(0, 2000, true), (200, 4000, false), (4000, 4000, true), (1999, 2000, false), (10000, 4000, true), (2000, 2002, false)])
    func allocationRefusesPreRollShorterThanAKeyframeInterval(preRoll: Int, keyFrameInterval: Int, allowed: Bool) {
        #expect(PreRollRule.isAllowed(maxPreRollMilliseconds: preRoll, keyFrameIntervalMilliseconds: keyFrameInterval) == allowed)
    }

    /// Rule 9's guarantee: when the buffer holds enough history and P ≥ the keyframe interval G,
    /// P − G < preRoll ≤ P. Checked for every frame of a minute at 30 fps for G ∈ {1, 2, 4} s, P ∈ {G, 2000, 4000, 10000} ms.
    @Test(arguments: [1, 2, 4])
    func preRollStaysWithinOneKeyframeIntervalOfP(gopSeconds: Int64) {
        let frameTicks: Int64 = 512
        let keyframes = stride(from: Int64(0), to: 120, by: Int(gopSeconds)).map { MediaTime.seconds($0) }
        let gop = MediaTime.seconds(gopSeconds)
        for p in [gopSeconds * 1000, 2000, 4000, 10000] where p >= gopSeconds * 1000 {
            let maxPreRoll = MediaTime.milliseconds(p)
            for n in Int64(30 * 15)..<Int64(30 * 75) {
                let trigger = MediaTime(value: n * frameTicks, timescale: 15360)
                guard let choice = PreRollRule.start(keyframes: keyframes, trigger: trigger, maxPreRoll: maxPreRoll) else {
                    Issue.record("no start"); return
                }
                #expect(choice.preRoll <= maxPreRoll)
                #expect(choice.preRoll > maxPreRoll - gop)
            }
        }
    }
}

// MARK: Rule 1

struct FilterCase: Sendable, CustomTestStringConvertible {
    var name: String
    var sample: MotionSample
    var filter: MotionTriggerFilter
    var matches: Bool
    var testDescription: String { name }
}

private let zoneOneAtFive = MotionSample(time: .zero, anywhere: 5, outsideZones: nil, zones: [1: 5])
private let outsideOnly = MotionSample(time: .zero, anywhere: 1, outsideZones: 1, zones: [:])
private let still = MotionSample(time: .zero, anywhere: nil, outsideZones: nil, zones: [:])
private func zone(_ id: UInt16?, _ sensitivity: Int) -> MotionTriggerFilter.ZoneEntry { .init(zone: id, sensitivity: sensitivity) }

let filterCases: [FilterCase] = [
    FilterCase(name: "no zones, High (10)", sample: zoneOneAtFive, filter: .init(sensitivity: 10), matches: true),
    FilterCase(name: "no zones, Medium (5)", sample: zoneOneAtFive, filter: .init(sensitivity: 5), matches: true),
    FilterCase(name: "no zones, Low (1)", sample: zoneOneAtFive, filter: .init(sensitivity: 1), matches: false),
    FilterCase(name: "listed zone at its sensitivity", sample: zoneOneAtFive, filter: .init(zones: [zone(1, 5)]), matches: true),
    FilterCase(name: "listed zone below its sensitivity", sample: zoneOneAtFive, filter: .init(zones: [zone(1, 4)]), matches: false),
    FilterCase(name: "another zone moved", sample: zoneOneAtFive, filter: .init(zones: [zone(2, 10)]), matches: false),
    FilterCase(name: "null zone: nothing moved outside", sample: zoneOneAtFive, filter: .init(zones: [zone(nil, 10)]), matches: false),
    FilterCase(name: "null zone: motion outside every zone", sample: outsideOnly, filter: .init(zones: [zone(nil, 1)]), matches: true),
    FilterCase(name: "listed zone still, motion outside", sample: outsideOnly, filter: .init(zones: [zone(1, 10)]), matches: false),
    FilterCase(name: "no zones, Low, strong motion", sample: outsideOnly, filter: .init(sensitivity: 1), matches: true),
    FilterCase(name: "any entry may match", sample: outsideOnly, filter: .init(zones: [zone(1, 10), zone(nil, 5)]), matches: true),
    FilterCase(name: "still frame, High", sample: still, filter: .init(sensitivity: 10), matches: false),
    FilterCase(name: "still frame, null zone", sample: still, filter: .init(zones: [zone(nil, 10)]), matches: false),
]

@Suite struct MotionTriggerFilterTests {
    @Test(arguments: filterCases)
    func matchesRule1(_ scenario: FilterCase) {
        #expect(scenario.filter.matches(scenario.sample) == scenario.matches)
    }
}

/// Issue 51 (7): a Command clip's log said `reason=motionDetectedDuration` and nothing else, which reads as if motion
/// ended it. The raw values stay the specification's (the report's `endReason`); the words say what elapsed.
@Suite struct ClipEndReasonWordsTests {
    @Test(arguments: [
        (ClipEndReason.motionDetectedDuration, TriggerType.command, "the command's duration elapsed"),
        (.motionDetectedDuration, .motion, "motion stopped extending it (t0 + D reached)"),
        (.maxDuration, .command, "the command's duration reached the maximum"),
        (.maxDuration, .motion, "the maximum duration was reached"),
        (.endOfInput, .command, "the input ended"),
        (.transportInactive, .motion, "the transport was set Inactive"),
        (.sessionLength, .continuous, "the session length was reached; the next session goes on"),
        (.interrupted, .continuous, "the recorder was stopped"),
    ])
    func wordsFitTheTrigger(_ reason: ClipEndReason, _ trigger: TriggerType, _ words: String) {
        #expect(reason.explanation(trigger: trigger) == words)
    }

    @Test func noCommandClipIsExplainedByMotion() {
        for reason in ClipEndReason.allCases {
            #expect(!reason.explanation(trigger: .command).contains("motion"), "\(reason)")
        }
        #expect(ClipEndReason.motionDetectedDuration.rawValue == "motionDetectedDuration")
    }
}
