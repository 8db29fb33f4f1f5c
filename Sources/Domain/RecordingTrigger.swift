/// What starts a transport's recordings: the three values of Matter's TransportTriggerTypeEnum, as the timeline, the
/// recorder, its report and the command line speak of them. Why one type: the timeline had `TriggerType`, the command
/// line `TriggerOption`, and each converted to and from the cluster's wire enum on its own; now the wire enum
/// (`TransportTriggerTypeEnum`, which must also carry values it does not know) converts to this in one place.
public enum TriggerType: String, Sendable, Hashable, CaseIterable, Codable {
    /// ManuallyTriggerTransport activates the recording.
    case command
    /// A matching motion sample activates the recording (a command may too).
    case motion
    /// The transport records whenever it is Active.
    case continuous
}

/// What started one recording, as the recorder reports it to the cluster (which turns it into PushTransportBegin's
/// TriggerType and ActivationReason): its trigger type, and a command's reason.
public enum RecordingTrigger: Sendable, Hashable {
    case motion
    case continuous
    /// ManuallyTriggerTransport (or a device-internal command such as a doorbell press).
    case command(TriggerActivationReasonEnum)

    /// The recording's trigger type; `commandReason` for a command (ManuallyTriggerTransport's ActivationReason).
    public init(_ type: TriggerType, commandReason: TriggerActivationReasonEnum) {
        switch type {
        case .motion: self = .motion
        case .continuous: self = .continuous
        case .command: self = .command(commandReason)
        }
    }

    public var type: TriggerType {
        switch self {
        case .motion: .motion
        case .continuous: .continuous
        case .command: .command
        }
    }
}

/// TriggerActivationReasonEnum (DoorbellPressed since cluster revision 2): why a command started a recording. The one
/// cluster enum the recorder carries (from ManuallyTriggerTransport to the Begin), so it lives here, in its wire form.
public enum TriggerActivationReasonEnum: ClusterEnum {
    case userInitiated, automation, emergency, doorbellPressed
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .userInitiated
        case 1: self = .automation
        case 2: self = .emergency
        case 3: self = .doorbellPressed
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .userInitiated: 0
        case .automation: 1
        case .emergency: 2
        case .doorbellPressed: 3
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}

/// An enum8 of a Matter cluster (the protocol of the cluster model's wire enums, here for the one the domain carries): known cases carry their wire value, anything else is kept as `.unknown(raw)`.
///
/// Unknown values must survive decoding because the commands answer them with CONSTRAINT_ERROR (reference order,
/// §2.2) rather than failing to parse. JSON holds the wire value as a number, so every value round-trips.
/// Always construct from wire values with `init(rawValue:)`, which never produces `.unknown` for a known value.
public protocol ClusterEnum: RawRepresentable, Codable, Hashable, Sendable where RawValue == UInt8 {
    init(rawValue: UInt8)
    /// False for values this implementation does not know.
    var isKnown: Bool { get }
}

extension ClusterEnum {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(UInt8.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
