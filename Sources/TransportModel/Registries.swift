import Domain
import Foundation

/// A TLS Client Management endpoint provisioned by one fabric: where to connect and the material for mutual TLS.
public struct TLSEndpoint: Codable, Sendable, Hashable {
    public var fabricIndex: FabricIndex
    public var endpointID: UInt16
    public var hostname: String
    public var port: UInt16
    /// The root certificate (DER or PEM bytes) the server's chain must lead to (the endpoint's TLSCAID).
    public var caCertificate: Data
    /// The client certificate chain, leaf first (the endpoint's TLSCCDID).
    public var clientCertificateChain: [Data]
    /// The client certificate's private key.
    public var privateKey: Data

    public init(
        fabricIndex: FabricIndex, endpointID: UInt16, hostname: String, port: UInt16, caCertificate: Data,
        clientCertificateChain: [Data], privateKey: Data
    ) {
        self.fabricIndex = fabricIndex
        self.endpointID = endpointID
        self.hostname = hostname
        self.port = port
        self.caCertificate = caCertificate
        self.clientCertificateChain = clientCertificateChain
        self.privateKey = privateKey
    }
}

/// Identifies a TLS endpoint: endpoint IDs are per fabric.
extension TLSEndpoint {
    /// Its fabric and endpoint ID: how the registry and the stores find it.
    public var key: TLSEndpointKey { TLSEndpointKey(fabricIndex: fabricIndex, endpointID: endpointID) }
}

public struct TLSEndpointKey: Sendable, Hashable {
    public var fabricIndex: FabricIndex
    public var endpointID: UInt16

    public init(fabricIndex: FabricIndex, endpointID: UInt16) {
        self.fabricIndex = fabricIndex
        self.endpointID = endpointID
    }
}

/// A video stream the camera has allocated (Camera AV Stream Management AllocatedVideoStreams).
public struct AllocatedVideoStream: Codable, Sendable, Hashable {
    public var videoStreamID: UInt16
    public var codec: VideoCodecEnum
    /// Milliseconds between key frames; segment durations and pre-roll lengths are checked against it.
    public var keyFrameInterval: UInt16
    public var streamUsage: StreamUsageEnum
    /// Bits per second, counted against `TransportCapabilities.maxNetworkBandwidth`.
    public var maxBitRate: UInt32

    public init(
        videoStreamID: UInt16, codec: VideoCodecEnum = .h264, keyFrameInterval: UInt16,
        streamUsage: StreamUsageEnum, maxBitRate: UInt32 = 0
    ) {
        self.videoStreamID = videoStreamID
        self.codec = codec
        self.keyFrameInterval = keyFrameInterval
        self.streamUsage = streamUsage
        self.maxBitRate = maxBitRate
    }
}

/// An audio stream the camera has allocated (Camera AV Stream Management AllocatedAudioStreams).
public struct AllocatedAudioStream: Codable, Sendable, Hashable {
    public var audioStreamID: UInt16
    public var codec: AudioCodecEnum
    public var streamUsage: StreamUsageEnum
    /// Bits per second.
    public var bitRate: UInt32

    public init(audioStreamID: UInt16, codec: AudioCodecEnum = .opus, streamUsage: StreamUsageEnum, bitRate: UInt32 = 0) {
        self.audioStreamID = audioStreamID
        self.codec = codec
        self.streamUsage = streamUsage
        self.bitRate = bitRate
    }
}

/// The camera's privacy switches (Camera AV Stream Management attributes).
public struct PrivacyModes: Codable, Sendable, Hashable {
    /// A physical switch: nothing may stream.
    public var hardPrivacyModeOn: Bool
    /// No recording or analysis uploads.
    public var softRecordingPrivacyModeEnabled: Bool
    /// No live-view uploads.
    public var softLivestreamPrivacyModeEnabled: Bool

    public init(hardPrivacyModeOn: Bool = false, softRecordingPrivacyModeEnabled: Bool = false,
                softLivestreamPrivacyModeEnabled: Bool = false) {
        self.hardPrivacyModeOn = hardPrivacyModeOn
        self.softRecordingPrivacyModeEnabled = softRecordingPrivacyModeEnabled
        self.softLivestreamPrivacyModeEnabled = softLivestreamPrivacyModeEnabled
    }

    public var anyOn: Bool { hardPrivacyModeOn || softRecordingPrivacyModeEnabled || softLivestreamPrivacyModeEnabled }

    /// Whether these modes forbid uploading a stream of `usage` (ManuallyTriggerTransport's privacy check).
    public func forbids(_ usage: StreamUsageEnum) -> Bool {
        if hardPrivacyModeOn { return true }
        switch usage {
        case .liveView: return softLivestreamPrivacyModeEnabled
        case .recording, .analysis: return softRecordingPrivacyModeEnabled
        case .internal, .unknown: return false
        }
    }
}

/// What the commands validate against and the service configures: TLS endpoints, zones, allocated streams and
/// privacy. Persisted alongside the connections.
public struct TransportRegistries: Sendable, Hashable {
    public var tlsEndpoints: [TLSEndpointKey: TLSEndpoint]
    public var zones: [UInt16: MotionZone]
    public var videoStreams: [UInt16: AllocatedVideoStream]
    public var audioStreams: [UInt16: AllocatedAudioStream]
    public var privacyModes: PrivacyModes
    /// Zone Management's Triggers attribute, by zone.
    public var zoneTriggers: [UInt16: ZoneTriggerControlStruct]
    /// Zone Management's Sensitivity attribute (ignored under PERZONESENS).
    public var zoneSensitivity: UInt8

    public init(
        tlsEndpoints: [TLSEndpoint] = [], zones: [MotionZone] = [], videoStreams: [AllocatedVideoStream] = [],
        audioStreams: [AllocatedAudioStream] = [], privacyModes: PrivacyModes = PrivacyModes(),
        zoneTriggers: [ZoneTriggerControlStruct] = [], zoneSensitivity: UInt8 = ZoneManagement.defaultSensitivity
    ) {
        self.zoneTriggers = Dictionary(zoneTriggers.map { ($0.zoneID, $0) }, uniquingKeysWith: { _, last in last })
        self.zoneSensitivity = zoneSensitivity
        self.tlsEndpoints = Dictionary(
            tlsEndpoints.map { (TLSEndpointKey(fabricIndex: $0.fabricIndex, endpointID: $0.endpointID), $0) },
            uniquingKeysWith: { _, last in last })
        self.zones = Dictionary(zones.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        self.videoStreams = Dictionary(videoStreams.map { ($0.videoStreamID, $0) }, uniquingKeysWith: { _, last in last })
        self.audioStreams = Dictionary(audioStreams.map { ($0.audioStreamID, $0) }, uniquingKeysWith: { _, last in last })
        self.privacyModes = privacyModes
    }
}

extension TransportRegistries {
    /// The zones by ID: the order the detector and the Zones attribute list them in.
    public var sortedZones: [MotionZone] { zones.values.sorted { $0.id < $1.id } }
    /// The TLS endpoint `connection` uploads through (its fabric's `tlsEndpointID`); nil when it is gone.
    public func tlsEndpoint(for connection: StoredConnection) -> TLSEndpoint? {
        tlsEndpoints[TLSEndpointKey(fabricIndex: connection.fabricIndex, endpointID: connection.transportOptions.tlsEndpointID)]
    }

    /// The triggers by zone ID, as the Triggers attribute lists them.
    public var sortedZoneTriggers: [ZoneTriggerControlStruct] { zoneTriggers.values.sorted { $0.zoneID < $1.zoneID } }
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
    public var features: PushAVStreamTransportFeatures
    /// The SupportedFormats attribute; must contain (CMAF, CMAFIngest).
    public var supportedFormats: [SupportedFormatStruct]
    /// Stream usages the camera supports (its StreamUsagePriorities); others answer InvalidStreamUsage.
    public var supportedStreamUsages: Set<StreamUsageEnum>
    /// Zone Management MaxZones: a trigger may list up to this many zones.
    public var maxZones: UInt8
    /// CMAF interfaces the uploader implements; others are refused with FAILURE, as the reference camera does.
    public var supportedCMAFInterfaces: Set<CMAFInterfaceEnum>
    /// Codecs the recorder can package; others are refused with FAILURE.
    public var supportedVideoCodecs: Set<VideoCodecEnum>
    public var supportedAudioCodecs: Set<AudioCodecEnum>
    /// Camera MaxNetworkBandwidth in bits per second; nil = not limited.
    public var maxNetworkBandwidth: UInt32?

    public init(
        features: PushAVStreamTransportFeatures = [],
        supportedFormats: [SupportedFormatStruct] = [SupportedFormatStruct(containerFormat: .cmaf, ingestMethod: .cmafIngest)],
        supportedStreamUsages: Set<StreamUsageEnum> = [.recording, .analysis, .liveView],
        maxZones: UInt8 = 8,
        supportedCMAFInterfaces: Set<CMAFInterfaceEnum> = [.interface1],
        supportedVideoCodecs: Set<VideoCodecEnum> = [.h264],
        supportedAudioCodecs: Set<AudioCodecEnum> = [.opus, .aacLC],
        maxNetworkBandwidth: UInt32? = nil
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
