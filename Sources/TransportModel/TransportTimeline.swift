import Timeline

/// One transport connection's clip timeline wired to the cluster server: the timeline's Begin and End decisions become
/// ``PushAVStreamTransportServer/recordingStarted(connectionID:trigger:)`` and
/// ``PushAVStreamTransportServer/recordingEnded(connectionID:sessionNumber:)``, so every recording the recorder cuts
/// has exactly one PushTransportBegin and one PushTransportEnd, carrying its CMAF session number.
public struct TransportTimeline: Sendable {
    public let connectionID: UInt16
    public private(set) var timeline: ClipTimeline
    /// Timeline recording number → CMAF session number the server assigned.
    public private(set) var sessions: [Int: UInt64] = [:]
    private let activationReason: TriggerActivationReasonEnum

    /// - Parameter options: the connection's stored TransportOptions (trigger type and motion time control).
    public init(connectionID: UInt16, options: TransportOptionsStruct, status: TransportStatusEnum,
                activationReason: TriggerActivationReasonEnum = .userInitiated) {
        self.connectionID = connectionID
        self.activationReason = activationReason
        let triggers = options.triggerOptions
        let trigger: ClipTrigger = switch triggers.triggerType {
        case .motion: .motion
        case .continuous: .continuous
        default: .command
        }
        timeline = ClipTimeline(
            configuration: .init(trigger: trigger, motionTimeControl: triggers.motionTimeControl.map(ClipTimeControl.init)),
            activity: status == .active ? .active : .inactive)
    }

    /// Feeds one input to the timeline and reports its decisions to `server`; returns the decisions.
    public mutating func handle(_ input: TimelineInput, server: PushAVStreamTransportServer) async throws -> [ClipDecision] {
        let decisions = timeline.handle(input)
        for decision in decisions {
            switch decision {
            case .begin(let begin):
                let trigger: RecordingTrigger = switch begin.trigger {
                case .motion: .motion
                case .continuous: .continuous
                case .command: .command(activationReason)
                }
                sessions[begin.recording] = try await server.recordingStarted(connectionID: connectionID, trigger: trigger)
            case .end(let end):
                if let session = sessions[end.recording] {
                    _ = await server.recordingEnded(connectionID: connectionID, sessionNumber: session)
                }
            case .extend:
                break
            }
        }
        return decisions
    }
}

extension ClipTimeControl {
    /// The cluster's `TransportMotionTriggerTimeControlStruct` (whole seconds).
    public init(_ control: TransportMotionTriggerTimeControlStruct) {
        self.init(initial: Int64(control.initialDuration), augmentation: Int64(control.augmentationDuration),
                  max: Int64(control.maxDuration), blind: Int64(control.blindDuration))
    }
}
