import Domain

/// The clip timing of one transport connection as a pure, deterministic state machine (README "Clip timing",
/// rules 2–8). Feed it `TimelineInput`s in presentation order; it answers with the `ClipDecision`s to apply.
///
/// Every input first moves the clock to its time, so an activation whose t0 + D is at or before that time ends
/// before the input is looked at. Hence a sample exactly at t0 + D starts a new activation (subject to the blind
/// window) instead of augmenting the old one, matching "the clip holds every frame with PTS in [start, t0 + D)".
///
/// The timeline knows nothing about keyframes in the buffer: a `ClipBegin` carries the anchor time, and the
/// recorder picks the first sample with `PreRollRule`.
public struct ClipTimeline: Sendable {
    /// What the transport's TriggerOptions say.
    public struct Configuration: Sendable, Hashable {
        /// The transport's TriggerType.
        public var trigger: TriggerType
        /// The transport's `motionTimeControl`; also used by manual triggers that bring none.
        public var motionTimeControl: ClipTimeControl?
        /// Continuous transports start a new session at the first keyframe this long after the current one began.
        public var continuousSessionLength: MediaTime = .seconds(300)

        public init(
            trigger: TriggerType, motionTimeControl: ClipTimeControl? = nil,
            continuousSessionLength: MediaTime = .seconds(300)
        ) {
            self.trigger = trigger
            self.motionTimeControl = motionTimeControl
            self.continuousSessionLength = continuousSessionLength
        }

        public static func motion(_ timeControl: ClipTimeControl) -> Configuration {
            Configuration(trigger: .motion, motionTimeControl: timeControl)
        }
    }

    /// An activation in progress (rules 2, 3, 6). It runs whether or not the transport is Active (rule 8).
    public struct Activation: Sendable, Hashable {
        /// `.motion` or `.command`.
        public var trigger: TriggerType
        /// t0.
        public var activationTime: MediaTime
        /// The durations in force: the command's TimeControl for a manual trigger that brought one.
        public var timeControl: ClipTimeControl
        /// D.
        public var motionDetectedDuration: MediaTime
        /// prev: D before the latest increase (0 until the first augmentation).
        public var previousDuration: MediaTime
        public var augmented: Bool
        /// Samples that actually lengthened D.
        public var augmentations: Int
        /// t0 + D, exclusive.
        public var end: MediaTime { activationTime + motionDetectedDuration }
    }

    /// A recording in progress: between a `ClipBegin` and its `ClipEnd`.
    public struct Recording: Sendable, Hashable {
        public var number: Int
        public var trigger: TriggerType
        public var activationTime: MediaTime
        public var anchor: MediaTime
    }

    public let configuration: Configuration
    public private(set) var activity: TransportActivity
    /// The latest input time seen.
    public private(set) var now: MediaTime?
    public private(set) var activation: Activation?
    public private(set) var recording: Recording?
    /// Matching samples before this time are ignored (rule 5); nil when no blind window is pending.
    public private(set) var blindUntil: MediaTime?
    /// True after `.endOfInput` or `.stop`.
    public private(set) var isFinished = false
    /// After a failed recording (`.recordingFailed`): no recording begins before this time (`.retry` and a status
    /// change clear it). Nil when nothing failed since the last recording that ran.
    public private(set) var retryAt: MediaTime?
    /// Failed recordings in a row: each doubles the back-off (1 s, 2 s, 4 s … at most ``maximumRetryDelay``), so a
    /// refusal that lasts (privacy on for hours) costs one try — and one log line — every half minute, not every frame.
    public private(set) var consecutiveFailures = 0
    private var recordingsBegun = 0

    /// The longest back-off between two tries after failed recordings.
    public static let maximumRetryDelay = MediaTime.seconds(30)

    /// The back-off after `failures` failed recordings in a row (1 → 1 s).
    public static func retryDelay(afterFailures failures: Int) -> MediaTime {
        let exponent = Swift.min(Swift.max(failures - 1, 0), 5)
        return Swift.min(.seconds(Int64(1) << exponent), maximumRetryDelay)
    }

    public init(configuration: Configuration, activity: TransportActivity = .active) {
        self.configuration = configuration
        self.activity = activity
    }

    /// Applies one input and returns the decisions it causes, in order.
    public mutating func handle(_ input: TimelineInput) -> [ClipDecision] {
        guard !isFinished else { return [] }
        let t = now.map { Swift.max($0, input.time) } ?? input.time
        var decisions: [ClipDecision] = []
        endActivation(ifDueBy: t, into: &decisions)
        switch input {
        case .recordingFailed:
            // The recording the recorder could not record is gone; the next try waits for the back-off.
            recording = nil
            consecutiveFailures += 1
            retryAt = t + Self.retryDelay(afterFailures: consecutiveFailures)
            now = t
            return decisions
        case .retry:
            retryAt = nil
        default:
            break
        }
        switch input {
        case .endOfInput, .stop: break
        default:
            beginContinuousIfDue(at: t, into: &decisions)
            resumeActivationIfDue(at: t, into: &decisions)
        }

        switch input {
        case .frame(_, let isKeyframe):
            if isKeyframe { cutContinuousSessionIfDue(at: t, into: &decisions) }
        case .motion:
            if configuration.trigger == .motion { matchingSample(at: t, into: &decisions) }
        case .manualTrigger(_, let timeControl):
            manualTrigger(at: t, timeControl: timeControl, into: &decisions)
        case .status(let newActivity, _):
            setActivity(newActivity, at: t, into: &decisions)
        case .recordingFailed, .retry:
            break
        case .endOfInput, .stop:
            if let recording {
                let reason: ClipEndReason = if case .stop = input { .interrupted } else { .endOfInput }
                decisions.append(.end(endOf(recording, at: t, reason: reason)))
                self.recording = nil
            }
            activation = nil
            isFinished = true
        }
        now = t
        return decisions
    }

    // MARK: Convenience spellings of `handle`

    public mutating func frame(at time: MediaTime, isKeyframe: Bool = false) -> [ClipDecision] {
        handle(.frame(time, isKeyframe: isKeyframe))
    }

    public mutating func motion(at time: MediaTime) -> [ClipDecision] { handle(.motion(time)) }

    public mutating func manualTrigger(at time: MediaTime, timeControl: ClipTimeControl? = nil) -> [ClipDecision] {
        handle(.manualTrigger(time, timeControl: timeControl))
    }

    public mutating func setStatus(_ activity: TransportActivity, at time: MediaTime) -> [ClipDecision] {
        handle(.status(activity, time))
    }

    public mutating func endOfInput(at time: MediaTime) -> [ClipDecision] { handle(.endOfInput(time)) }

    public mutating func stop(at time: MediaTime) -> [ClipDecision] { handle(.stop(time)) }

    // MARK: Rules

    /// Rule 4 (and the start of rule 5): the activation ends at t0 + D once the clock reaches it.
    private mutating func endActivation(ifDueBy t: MediaTime, into decisions: inout [ClipDecision]) {
        guard let current = activation, current.end <= t else { return }
        if let recording {
            let reason: ClipEndReason =
                current.motionDetectedDuration == current.timeControl.maxDuration ? .maxDuration : .motionDetectedDuration
            decisions.append(.end(endOf(recording, at: current.end, reason: reason)))
            self.recording = nil
        }
        // Blind only after motion-started activations, recorded or not (rule 5); a manual one leaves none.
        let blind = current.timeControl.blindDuration
        blindUntil = current.trigger == .motion && blind > .zero ? current.end + blind : nil
        activation = nil
    }

    /// Rules 2 and 3 for a matching motion sample (and rule 6's "counts as a matching sample").
    private mutating func matchingSample(at t: MediaTime, into decisions: inout [ClipDecision]) {
        if activation != nil {
            augment(at: t, into: &decisions)
            return
        }
        if let blindUntil, t < blindUntil { return }
        guard let timeControl = configuration.motionTimeControl else { return }
        activate(.motion, at: t, timeControl: timeControl, into: &decisions)
    }

    /// Rule 6. Manual triggers ignore any pending blind window and leave none behind.
    private mutating func manualTrigger(at t: MediaTime, timeControl: ClipTimeControl?, into decisions: inout [ClipDecision]) {
        guard configuration.trigger != .continuous else { return }  // the cluster answers InvalidTriggerType first
        if activation != nil {
            augment(at: t, into: &decisions)
            return
        }
        guard var control = timeControl ?? configuration.motionTimeControl else { return }  // refused by the cluster
        control.blindDuration = .zero
        activate(.command, at: t, timeControl: control, into: &decisions)
    }

    private mutating func activate(_ trigger: TriggerType, at t: MediaTime, timeControl: ClipTimeControl, into decisions: inout [ClipDecision]) {
        activation = Activation(
            trigger: trigger, activationTime: t, timeControl: timeControl,
            motionDetectedDuration: Swift.min(timeControl.initialDuration, timeControl.maxDuration),
            previousDuration: .zero, augmented: false, augmentations: 0)
        blindUntil = nil
        // While a failed recording backs off the activation runs unrecorded; it resumes when the back-off ends.
        if activity == .active, retryIsDue(at: t) { beginRecording(anchor: t, into: &decisions) }
    }

    /// Rule 3: e = t − t0 < D holds here because activations due by t have already ended.
    private mutating func augment(at t: MediaTime, into decisions: inout [ClipDecision]) {
        guard var current = activation else { return }
        let elapsed = t - current.activationTime
        // "A later sample": a second sample at t0 itself (motion and a manual trigger in one frame) is not one.
        guard elapsed > .zero, !current.augmented || elapsed > current.previousDuration else { return }
        let lengthened = Swift.min(current.motionDetectedDuration + current.timeControl.augmentationDuration, current.timeControl.maxDuration)
        current.previousDuration = current.motionDetectedDuration
        current.augmented = true
        if lengthened > current.motionDetectedDuration {
            current.motionDetectedDuration = lengthened
            current.augmentations += 1
            decisions.append(.extend(ClipExtension(
                recording: recording?.number, activationTime: current.activationTime, time: t,
                motionDetectedDuration: lengthened, augmentations: current.augmentations)))
        }
        activation = current
    }

    /// Rule 8 (and rule 7's "records while Active").
    private mutating func setActivity(_ newActivity: TransportActivity, at t: MediaTime, into decisions: inout [ClipDecision]) {
        guard newActivity != activity else { return }
        activity = newActivity
        switch newActivity {
        case .inactive:
            if let recording {
                decisions.append(.end(endOf(recording, at: t, reason: .transportInactive)))
                self.recording = nil
            }
        case .active:
            // A status change is a new start: whatever failed before is tried again at once.
            retryAt = nil
            // Continuous was already handled by `beginContinuousIfDue` before the status changed; do it now.
            if activation != nil {
                beginRecording(anchor: t, into: &decisions)
            } else {
                beginContinuousIfDue(at: t, into: &decisions)
            }
        }
    }

    /// Rule 7: a Continuous transport records from the first input seen while Active (after a failed recording,
    /// from the first input once its back-off has passed).
    private mutating func beginContinuousIfDue(at t: MediaTime, into decisions: inout [ClipDecision]) {
        guard configuration.trigger == .continuous, activity == .active, recording == nil, retryIsDue(at: t) else { return }
        beginRecording(anchor: t, into: &decisions)
    }

    /// After a failed recording, an activation still running records its remaining time once the back-off has
    /// passed, exactly as rule 8 resumes one when the transport turns Active.
    private mutating func resumeActivationIfDue(at t: MediaTime, into decisions: inout [ClipDecision]) {
        guard activation != nil, activity == .active, recording == nil, retryAt != nil, retryIsDue(at: t) else { return }
        beginRecording(anchor: t, into: &decisions)
    }

    private func retryIsDue(at t: MediaTime) -> Bool { retryAt.map { t >= $0 } ?? true }

    /// Rule 7: the next session starts at the first keyframe at least one session length after this one began.
    private mutating func cutContinuousSessionIfDue(at t: MediaTime, into decisions: inout [ClipDecision]) {
        guard let current = recording, current.trigger == .continuous,
              t - current.anchor >= configuration.continuousSessionLength, t > current.anchor else { return }
        decisions.append(.end(endOf(current, at: t, reason: .sessionLength)))
        recording = nil
        beginRecording(anchor: t, into: &decisions)
    }

    private mutating func beginRecording(anchor: MediaTime, into decisions: inout [ClipDecision]) {
        guard recording == nil else { return }
        recordingsBegun += 1
        let trigger = activation?.trigger ?? .continuous
        let activationTime = activation?.activationTime ?? anchor
        recording = Recording(number: recordingsBegun, trigger: trigger, activationTime: activationTime, anchor: anchor)
        decisions.append(.begin(ClipBegin(
            recording: recordingsBegun, trigger: trigger, activationTime: activationTime, anchor: anchor,
            motionDetectedDuration: activation?.motionDetectedDuration, augmentations: activation?.augmentations ?? 0)))
    }

    private mutating func endOf(_ recording: Recording, at end: MediaTime, reason: ClipEndReason) -> ClipEnd {
        // It ran to a decided end: whatever failed before has gone.
        consecutiveFailures = 0
        retryAt = nil
        let current = recording.trigger == .continuous ? nil : activation
        return ClipEnd(
            recording: recording.number, trigger: recording.trigger, activationTime: recording.activationTime,
            end: end, motionDetectedDuration: current?.motionDetectedDuration,
            augmentations: current?.augmentations ?? 0, reason: reason)
    }
}
