import Foundation

/// A video stream the camera has allocated (Camera AV Stream Management AllocatedVideoStreams).
public struct AllocatedVideoStream: Codable, Sendable, Hashable {
    public var videoStreamID: UInt16
    public var codec: VideoCodecEnum = .h264
    /// Milliseconds between key frames; segment durations and pre-roll lengths are checked against it.
    public var keyFrameInterval: UInt16
    public var streamUsage: StreamUsageEnum
    /// Bits per second, counted against `TransportCapabilities.maxNetworkBandwidth`.
    public var maxBitRate: UInt32 = 0

    public init(
        videoStreamID: UInt16, codec: VideoCodecEnum = .h264, keyFrameInterval: UInt16, streamUsage: StreamUsageEnum,
        maxBitRate: UInt32 = 0
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
    public var codec: AudioCodecEnum = .opus
    public var streamUsage: StreamUsageEnum
    /// Bits per second.
    public var bitRate: UInt32 = 0

    public init(
        audioStreamID: UInt16, codec: AudioCodecEnum = .opus, streamUsage: StreamUsageEnum, bitRate: UInt32 = 0
    ) {
        self.audioStreamID = audioStreamID
        self.codec = codec
        self.streamUsage = streamUsage
        self.bitRate = bitRate
    }
}

/// The camera's privacy switches (Camera AV Stream Management attributes).
public struct PrivacyModes: Codable, Sendable, Hashable {
    /// A physical switch: nothing may stream.
    public var hardPrivacyModeOn: Bool = false
    /// No recording or analysis uploads.
    public var softRecordingPrivacyModeEnabled: Bool = false
    /// No live-view uploads.
    public var softLivestreamPrivacyModeEnabled: Bool = false

    public init(
        hardPrivacyModeOn: Bool = false, softRecordingPrivacyModeEnabled: Bool = false,
        softLivestreamPrivacyModeEnabled: Bool = false
    ) {
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

/// The Camera AV Stream Management attributes the transports depend on: the allocated video and audio streams
/// (what `videoStreamID`/`audioStreamID` are checked against, with their key-frame interval and bit rate) and the
/// privacy switches. A value the node holds beside the other clusters (see `ZoneManagement`).
public struct CameraAVStreams: Sendable, Hashable {
    /// AllocatedVideoStreams, by stream ID.
    public var video: [UInt16: AllocatedVideoStream]
    /// AllocatedAudioStreams, by stream ID.
    public var audio: [UInt16: AllocatedAudioStream]
    public var privacy: PrivacyModes

    public init(video: [AllocatedVideoStream] = [], audio: [AllocatedAudioStream] = [], privacy: PrivacyModes = PrivacyModes()) {
        self.video = Dictionary(video.map { ($0.videoStreamID, $0) }, uniquingKeysWith: { _, last in last })
        self.audio = Dictionary(audio.map { ($0.audioStreamID, $0) }, uniquingKeysWith: { _, last in last })
        self.privacy = privacy
    }
}
