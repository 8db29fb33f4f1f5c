/// What started a recording, as the recorder reports it to the cluster (which turns it into PushTransportBegin's
/// TriggerType and ActivationReason).
public enum RecordingTrigger: Sendable, Hashable {
    case motion
    case continuous
    /// ManuallyTriggerTransport (or a device-internal command such as a doorbell press).
    case command(TriggerActivationReasonEnum)
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
