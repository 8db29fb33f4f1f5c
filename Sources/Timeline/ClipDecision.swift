import Domain

/// Why a recording ended (the report's `endReason`).
///
/// The first three are the values of the README's rule 4 and the only ones a file recording without status
/// changes can produce. The last two exist because the timeline also models status changes and Continuous
/// transports, which end recordings for reasons rule 4 does not name.
public enum ClipEndReason: String, Sendable, Hashable, CaseIterable {
    /// t0 + D was reached and D < M.
    case motionDetectedDuration
    /// t0 + D was reached and D = M.
    case maxDuration
    /// The input ended before t0 + D.
    case endOfInput
    /// SetTransportStatus(Inactive) stopped the recording (rule 8); the activation itself may go on.
    case transportInactive
    /// A Continuous recording was cut at a keyframe to start the next session (rule 7).
    case sessionLength
    /// The recorder was asked to stop (Ctrl-C, SIGTERM, a service shutting down) before the clip's own end: the
    /// clip ends at the last frame read.
    case interrupted

    /// The reason in plain words for logs and the CLI's summary. The raw values are the specification's
    /// (`motionDetectedDuration` names t0 + D whatever started the activation), which misleads a reader of a
    /// Command clip's log; the words say what elapsed for the trigger that `trigger` names.
    public func explanation(trigger: TriggerType) -> String {
        switch self {
        case .motionDetectedDuration:
            trigger == .command ? "the command's duration elapsed" : "motion stopped extending it (t0 + D reached)"
        case .maxDuration:
            trigger == .command ? "the command's duration reached the maximum" : "the maximum duration was reached"
        case .endOfInput: "the input ended"
        case .transportInactive: "the transport was set Inactive"
        case .sessionLength: "the session length was reached; the next session goes on"
        case .interrupted: "the recorder was stopped"
        }
    }
}

/// Whether the transport may record (SetTransportStatus).
public enum TransportActivity: String, Sendable, Hashable {
    case active
    case inactive
}

/// A recording starts: the recorder opens a new CMAF session.
public struct ClipBegin: Sendable, Hashable {
    /// 1, 2, 3, … in the order this timeline began recordings; the recorder maps it to a session number.
    public var recording: Int
    public var trigger: TriggerType
    /// t0, the activation time. For Continuous recordings, the time this recording began.
    public var activationTime: MediaTime
    /// The time the pre-roll rule (rule 9) is anchored at: t0 for a fresh activation; the time the transport
    /// turned Active for a recording resumed under rule 8; the cut keyframe for a Continuous session change.
    public var anchor: MediaTime
    /// D at the moment of the Begin; nil for Continuous.
    public var motionDetectedDuration: MediaTime?
    /// Augmentations so far (non-zero only for a recording resumed under rule 8).
    public var augmentations: Int = 0

    public init(
        recording: Int, trigger: TriggerType, activationTime: MediaTime, anchor: MediaTime,
        motionDetectedDuration: MediaTime? = nil, augmentations: Int = 0
    ) {
        self.recording = recording
        self.trigger = trigger
        self.activationTime = activationTime
        self.anchor = anchor
        self.motionDetectedDuration = motionDetectedDuration
        self.augmentations = augmentations
    }

    /// t0 + D as known at the Begin (augmentations may move it later); nil for Continuous.
    public var scheduledEnd: MediaTime? {
        motionDetectedDuration.map { activationTime + $0 }
    }
}

/// A running recording's activation got longer (rule 3). Informational: the recorder needs no action.
public struct ClipExtension: Sendable, Hashable {
    /// The recording it applies to, or nil when the transport is Inactive and nothing is being recorded.
    public var recording: Int?
    public var activationTime: MediaTime
    /// The sample's time.
    public var time: MediaTime
    /// D after the increase.
    public var motionDetectedDuration: MediaTime
    public var augmentations: Int

    public init(
        recording: Int? = nil, activationTime: MediaTime, time: MediaTime, motionDetectedDuration: MediaTime,
        augmentations: Int
    ) {
        self.recording = recording
        self.activationTime = activationTime
        self.time = time
        self.motionDetectedDuration = motionDetectedDuration
        self.augmentations = augmentations
    }

    public var scheduledEnd: MediaTime { activationTime + motionDetectedDuration }
}

/// A recording ends: the recorder writes every frame with PTS in [start, `end`) and closes the session.
public struct ClipEnd: Sendable, Hashable {
    public var recording: Int
    public var trigger: TriggerType
    public var activationTime: MediaTime
    /// Exclusive end on the media timeline: t0 + D, or the end of input / status change / session cut.
    public var end: MediaTime
    /// The final D; nil for Continuous.
    public var motionDetectedDuration: MediaTime?
    /// How many samples lengthened D (samples that found D already at M do not count).
    public var augmentations: Int
    public var reason: ClipEndReason

    public init(
        recording: Int, trigger: TriggerType, activationTime: MediaTime, end: MediaTime,
        motionDetectedDuration: MediaTime? = nil, augmentations: Int, reason: ClipEndReason
    ) {
        self.recording = recording
        self.trigger = trigger
        self.activationTime = activationTime
        self.end = end
        self.motionDetectedDuration = motionDetectedDuration
        self.augmentations = augmentations
        self.reason = reason
    }
}

/// One output of `ClipTimeline`, in the order the recorder must apply them.
public enum ClipDecision: Sendable, Hashable {
    case begin(ClipBegin)
    case extend(ClipExtension)
    case end(ClipEnd)
}

/// One input of `ClipTimeline`. Times are presentation times on the input's timeline and must not decrease
/// (an earlier time is treated as the latest time seen, so a late sample can never rewrite history).
public enum TimelineInput: Sendable, Hashable {
    /// A video frame was read. Lets clips end exactly at t0 + D and lets Continuous recordings cut at keyframes.
    case frame(MediaTime, isKeyframe: Bool)
    /// An analysed frame whose motion matches this transport (rule 1; see `MotionTriggerFilter`).
    case motion(MediaTime)
    /// ManuallyTriggerTransport, with the command's optional `TimeControl` (its blind duration is ignored).
    case manualTrigger(MediaTime, timeControl: ClipTimeControl?)
    /// SetTransportStatus.
    case status(TransportActivity, MediaTime)
    /// The input ended at this time (the end of its last frame). Every later input is ignored.
    case endOfInput(MediaTime)
    /// The recorder was asked to stop; this is the end of the last frame it read. Like `endOfInput`, but a recording
    /// still running ends as `interrupted` (one that was due by then keeps its own reason).
    case stop(MediaTime)
    /// The recorder could not record the recording in progress: the cluster refused its Begin (privacy, a full
    /// disk, …) or its session writer failed. The recording is gone without a decision (the recorder announced
    /// whatever End is due itself); the timeline tries again after a back-off — a Continuous transport begins anew,
    /// an activation still running resumes for its remaining time (as rule 8 does for a transport turned Active).
    case recordingFailed(MediaTime)
    /// Whatever made recordings fail may have gone (privacy turned off, the transport modified, the camera's state
    /// changed): a pending retry is due now instead of after its back-off.
    case retry(MediaTime)

    public var time: MediaTime {
        switch self {
        case .frame(let t, _), .motion(let t), .manualTrigger(let t, _), .status(_, let t), .endOfInput(let t), .stop(let t),
             .recordingFailed(let t), .retry(let t): t
        }
    }
}
