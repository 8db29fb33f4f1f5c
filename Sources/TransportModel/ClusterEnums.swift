import Domain

/// Global StreamUsageEnum.
public enum StreamUsageEnum: ClusterEnum {
    case `internal`, recording, analysis, liveView
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .internal
        case 1: self = .recording
        case 2: self = .analysis
        case 3: self = .liveView
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .internal: 0
        case .recording: 1
        case .analysis: 2
        case .liveView: 3
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}

/// TransportStatusEnum: whether the transport may carry streams.
public enum TransportStatusEnum: ClusterEnum {
    case active, inactive
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .active
        case 1: self = .inactive
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .active: 0
        case .inactive: 1
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}

/// TransportTriggerTypeEnum.
public enum TransportTriggerTypeEnum: ClusterEnum {
    /// Only a command (ManuallyTriggerTransport or a device-internal one) starts a recording.
    case command
    /// Motion in the configured zones, or ManuallyTriggerTransport.
    case motion
    /// Always records while Active.
    case continuous
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .command
        case 1: self = .motion
        case 2: self = .continuous
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .command: 0
        case .motion: 1
        case .continuous: 2
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}

extension TransportTriggerTypeEnum {
    /// The wire value of a trigger type (the one place the two convert).
    public init(_ type: TriggerType) {
        switch type {
        case .command: self = .command
        case .motion: self = .motion
        case .continuous: self = .continuous
        }
    }

    /// The trigger type this value names; nil for a value this implementation does not know.
    public var type: TriggerType? {
        switch self {
        case .command: .command
        case .motion: .motion
        case .continuous: .continuous
        case .unknown: nil
        }
    }
}

/// ContainerFormatEnum.
public enum ContainerFormatEnum: ClusterEnum {
    case cmaf
    case unknown(UInt8)

    public init(rawValue: UInt8) { self = rawValue == 0 ? .cmaf : .unknown(rawValue) }
    public var rawValue: UInt8 { if case .unknown(let raw) = self { raw } else { 0 } }
    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}

/// IngestMethodsEnum.
public enum IngestMethodsEnum: ClusterEnum {
    case cmafIngest
    case unknown(UInt8)

    public init(rawValue: UInt8) { self = rawValue == 0 ? .cmafIngest : .unknown(rawValue) }
    public var rawValue: UInt8 { if case .unknown(let raw) = self { raw } else { 0 } }
    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}


/// CMAFInterfaceEnum.
public enum CMAFInterfaceEnum: ClusterEnum {
    case interface1, interface2DASH, interface2HLS
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .interface1
        case 1: self = .interface2DASH
        case 2: self = .interface2HLS
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .interface1: 0
        case .interface2DASH: 1
        case .interface2HLS: 2
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}

/// Camera AV Stream Management VideoCodecEnum (the codec of an allocated video stream).
public enum VideoCodecEnum: ClusterEnum {
    case h264, hevc, vvc, av1
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .h264
        case 1: self = .hevc
        case 2: self = .vvc
        case 3: self = .av1
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .h264: 0
        case .hevc: 1
        case .vvc: 2
        case .av1: 3
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}

/// Camera AV Stream Management AudioCodecEnum (the codec of an allocated audio stream).
public enum AudioCodecEnum: ClusterEnum {
    case opus, aacLC
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .opus
        case 1: self = .aacLC
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .opus: 0
        case .aacLC: 1
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool { if case .unknown = self { false } else { true } }
}
