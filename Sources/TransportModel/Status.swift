/// The cluster-specific StatusCodeEnum, final Matter 1.5 / 1.5.1 values (not the pre-1.5 draft numbering).
public enum StatusCodeEnum: UInt8, Codable, Sendable, CaseIterable {
    case invalidTLSEndpoint = 0x02
    case invalidStream = 0x03
    case invalidURL = 0x04
    case invalidZone = 0x05
    case invalidCombination = 0x06
    case invalidTriggerType = 0x07
    case invalidTransportStatus = 0x08
    case invalidOptions = 0x09
    case invalidStreamUsage = 0x0A
    case invalidTime = 0x0B
    /// Cluster revision 2 (Matter 1.5.1).
    case invalidPreRollLength = 0x0C
    /// Cluster revision 2 (Matter 1.5.1).
    case duplicateStreamValues = 0x0D
}

/// The Interaction Model status codes these commands can answer with.
public enum InteractionModelStatus: UInt8, Codable, Sendable, CaseIterable {
    case success = 0x00
    case failure = 0x01
    case unsupportedAccess = 0x7E
    case unsupportedCommand = 0x81
    case invalidCommand = 0x85
    case unsupportedAttribute = 0x86
    case constraintError = 0x87
    case resourceExhausted = 0x89
    case notFound = 0x8B
    case busy = 0x9C
    case invalidInState = 0xCB
    case dynamicConstraintError = 0xCF
    case alreadyExists = 0xD0
}

/// How a command failed: an Interaction Model status, or FAILURE carrying a cluster-specific status code.
public enum TransportStatus: Sendable, Hashable, CustomStringConvertible {
    case interactionModel(InteractionModelStatus)
    case cluster(StatusCodeEnum)

    public var description: String {
        switch self {
        case .interactionModel(let status): "\(status)"
        case .cluster(let status): "cluster \(status)"
        }
    }
}

/// A refused command: the status the controller receives and a message naming the offending field.
public struct TransportCommandError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: TransportStatus
    public var message: String

    public init(_ status: TransportStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    public static func im(_ status: InteractionModelStatus, _ message: String) -> Self {
        Self(.interactionModel(status), message)
    }

    public static func cluster(_ status: StatusCodeEnum, _ message: String) -> Self {
        Self(.cluster(status), message)
    }

    public var description: String { "\(status): \(message)" }
}
