import Domain

// Camera AV Stream Management on this endpoint: the allocated streams and the privacy switches Push AV Stream
// Transport validates against (`CameraAVStreams`, a value of its own, with its own persistence section).
extension PushAVStreamTransportServer {
    public func setAllocatedVideoStream(_ stream: AllocatedVideoStream) throws(TransportCommandError) {
        try updateRegistries { $0.streams.video[stream.videoStreamID] = stream }
    }

    public func removeAllocatedVideoStream(_ videoStreamID: UInt16) throws(TransportCommandError) {
        try updateRegistries { $0.streams.video[videoStreamID] = nil }
    }

    public func setAllocatedAudioStream(_ stream: AllocatedAudioStream) throws(TransportCommandError) {
        try updateRegistries { $0.streams.audio[stream.audioStreamID] = stream }
    }

    public func removeAllocatedAudioStream(_ audioStreamID: UInt16) throws(TransportCommandError) {
        try updateRegistries { $0.streams.audio[audioStreamID] = nil }
    }

    /// Sets the privacy switches; the cameras end the recordings they now forbid (and refuse new ones).
    public func setPrivacyModes(_ modes: PrivacyModes) throws(TransportCommandError) {
        try updateRegistries { $0.streams.privacy = modes }
    }
}
