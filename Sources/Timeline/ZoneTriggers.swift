import Domain

/// Zone Management's triggers (the `Triggers` attribute) as a pure state machine: which zones are *triggered* — the
/// camera's ZoneTriggered and ZoneStopped events — as analysed pictures come in.
///
/// A zone's trigger follows the same four durations as a Motion transport's clip (ZoneTriggerControlStruct carries
/// InitialDuration, AugmentationDuration, MaxDuration and BlindDuration, the fields of a transport's
/// `motionTimeControl`), so each zone runs its own `ClipTimeline` and the two can never disagree about what "motion
/// lasting D seconds" means: a zone's activation is a ZoneTriggered, its end is a ZoneStopped — `Timeout` when it
/// ran to MaxDuration, `ActionStopped` when motion stopped (no augmenting sample before t0 + D), when analysis ended,
/// or when the trigger was removed.
///
/// Times are the analysed pictures' presentation times. A trigger whose durations change while its zone is
/// triggered keeps the running activation under the old durations; the new ones apply from the next activation (and
/// the blind window the old activation left is kept).
public struct ZoneTriggers: Sendable {
    private struct ZoneState: Sendable {
        var trigger: ZoneTrigger
        var timeline: ClipTimeline
        /// Durations (and sensitivity) to use from the next activation on.
        var pending: ZoneTrigger?
        /// A blind window carried over from a timeline that was replaced.
        var blindUntil: MediaTime?

        init(_ trigger: ZoneTrigger, blindUntil: MediaTime? = nil) {
            self.trigger = trigger
            self.timeline = ClipTimeline(configuration: .motion(trigger.timeControl))
            self.blindUntil = blindUntil
        }

        var isTriggered: Bool { timeline.activation != nil }
    }

    private var zones: [UInt16: ZoneState] = [:]
    private var now: MediaTime?

    public init(_ triggers: [ZoneTrigger] = []) {
        for trigger in triggers { zones[trigger.zone] = ZoneState(trigger) }
    }

    /// The zones triggered now, in ID order.
    public var triggeredZones: [UInt16] { zones.filter { $0.value.isTriggered }.keys.sorted() }

    /// The triggers in force, in zone order.
    public var triggers: [ZoneTrigger] { zones.values.map { $0.pending ?? $0.trigger }.sorted { $0.zone < $1.zone } }

    /// One analysed picture: `sample.zones` says at which sensitivity each zone moved.
    public mutating func analysed(_ sample: MotionSample) -> [ZoneEvent] {
        let t = now.map { max($0, sample.time) } ?? sample.time
        now = t
        var events: [ZoneEvent] = []
        for zone in zones.keys.sorted() {
            guard var state = zones[zone] else { continue }
            let moving = sample.zones[zone].map { $0 <= state.trigger.sensitivity } ?? false
            let blind = state.blindUntil.map { t < $0 } ?? false
            let decisions = moving && !blind ? state.timeline.motion(at: t) : state.timeline.frame(at: t)
            events += Self.events(decisions, zone: zone)
            if !state.isTriggered, let next = state.pending {
                // The running activation ended: the changed durations apply from now on, after its blind window.
                state = ZoneState(next, blindUntil: state.timeline.blindUntil)
                // This picture was already looked at by the old timeline; it cannot start the new one's activation.
                _ = state.timeline.frame(at: t)
            }
            if let until = state.blindUntil, t >= until { state.blindUntil = nil }
            zones[zone] = state
        }
        return events
    }

    /// The `Triggers` attribute changed: a removed trigger whose zone is triggered stops (`ActionStopped`) at the
    /// latest analysed time; a changed one applies from its zone's next activation.
    public mutating func replace(with triggers: [ZoneTrigger]) -> [ZoneEvent] {
        var events: [ZoneEvent] = []
        let wanted = Dictionary(triggers.map { ($0.zone, $0) }, uniquingKeysWith: { _, last in last })
        for zone in zones.keys.sorted() where wanted[zone] == nil {
            if zones[zone]!.isTriggered, let now { events.append(.stopped(zone: zone, reason: .actionStopped, at: now)) }
            zones[zone] = nil
        }
        for (zone, trigger) in wanted {
            guard var state = zones[zone] else {
                zones[zone] = ZoneState(trigger)
                continue
            }
            if state.trigger == trigger {
                state.pending = nil
            } else if state.isTriggered {
                state.pending = trigger
            } else {
                state = ZoneState(trigger, blindUntil: state.timeline.blindUntil ?? state.blindUntil)
                if let now { _ = state.timeline.frame(at: now) }
            }
            zones[zone] = state
        }
        return events
    }

    /// Analysis ended at `time` (the source was lost, the recording stopped): every triggered zone stops
    /// (`ActionStopped`, or `Timeout` when MaxDuration was reached by then). The triggers stay for the next pass,
    /// which starts with no zone triggered and no blind window (its media time starts over).
    public mutating func finish(at time: MediaTime) -> [ZoneEvent] {
        var events: [ZoneEvent] = []
        for zone in zones.keys.sorted() {
            guard let state = zones[zone] else { continue }
            var timeline = state.timeline
            let ended = Self.events(timeline.frame(at: time), zone: zone)
            events += ended
            if ended.isEmpty, state.isTriggered {
                events.append(.stopped(zone: zone, reason: .actionStopped, at: time))
            }
            zones[zone] = ZoneState(state.pending ?? state.trigger)
        }
        now = nil
        return events
    }

    private static func events(_ decisions: [ClipDecision], zone: ZoneID) -> [ZoneEvent] {
        decisions.compactMap { decision in
            switch decision {
            case .begin(let begin): .triggered(zone: zone, at: begin.activationTime)
            case .end(let end): .stopped(zone: zone, reason: end.reason == .maxDuration ? .timeout : .actionStopped, at: end.end)
            case .extend: nil
            }
        }
    }
}
