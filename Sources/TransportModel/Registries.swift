import Domain
import Foundation

/// What the Push AV Stream Transport commands validate against and the service configures: the other clusters of
/// the camera's endpoint, each its own value with its own rules. Persisted alongside the connections.
public struct TransportRegistries: Sendable, Hashable {
    /// TLS Client Management.
    public var tls: TLSClientEndpoints
    /// Zone Management.
    public var zoneManagement: ZoneManagement
    /// Camera AV Stream Management (streams and privacy).
    public var streams: CameraAVStreams

    public init(tls: TLSClientEndpoints, zoneManagement: ZoneManagement, streams: CameraAVStreams) {
        self.tls = tls
        self.zoneManagement = zoneManagement
        self.streams = streams
    }

    /// Every cluster's contents at once, as configuration and fixtures list them.
    public init(
        tlsEndpoints: [TLSEndpoint] = [], zones: [MotionZone] = [], videoStreams: [AllocatedVideoStream] = [],
        audioStreams: [AllocatedAudioStream] = [], privacyModes: PrivacyModes = PrivacyModes(),
        zoneTriggers: [ZoneTriggerControlStruct] = [], zoneSensitivity: UInt8 = ZoneManagement.defaultSensitivity
    ) {
        self.init(tls: TLSClientEndpoints(tlsEndpoints),
                  zoneManagement: ZoneManagement(zones: zones, triggers: zoneTriggers, sensitivity: zoneSensitivity),
                  streams: CameraAVStreams(video: videoStreams, audio: audioStreams, privacy: privacyModes))
    }
}

/// The persistence sections of `TransportRegistries`, one per cluster: what a write has to store.
public struct RegistrySections: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let tlsClient = Self(rawValue: 1 << 0)
    public static let zoneManagement = Self(rawValue: 1 << 1)
    public static let streams = Self(rawValue: 1 << 2)
    public static let all: Self = [.tlsClient, .zoneManagement, .streams]
}

extension TransportRegistries {
    /// The sections in which `other` differs from these registries.
    public func sections(differingFrom other: TransportRegistries) -> RegistrySections {
        var changed: RegistrySections = []
        if tls != other.tls { changed.insert(.tlsClient) }
        if zoneManagement != other.zoneManagement { changed.insert(.zoneManagement) }
        if streams != other.streams { changed.insert(.streams) }
        return changed
    }
}

/// The cluster's FeatureMap.
public struct PushAVStreamTransportFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// PERZONESENS: sensitivity is set per motion zone instead of once per transport.
    public static let perZoneSensitivity = Self(rawValue: 0x1)
    /// METADATA: transports may carry a metadata track.
    public static let metadata = Self(rawValue: 0x2)
}

/// What this device can do; fixed for the lifetime of the process (not persisted).
public struct TransportCapabilities: Sendable, Hashable {
    public var features: PushAVStreamTransportFeatures = []
    /// The SupportedFormats attribute; must contain (CMAF, CMAFIngest).
    public var supportedFormats: [SupportedFormatStruct] = [SupportedFormatStruct(containerFormat: .cmaf, ingestMethod: .cmafIngest)]
    /// Stream usages the camera supports (its StreamUsagePriorities); others answer InvalidStreamUsage.
    public var supportedStreamUsages: Set<StreamUsageEnum> = [.recording, .analysis, .liveView]
    /// Zone Management MaxZones: a trigger may list up to this many zones.
    public var maxZones: UInt8 = 8
    /// CMAF interfaces the uploader implements; others are refused with FAILURE, as the reference camera does.
    public var supportedCMAFInterfaces: Set<CMAFInterfaceEnum> = [.interface1]
    /// Codecs the recorder can package; others are refused with FAILURE.
    public var supportedVideoCodecs: Set<VideoCodecEnum> = [.h264]
    public var supportedAudioCodecs: Set<AudioCodecEnum> = [.opus, .aacLC]
    /// Camera MaxNetworkBandwidth in bits per second; nil = not limited.
    public var maxNetworkBandwidth: UInt32?

    public init(
        features: PushAVStreamTransportFeatures = [],
        supportedFormats: [SupportedFormatStruct] = [SupportedFormatStruct(containerFormat: .cmaf, ingestMethod: .cmafIngest)],
        supportedStreamUsages: Set<StreamUsageEnum> = [.recording, .analysis, .liveView], maxZones: UInt8 = 8,
        supportedCMAFInterfaces: Set<CMAFInterfaceEnum> = [.interface1],
        supportedVideoCodecs: Set<VideoCodecEnum> = [.h264],
        supportedAudioCodecs: Set<AudioCodecEnum> = [.opus, .aacLC], maxNetworkBandwidth: UInt32? = nil
    ) {
        self.features = features
        self.supportedFormats = supportedFormats
        self.supportedStreamUsages = supportedStreamUsages
        self.maxZones = maxZones
        self.supportedCMAFInterfaces = supportedCMAFInterfaces
        self.supportedVideoCodecs = supportedVideoCodecs
        self.supportedAudioCodecs = supportedAudioCodecs
        self.maxNetworkBandwidth = maxNetworkBandwidth
    }
}
