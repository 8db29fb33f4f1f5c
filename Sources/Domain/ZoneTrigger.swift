/// One entry of the `Triggers` attribute, with its sensitivity resolved (the trigger's own under PERZONESENS,
/// else the cluster's `Sensitivity` attribute).
public struct ZoneTrigger: Sendable, Hashable {
    public var zone: UInt16
    public var timeControl: ClipTimeControl
    /// 1…10: the zone is moving when it moved at this sensitivity (see `MotionSample.zones`).
    public var sensitivity: Int

    public init(zone: UInt16, timeControl: ClipTimeControl, sensitivity: Int) {
        self.zone = zone
        self.timeControl = timeControl
        self.sensitivity = sensitivity
    }
}

/// Zone Management ZoneEventStoppedReasonEnum.
public enum ZoneStopReason: UInt8, Sendable, Hashable {
    /// What triggered the zone stopped being detected (or detection itself stopped).
    case actionStopped = 0
    /// The zone stayed triggered for MaxDuration.
    case timeout = 1
}

/// A zone's ZoneTriggered or ZoneStopped, as the camera reports them, in order.
public enum ZoneEvent: Sendable, Hashable {
    case triggered(zone: UInt16, at: MediaTime)
    case stopped(zone: UInt16, reason: ZoneStopReason, at: MediaTime)
}
