import Foundation

/// The checks of the reference AllocatePushTransport pipeline (digest §2.3, steps 2–12 and 14) that need the
/// registries: TLS endpoint, format, URL, stream usage, zones, streams, key-frame alignment, bandwidth, pre-roll.
/// Modify runs them too, so a modify cannot point a transport at an unknown endpoint, zone or stream.
struct AllocationChecks {
    let capabilities: TransportCapabilities
    let registries: TransportRegistries
    /// Connections whose streams already use bandwidth (the one being modified excluded).
    let otherConnections: [StoredConnection]

    /// Validates `request` (already shape-checked) and returns it normalised: stream lists filled in, legacy
    /// VideoStreamID/AudioStreamID mirrored from their first entries.
    func resolve(_ request: TransportOptionsStruct, fabric: FabricIndex) throws(TransportCommandError) -> TransportOptionsStruct {
        var options = request
        let key = TLSEndpointKey(fabricIndex: fabric, endpointID: options.tlsEndpointID)
        guard registries.tls.endpoints[key] != nil else {
            throw .cluster(.invalidTLSEndpoint, "tlsEndpointID: \(options.tlsEndpointID) is not provisioned for this fabric")
        }
        let format = SupportedFormatStruct(containerFormat: options.containerOptions.containerType, ingestMethod: options.ingestMethod)
        guard capabilities.supportedFormats.contains(format) else {
            throw .cluster(.invalidCombination, "ingestMethod, containerOptions.containerType: combination not supported")
        }
        if options.containerOptions.containerType == .cmaf && !isValidIngestURL(options.url) {
            throw .cluster(.invalidURL, "url: must be https with a host, end with '/', and have no query or fragment")
        }
        guard capabilities.supportedStreamUsages.contains(options.streamUsage) else {
            throw .cluster(.invalidStreamUsage, "streamUsage: \(options.streamUsage) is not supported by this camera")
        }
        if options.triggerOptions.triggerType == .motion, let zones = options.triggerOptions.motionZones?.value {
            try checkZones(zones)
        }

        let (videoStreams, audioStreams) = try resolveStreams(options)
        options.videoStreams = videoStreams
        options.audioStreams = audioStreams
        let video = videoStreams?.first.flatMap { registries.streams.video[$0.videoStreamID] }

        if options.containerOptions.containerType == .cmaf, let cmaf = options.containerOptions.cmafContainerOptions,
           let video, video.keyFrameInterval > 0, cmaf.segmentDuration % video.keyFrameInterval != 0 {
            throw .cluster(.invalidOptions,
                           "containerOptions.cmafContainerOptions.segmentDuration: \(cmaf.segmentDuration) ms is not a multiple of the key-frame interval \(video.keyFrameInterval) ms")
        }
        // Revision-1 clients read the legacy fields; mirror the first stream of each list into them.
        options.videoStreamID = videoStreams?.first.map { .value($0.videoStreamID) }
        options.audioStreamID = audioStreams?.first.map { .value($0.audioStreamID) }
        try checkBandwidth(options)
        if let preRoll = options.triggerOptions.maxPreRollLen, preRoll != 0, let video, preRoll < video.keyFrameInterval {
            throw .cluster(.invalidPreRollLength,
                           "triggerOptions.maxPreRollLen: \(preRoll) ms is shorter than the key-frame interval \(video.keyFrameInterval) ms")
        }
        return options
    }

    /// What the recorder itself can produce (the reference camera delegate answers FAILURE for the rest).
    func checkRecorderSupport(_ options: TransportOptionsStruct) throws(TransportCommandError) {
        if let cmaf = options.containerOptions.cmafContainerOptions,
           !capabilities.supportedCMAFInterfaces.contains(cmaf.cmafInterface) {
            throw .im(.failure, "containerOptions.cmafContainerOptions.cmafInterface: \(cmaf.cmafInterface) is not supported")
        }
        // The recorder writes and uploads each track under its name: a name that cannot be one path segment is
        // refused here, with the command, rather than accepted and then never recorded.
        _ = try options.trackNames()
        for entry in options.videoStreams ?? [] {
            if let stream = registries.streams.video[entry.videoStreamID], !capabilities.supportedVideoCodecs.contains(stream.codec) {
                throw .im(.failure, "videoStreams: stream \(entry.videoStreamID) uses unsupported codec \(stream.codec)")
            }
        }
        for entry in options.audioStreams ?? [] {
            if let stream = registries.streams.audio[entry.audioStreamID], !capabilities.supportedAudioCodecs.contains(stream.codec) {
                throw .im(.failure, "audioStreams: stream \(entry.audioStreamID) uses unsupported codec \(stream.codec)")
            }
        }
    }

    func checkZones(_ zones: [TransportZoneOptionsStruct]) throws(TransportCommandError) {
        var seen = Set<UInt16>()
        var sawNullZone = false
        for entry in zones {
            switch entry.zone {
            case .null:
                if sawNullZone { throw .im(.alreadyExists, "triggerOptions.motionZones.zone: null listed twice") }
                sawNullZone = true
            case .value(let zoneID):
                if !seen.insert(zoneID).inserted {
                    throw .im(.alreadyExists, "triggerOptions.motionZones.zone: \(zoneID) listed twice")
                }
            }
        }
        // Our decision: up to MaxZones entries are accepted (the reference camera already refuses MaxZones).
        guard zones.count <= Int(capabilities.maxZones) else {
            throw .im(.dynamicConstraintError, "triggerOptions.motionZones: more than MaxZones (\(capabilities.maxZones)) entries")
        }
        for entry in zones {
            if let zoneID = entry.zone.value, registries.zoneManagement.zones[zoneID] == nil {
                throw .cluster(.invalidZone, "triggerOptions.motionZones.zone: \(zoneID) is not a configured zone")
            }
        }
    }

    private func resolveStreams(
        _ options: TransportOptionsStruct
    ) throws(TransportCommandError) -> ([VideoStreamStruct]?, [AudioStreamStruct]?) {
        let legacyGiven = options.videoStreamID != nil || options.audioStreamID != nil
        let listsGiven = options.videoStreams != nil || options.audioStreams != nil
        if legacyGiven && listsGiven {
            throw .im(.invalidCommand, "videoStreamID/audioStreamID: not allowed together with videoStreams/audioStreams")
        }
        guard legacyGiven || listsGiven else {
            throw .im(.invalidCommand, "videoStreamID, audioStreamID, videoStreams, audioStreams: at least one is required")
        }
        if listsGiven { return try checkStreamLists(options) }

        // Streams named by ID only (Matter 1.5, as the certification scripts allocate): the video track takes the
        // transport's CMAF TrackName when it names one (not blank: the scripts' default is " "), the audio track
        // keeps "audio" (see `TransportOptionsStruct.trackNames()` for the whole rule and why).
        let trackName = options.containerOptions.cmafContainerOptions?.trackName
        let videoName = trackName.flatMap(TransportOptionsStruct.nameOrBlank) ?? "video"
        var video: [VideoStreamStruct]?
        switch options.videoStreamID {
        case nil:
            video = nil
        case .null?:
            // Automatic selection: the lowest-numbered allocated stream of the transport's usage.
            guard let chosen = registries.streams.video.values.filter({ $0.streamUsage == options.streamUsage })
                .map(\.videoStreamID).min() else {
                throw .im(.invalidInState, "videoStreamID: null, but no video stream is allocated for \(options.streamUsage)")
            }
            video = [VideoStreamStruct(videoStreamName: videoName, videoStreamID: chosen)]
        case .value(let streamID)?:
            guard registries.streams.video[streamID] != nil else {
                throw .cluster(.invalidStream, "videoStreamID: \(streamID) is not an allocated video stream")
            }
            video = [VideoStreamStruct(videoStreamName: videoName, videoStreamID: streamID)]
        }
        var audio: [AudioStreamStruct]?
        switch options.audioStreamID {
        case nil:
            audio = nil
        case .null?:
            guard let chosen = registries.streams.audio.values.filter({ $0.streamUsage == options.streamUsage })
                .map(\.audioStreamID).min() else {
                throw .im(.invalidInState, "audioStreamID: null, but no audio stream is allocated for \(options.streamUsage)")
            }
            audio = [AudioStreamStruct(audioStreamName: "audio", audioStreamID: chosen)]
        case .value(let streamID)?:
            guard registries.streams.audio[streamID] != nil else {
                throw .cluster(.invalidStream, "audioStreamID: \(streamID) is not an allocated audio stream")
            }
            audio = [AudioStreamStruct(audioStreamName: "audio", audioStreamID: streamID)]
        }
        return (video, audio)
    }

    private func checkStreamLists(
        _ options: TransportOptionsStruct
    ) throws(TransportCommandError) -> ([VideoStreamStruct]?, [AudioStreamStruct]?) {
        let video = options.videoStreams ?? []
        let audio = options.audioStreams ?? []
        if Set(video.map(\.videoStreamName)).count != video.count || Set(video.map(\.videoStreamID)).count != video.count {
            throw .cluster(.duplicateStreamValues, "videoStreams: duplicate name or ID")
        }
        if Set(audio.map(\.audioStreamName)).count != audio.count || Set(audio.map(\.audioStreamID)).count != audio.count {
            throw .cluster(.duplicateStreamValues, "audioStreams: duplicate name or ID")
        }
        // The reference answers INVALID_COMMAND here; the 1.5.1 test plan says InvalidStream, which we follow.
        for entry in video where registries.streams.video[entry.videoStreamID] == nil {
            throw .cluster(.invalidStream, "videoStreams.videoStreamID: \(entry.videoStreamID) is not an allocated video stream")
        }
        for entry in audio where registries.streams.audio[entry.audioStreamID] == nil {
            throw .cluster(.invalidStream, "audioStreams.audioStreamID: \(entry.audioStreamID) is not an allocated audio stream")
        }
        let videoNames = Set(video.map(\.videoStreamName))
        for entry in audio where videoNames.contains(entry.audioStreamName) {
            throw .cluster(.invalidStream, "audioStreams.audioStreamName: \"\(entry.audioStreamName)\" is also a video stream name")
        }
        guard !video.isEmpty || !audio.isEmpty else {
            throw .cluster(.invalidStream, "videoStreams, audioStreams: both empty")
        }
        return (options.videoStreams, options.audioStreams)
    }

    private func checkBandwidth(_ options: TransportOptionsStruct) throws(TransportCommandError) {
        guard let limit = capabilities.maxNetworkBandwidth else { return }
        let inUse = otherConnections.reduce(UInt64(0)) { $0 + bitRate(of: $1.transportOptions) }
        if inUse + bitRate(of: options) > UInt64(limit) {
            throw .im(.resourceExhausted, "videoStreams/audioStreams: the streams exceed MaxNetworkBandwidth (\(limit) bps)")
        }
    }

    private func bitRate(of options: TransportOptionsStruct) -> UInt64 {
        let video = (options.videoStreams ?? []).reduce(UInt64(0)) {
            $0 + UInt64(registries.streams.video[$1.videoStreamID]?.maxBitRate ?? 0)
        }
        let audio = (options.audioStreams ?? []).reduce(UInt64(0)) {
            $0 + UInt64(registries.streams.audio[$1.audioStreamID]?.bitRate ?? 0)
        }
        return video + audio
    }
}

extension TransportOptionsStruct {
    /// This Modify request with what it leaves out taken from `stored` (our decision for Google's partial modify):
    /// fields the trigger or container type requires, and the stream selection when the request gives null IDs
    /// or no stream fields at all.
    func filledForModify(from stored: TransportOptionsStruct, features: PushAVStreamTransportFeatures) -> TransportOptionsStruct {
        var merged = self
        let storedTrigger = stored.triggerOptions
        switch merged.triggerOptions.triggerType {
        case .motion:
            if merged.triggerOptions.motionZones == nil { merged.triggerOptions.motionZones = storedTrigger.motionZones }
            if !features.contains(.perZoneSensitivity) && merged.triggerOptions.motionSensitivity == nil {
                merged.triggerOptions.motionSensitivity = storedTrigger.motionSensitivity
            }
            if merged.triggerOptions.motionTimeControl == nil {
                merged.triggerOptions.motionTimeControl = storedTrigger.motionTimeControl
            }
            if merged.triggerOptions.maxPreRollLen == nil { merged.triggerOptions.maxPreRollLen = storedTrigger.maxPreRollLen }
        case .command:
            if merged.triggerOptions.maxPreRollLen == nil { merged.triggerOptions.maxPreRollLen = storedTrigger.maxPreRollLen }
        case .continuous, .unknown:
            break
        }
        if merged.containerOptions.containerType == .cmaf && merged.containerOptions.cmafContainerOptions == nil {
            merged.containerOptions.cmafContainerOptions = stored.containerOptions.cmafContainerOptions
        }
        // A controller that writes back what it read sends the normalised form: lists plus the legacy IDs mirrored
        // from them. Accept that echo as the lists alone instead of refusing the mix.
        let listsGiven = merged.videoStreams != nil || merged.audioStreams != nil
        if listsGiven && merged.videoStreamID?.isNull != true && merged.audioStreamID?.isNull != true
            && merged.videoStreamID?.value == merged.videoStreams?.first?.videoStreamID
            && merged.audioStreamID?.value == merged.audioStreams?.first?.audioStreamID {
            merged.videoStreamID = nil
            merged.audioStreamID = nil
        }
        if !listsGiven {
            if merged.videoStreamID == nil && merged.audioStreamID == nil {
                merged.videoStreams = stored.videoStreams
                merged.audioStreams = stored.audioStreams
                // A transport stored before stream lists existed keeps its legacy selection instead.
                if merged.videoStreams == nil && merged.audioStreams == nil {
                    merged.videoStreamID = stored.videoStreamID
                    merged.audioStreamID = stored.audioStreamID
                }
            } else {
                if merged.videoStreamID == .null, let storedID = stored.videoStreamID?.value {
                    merged.videoStreamID = .value(storedID)
                }
                if merged.audioStreamID == .null, let storedID = stored.audioStreamID?.value {
                    merged.audioStreamID = .value(storedID)
                }
            }
        }
        return merged
    }
}
