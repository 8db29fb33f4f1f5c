import Domain
import Testing
import Timeline

/// Zone Management triggers: ZoneTriggered/ZoneStopped from analysed pictures, by table. Pictures come every 0.5 s;
/// a case lists the seconds at which zone 1 moved (at sensitivity 5; the trigger's sensitivity is 5 unless the case
/// says otherwise) and expects the events, as `+t` (triggered) and `-t:reason`.
struct ZoneTriggersTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var control: ClipTimeControl
        var sensitivity = 5
        var movedAtSensitivity = 5
        var motion: [Double]
        var until: Double
        var expected: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "one movement: triggered at once, stopped InitialDuration later",
             control: .init(initial: 3, augmentation: 2, max: 10, blind: 0), motion: [1], until: 8,
             expected: ["+1.0", "-4.0:actionStopped"]),
        Case(name: "motion while triggered augments; stops after the last augmentation",
             control: .init(initial: 3, augmentation: 2, max: 10, blind: 0), motion: [1, 2, 4.5], until: 12,
             expected: ["+1.0", "-8.0:actionStopped"]),
        Case(name: "motion that lasts reaches MaxDuration: Timeout",
             control: .init(initial: 2, augmentation: 2, max: 5, blind: 0), motion: Array(stride(from: 1, through: 9, by: 0.5)),
             until: 12, expected: ["+1.0", "-6.0:timeout", "+6.0", "-11.0:timeout"]),
        Case(name: "motion in the blind window after a stop is ignored",
             control: .init(initial: 2, augmentation: 1, max: 10, blind: 3), motion: [1, 4, 5, 6.5], until: 12,
             expected: ["+1.0", "-3.0:actionStopped", "+6.5", "-8.5:actionStopped"]),
        Case(name: "a zone that moved only at a higher sensitivity does not trigger",
             control: .init(initial: 2, augmentation: 1, max: 10, blind: 0), sensitivity: 4, movedAtSensitivity: 5,
             motion: [1, 2], until: 6, expected: []),
        Case(name: "the end of analysis stops a triggered zone",
             control: .init(initial: 20, augmentation: 1, max: 30, blind: 0), motion: [1], until: 5,
             expected: ["+1.0", "-5.0:actionStopped"]),
    ]

    @Test(arguments: cases)
    func events(_ c: Case) {
        var triggers = ZoneTriggers([.init(zone: 1, timeControl: c.control, sensitivity: c.sensitivity)])
        var events: [ZoneEvent] = []
        for tick in stride(from: 0.0, through: c.until, by: 0.5) {
            let moved = c.motion.contains(tick)
            events += triggers.analysed(MotionSample(
                time: MediaTime(seconds: tick), anywhere: moved ? c.movedAtSensitivity : nil, outsideZones: nil,
                zones: moved ? [1: c.movedAtSensitivity] : [:]))
        }
        events += triggers.finish(at: MediaTime(seconds: c.until))
        #expect(events.map(Self.describe) == c.expected)
    }

    @Test func zonesAreIndependentAndOnlyTriggersCount() {
        let control = ClipTimeControl(initial: 2, augmentation: 1, max: 10, blind: 0)
        var triggers = ZoneTriggers([.init(zone: 1, timeControl: control, sensitivity: 10),
                                     .init(zone: 2, timeControl: control, sensitivity: 10)])
        var events = triggers.analysed(MotionSample(time: .seconds(1), anywhere: 3, outsideZones: 3, zones: [2: 3, 7: 3]))
        #expect(events == [.triggered(zone: 2, at: .seconds(1))])  // zone 7 has no trigger
        #expect(triggers.triggeredZones == [2])
        events = triggers.analysed(MotionSample(time: .seconds(2), anywhere: 3, outsideZones: nil, zones: [1: 3]))
        #expect(events == [.triggered(zone: 1, at: .seconds(2))])
        #expect(triggers.triggeredZones == [1, 2])
    }

    @Test func removingATriggerStopsItsZoneAndChangesWaitForTheNextActivation() {
        let short = ClipTimeControl(initial: 2, augmentation: 1, max: 10, blind: 0)
        let long = ClipTimeControl(initial: 6, augmentation: 1, max: 10, blind: 0)
        var triggers = ZoneTriggers([.init(zone: 1, timeControl: short, sensitivity: 10),
                                     .init(zone: 2, timeControl: short, sensitivity: 10)])
        _ = triggers.analysed(MotionSample(time: .seconds(1), anywhere: 1, outsideZones: nil, zones: [1: 1, 2: 1]))
        // Zone 1's trigger goes; zone 2's gets longer durations while it is triggered.
        let removed = triggers.replace(with: [.init(zone: 2, timeControl: long, sensitivity: 10)])
        #expect(removed == [.stopped(zone: 1, reason: .actionStopped, at: .seconds(1))])
        // Zone 2's running activation keeps its 2 s …
        var events = triggers.analysed(MotionSample(time: .seconds(3), anywhere: nil, outsideZones: nil))
        #expect(events == [.stopped(zone: 2, reason: .actionStopped, at: .seconds(3))])
        // … and the next one lasts the new 6 s.
        events = triggers.analysed(MotionSample(time: .seconds(4), anywhere: 1, outsideZones: nil, zones: [1: 1, 2: 1]))
        #expect(events == [.triggered(zone: 2, at: .seconds(4))])
        events = triggers.analysed(MotionSample(time: .seconds(9), anywhere: nil, outsideZones: nil))
        #expect(events.isEmpty)
        events = triggers.analysed(MotionSample(time: .seconds(10), anywhere: nil, outsideZones: nil))
        #expect(events == [.stopped(zone: 2, reason: .actionStopped, at: .seconds(10))])
        #expect(triggers.triggers.map(\.zone) == [2])
    }

    static func describe(_ event: ZoneEvent) -> String {
        switch event {
        case .triggered(_, let at): "+\(at.seconds)"
        case .stopped(_, let reason, let at): "-\(at.seconds):\(reason)"
        }
    }
}
