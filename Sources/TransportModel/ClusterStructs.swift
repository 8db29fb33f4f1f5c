import Domain
import Foundation

// The cluster's structures, field names as in Google Home's Swift `PushAvStreamTransportTrait`.
// Optional fields are Swift optionals (absent = nil); optional *nullable* fields are `Nullable<T>?`.
// Synthesized encoding omits nil and writes `.null` as JSON null, so a document round-trips field for field.

/// A fabric index (1…254) identifying the controller's fabric that owns fabric-scoped data.
public typealias FabricIndex = UInt8

/// SupportedFormatStruct: one (container, ingest method) pair the node can use together.
public struct SupportedFormatStruct: Codable, Sendable, Hashable {
    public var containerFormat: ContainerFormatEnum
    public var ingestMethod: IngestMethodsEnum

    public init(containerFormat: ContainerFormatEnum, ingestMethod: IngestMethodsEnum) {
        self.containerFormat = containerFormat
        self.ingestMethod = ingestMethod
    }
}

/// VideoStreamStruct (revision 2): a requested video stream and the name that becomes its CMAF track name.
public struct VideoStreamStruct: Codable, Sendable, Hashable {
    public var videoStreamName: String
    public var videoStreamID: UInt16

    public init(videoStreamName: String, videoStreamID: UInt16) {
        self.videoStreamName = videoStreamName
        self.videoStreamID = videoStreamID
    }
}

/// AudioStreamStruct (revision 2): a requested audio stream and its CMAF track name.
public struct AudioStreamStruct: Codable, Sendable, Hashable {
    public var audioStreamName: String
    public var audioStreamID: UInt16

    public init(audioStreamName: String, audioStreamID: UInt16) {
        self.audioStreamName = audioStreamName
        self.audioStreamID = audioStreamID
    }
}

/// CMAFContainerOptionsStruct. Durations are milliseconds.
public struct CMAFContainerOptionsStruct: Codable, Sendable, Hashable {
    public var cmafInterface: CMAFInterfaceEnum = .interface1
    /// 500…65500 ms, a multiple of the video stream's key-frame interval.
    public var segmentDuration: UInt16
    /// 0…segmentDuration/2 ms; 0 = one fragment per segment.
    public var chunkDuration: UInt16
    /// Deprecated in revision 2.
    public var sessionGroup: UInt8?
    /// Deprecated in revision 2 (stream names replace it); 1…16 bytes.
    public var trackName: String?
    /// 16 bytes; present = encrypt with CENC.
    public var cencKey: Data?
    /// 16 bytes; required with `cencKey`.
    public var cencKeyID: Data?
    /// Only with the METADATA feature.
    public var metadataEnabled: Bool?

    public init(
        cmafInterface: CMAFInterfaceEnum = .interface1, segmentDuration: UInt16, chunkDuration: UInt16,
        sessionGroup: UInt8? = nil, trackName: String? = nil, cencKey: Data? = nil, cencKeyID: Data? = nil,
        metadataEnabled: Bool? = nil
    ) {
        self.cmafInterface = cmafInterface
        self.segmentDuration = segmentDuration
        self.chunkDuration = chunkDuration
        self.sessionGroup = sessionGroup
        self.trackName = trackName
        self.cencKey = cencKey
        self.cencKeyID = cencKeyID
        self.metadataEnabled = metadataEnabled
    }
}

/// ContainerOptionsStruct.
public struct ContainerOptionsStruct: Codable, Sendable, Hashable {
    public var containerType: ContainerFormatEnum = .cmaf
    /// Required when `containerType` is CMAF, otherwise absent.
    public var cmafContainerOptions: CMAFContainerOptionsStruct?

    public init(containerType: ContainerFormatEnum = .cmaf, cmafContainerOptions: CMAFContainerOptionsStruct? = nil) {
        self.containerType = containerType
        self.cmafContainerOptions = cmafContainerOptions
    }
}

/// TransportZoneOptionsStruct: a motion zone that activates the transport.
public struct TransportZoneOptionsStruct: Codable, Sendable, Hashable {
    /// A Zone Management zone ID, or null for motion outside every configured zone.
    public var zone: Nullable<UInt16>
    /// 1…10; required with PERZONESENS, absent without it.
    public var sensitivity: UInt8?

    public init(zone: Nullable<UInt16>, sensitivity: UInt8? = nil) {
        self.zone = zone
        self.sensitivity = sensitivity
    }
}

/// TransportMotionTriggerTimeControlStruct. Durations are seconds.
public struct TransportMotionTriggerTimeControlStruct: Codable, Sendable, Hashable {
    /// ≥ 1.
    public var initialDuration: UInt16
    public var augmentationDuration: UInt16
    /// ≥ 1 and ≥ `initialDuration`.
    public var maxDuration: UInt32
    public var blindDuration: UInt16

    public init(initialDuration: UInt16, augmentationDuration: UInt16, maxDuration: UInt32, blindDuration: UInt16) {
        self.initialDuration = initialDuration
        self.augmentationDuration = augmentationDuration
        self.maxDuration = maxDuration
        self.blindDuration = blindDuration
    }
}

/// TransportTriggerOptionsStruct.
public struct TransportTriggerOptionsStruct: Codable, Sendable, Hashable {
    public var triggerType: TransportTriggerTypeEnum
    /// Motion only; null or empty = motion anywhere.
    public var motionZones: Nullable<[TransportZoneOptionsStruct]>?
    /// Motion without PERZONESENS; 1…10, null = the zone sensitivity or 10.
    public var motionSensitivity: Nullable<UInt8>?
    /// Motion only.
    public var motionTimeControl: TransportMotionTriggerTimeControlStruct?
    /// Motion or Command, milliseconds of history before the trigger.
    public var maxPreRollLen: UInt16?

    public init(
        triggerType: TransportTriggerTypeEnum, motionZones: Nullable<[TransportZoneOptionsStruct]>? = nil,
        motionSensitivity: Nullable<UInt8>? = nil, motionTimeControl: TransportMotionTriggerTimeControlStruct? = nil,
        maxPreRollLen: UInt16? = nil
    ) {
        self.triggerType = triggerType
        self.motionZones = motionZones
        self.motionSensitivity = motionSensitivity
        self.motionTimeControl = motionTimeControl
        self.maxPreRollLen = maxPreRollLen
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        triggerType = try container.decode(TransportTriggerTypeEnum.self, forKey: .triggerType)
        motionZones = try container.decodeOptionalNullable([TransportZoneOptionsStruct].self, forKey: .motionZones)
        motionSensitivity = try container.decodeOptionalNullable(UInt8.self, forKey: .motionSensitivity)
        motionTimeControl = try container.decodeIfPresent(
            TransportMotionTriggerTimeControlStruct.self, forKey: .motionTimeControl)
        maxPreRollLen = try container.decodeIfPresent(UInt16.self, forKey: .maxPreRollLen)
    }

    /// The sensitivity threshold (1…10) a motion sample in `zoneEntry` must reach: the entry's own (PERZONESENS),
    /// else `motionSensitivity`, else `zoneManagementSensitivity` (pass the Zone Management Sensitivity attribute
    /// when the camera has zones configured, nil otherwise), else 10.
    public func effectiveSensitivity(for zoneEntry: TransportZoneOptionsStruct?, zoneManagementSensitivity: UInt8?) -> UInt8 {
        if let own = zoneEntry?.sensitivity { return own }
        if let configured = motionSensitivity?.value { return configured }
        return zoneManagementSensitivity ?? 10
    }
}

/// TransportOptionsStruct: everything a controller configures for one transport.
public struct TransportOptionsStruct: Codable, Sendable, Hashable {
    public var streamUsage: StreamUsageEnum
    /// Deprecated in revision 2. Absent = no video, null = automatic selection.
    public var videoStreamID: Nullable<UInt16>?
    /// Deprecated in revision 2. Absent = no audio, null = automatic selection.
    public var audioStreamID: Nullable<UInt16>?
    public var tlsEndpointID: UInt16
    /// The CMAF publishing point: https, a host, ends with `/`, no query or fragment; 13…2000 bytes.
    public var url: String
    public var triggerOptions: TransportTriggerOptionsStruct
    public var ingestMethod: IngestMethodsEnum = .cmafIngest
    public var containerOptions: ContainerOptionsStruct
    /// TTL in seconds from allocation (or from the last Modify that carried it); absent = never expires.
    public var expiryTime: UInt32?
    /// Revision 2: requested video streams and their track names.
    public var videoStreams: [VideoStreamStruct]?
    /// Revision 2: requested audio streams and their track names.
    public var audioStreams: [AudioStreamStruct]?

    public init(
        streamUsage: StreamUsageEnum, videoStreamID: Nullable<UInt16>? = nil, audioStreamID: Nullable<UInt16>? = nil,
        tlsEndpointID: UInt16, url: String, triggerOptions: TransportTriggerOptionsStruct,
        ingestMethod: IngestMethodsEnum = .cmafIngest, containerOptions: ContainerOptionsStruct,
        expiryTime: UInt32? = nil, videoStreams: [VideoStreamStruct]? = nil, audioStreams: [AudioStreamStruct]? = nil
    ) {
        self.streamUsage = streamUsage
        self.videoStreamID = videoStreamID
        self.audioStreamID = audioStreamID
        self.tlsEndpointID = tlsEndpointID
        self.url = url
        self.triggerOptions = triggerOptions
        self.ingestMethod = ingestMethod
        self.containerOptions = containerOptions
        self.expiryTime = expiryTime
        self.videoStreams = videoStreams
        self.audioStreams = audioStreams
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        streamUsage = try container.decode(StreamUsageEnum.self, forKey: .streamUsage)
        videoStreamID = try container.decodeOptionalNullable(UInt16.self, forKey: .videoStreamID)
        audioStreamID = try container.decodeOptionalNullable(UInt16.self, forKey: .audioStreamID)
        tlsEndpointID = try container.decode(UInt16.self, forKey: .tlsEndpointID)
        url = try container.decode(String.self, forKey: .url)
        triggerOptions = try container.decode(TransportTriggerOptionsStruct.self, forKey: .triggerOptions)
        ingestMethod = try container.decode(IngestMethodsEnum.self, forKey: .ingestMethod)
        containerOptions = try container.decode(ContainerOptionsStruct.self, forKey: .containerOptions)
        expiryTime = try container.decodeIfPresent(UInt32.self, forKey: .expiryTime)
        videoStreams = try container.decodeIfPresent([VideoStreamStruct].self, forKey: .videoStreams)
        audioStreams = try container.decodeIfPresent([AudioStreamStruct].self, forKey: .audioStreams)
    }
}

/// TransportConfigurationStruct (fabric-scoped): one allocated connection as controllers see it.
public struct TransportConfigurationStruct: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    public var transportStatus: TransportStatusEnum
    /// Omitted when read over a transport without large-message support.
    public var transportOptions: TransportOptionsStruct?
    public var fabricIndex: FabricIndex?

    public init(
        connectionID: UInt16, transportStatus: TransportStatusEnum, transportOptions: TransportOptionsStruct? = nil,
        fabricIndex: FabricIndex? = nil
    ) {
        self.connectionID = connectionID
        self.transportStatus = transportStatus
        self.transportOptions = transportOptions
        self.fabricIndex = fabricIndex
    }
}

extension ClipTimeControl {
    /// The cluster's `TransportMotionTriggerTimeControlStruct` (whole seconds).
    public init(_ control: TransportMotionTriggerTimeControlStruct) {
        self.init(initial: Int64(control.initialDuration), augmentation: Int64(control.augmentationDuration),
                  max: Int64(control.maxDuration), blind: Int64(control.blindDuration))
    }
}
