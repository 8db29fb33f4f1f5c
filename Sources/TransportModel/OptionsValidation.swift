import Foundation

// The request-shape checks of the reference's ValidateIncomingTransportOptions (digest §2.2), run by Allocate and
// Modify before anything is looked up. Order matters: a request with several faults answers the first one's status.

extension TransportOptionsStruct {
    /// Validates field presence and ranges in the reference order; throws the first violation's status.
    public func validateShape(features: PushAVStreamTransportFeatures) throws(TransportCommandError) {
        guard streamUsage.isKnown else {
            throw .im(.constraintError, "streamUsage: unknown value \(streamUsage.rawValue)")
        }
        for stream in videoStreams ?? [] where !(1...16).contains(stream.videoStreamName.utf8.count) {
            throw .im(.constraintError, "videoStreams.videoStreamName: length must be 1…16 bytes")
        }
        for stream in audioStreams ?? [] where !(1...16).contains(stream.audioStreamName.utf8.count) {
            throw .im(.constraintError, "audioStreams.audioStreamName: length must be 1…16 bytes")
        }
        guard tlsEndpointID <= 65534 else {
            throw .im(.constraintError, "tlsEndpointID: must be 0…65534")
        }
        guard (13...2000).contains(url.utf8.count) else {
            throw .im(.constraintError, "url: length must be 13…2000 bytes")
        }
        try triggerOptions.validateShape(features: features)
        guard ingestMethod.isKnown else {
            throw .im(.constraintError, "ingestMethod: unknown value \(ingestMethod.rawValue)")
        }
        guard containerOptions.containerType.isKnown else {
            throw .im(.constraintError, "containerOptions.containerType: unknown value \(containerOptions.containerType.rawValue)")
        }
        switch containerOptions.containerType {
        case .cmaf:
            guard let cmaf = containerOptions.cmafContainerOptions else {
                throw .im(.invalidCommand, "containerOptions.cmafContainerOptions: required for CMAF")
            }
            try cmaf.validateShape(features: features)
        case .unknown:
            if containerOptions.cmafContainerOptions != nil {
                throw .im(.invalidCommand, "containerOptions.cmafContainerOptions: only allowed for CMAF")
            }
        }
    }
}

extension TransportTriggerOptionsStruct {
    func validateShape(features: PushAVStreamTransportFeatures) throws(TransportCommandError) {
        guard triggerType.isKnown else {
            throw .im(.constraintError, "triggerOptions.triggerType: unknown value \(triggerType.rawValue)")
        }
        let perZone = features.contains(.perZoneSensitivity)
        if triggerType == .motion {
            guard let zones = motionZones else {
                throw .im(.invalidCommand, "triggerOptions.motionZones: required for a Motion trigger")
            }
            for zone in zones.value ?? [] {
                if perZone {
                    guard let sensitivity = zone.sensitivity else {
                        throw .im(.invalidCommand, "triggerOptions.motionZones.sensitivity: required with per-zone sensitivity")
                    }
                    guard (1...10).contains(sensitivity) else {
                        throw .im(.constraintError, "triggerOptions.motionZones.sensitivity: must be 1…10")
                    }
                } else if zone.sensitivity != nil {
                    throw .im(.invalidCommand, "triggerOptions.motionZones.sensitivity: not allowed without per-zone sensitivity")
                }
            }
            guard let timeControl = motionTimeControl else {
                throw .im(.invalidCommand, "triggerOptions.motionTimeControl: required for a Motion trigger")
            }
            try timeControl.validateShape(field: "triggerOptions.motionTimeControl")
        } else {
            if motionZones != nil {
                throw .im(.invalidCommand, "triggerOptions.motionZones: only allowed for a Motion trigger")
            }
            if motionTimeControl != nil {
                throw .im(.invalidCommand, "triggerOptions.motionTimeControl: only allowed for a Motion trigger")
            }
        }
        if triggerType == .motion && !perZone {
            guard let sensitivity = motionSensitivity else {
                throw .im(.invalidCommand, "triggerOptions.motionSensitivity: required for a Motion trigger")
            }
            if let value = sensitivity.value, !(1...10).contains(value) {
                throw .im(.constraintError, "triggerOptions.motionSensitivity: must be 1…10")
            }
        } else if motionSensitivity != nil {
            throw .im(.invalidCommand, "triggerOptions.motionSensitivity: only allowed for a Motion trigger without per-zone sensitivity")
        }
        switch triggerType {
        case .motion, .command:
            if maxPreRollLen == nil {
                throw .im(.invalidCommand, "triggerOptions.maxPreRollLen: required for Motion and Command triggers")
            }
        case .continuous, .unknown:
            if maxPreRollLen != nil {
                throw .im(.invalidCommand, "triggerOptions.maxPreRollLen: not allowed for a Continuous trigger")
            }
        }
    }
}

extension TransportMotionTriggerTimeControlStruct {
    /// InitialDuration and MaxDuration ≥ 1 (reference); MaxDuration ≥ InitialDuration (our decision, 1.5.1 constraint).
    func validateShape(field: String) throws(TransportCommandError) {
        guard initialDuration >= 1 else { throw .im(.constraintError, "\(field).initialDuration: must be ≥ 1") }
        guard maxDuration >= 1 else { throw .im(.constraintError, "\(field).maxDuration: must be ≥ 1") }
        guard maxDuration >= UInt32(initialDuration) else {
            throw .im(.constraintError, "\(field).maxDuration: must be ≥ initialDuration")
        }
    }
}

extension CMAFContainerOptionsStruct {
    func validateShape(features: PushAVStreamTransportFeatures) throws(TransportCommandError) {
        let field = "containerOptions.cmafContainerOptions"
        guard cmafInterface.isKnown else {
            throw .im(.constraintError, "\(field).cmafInterface: unknown value \(cmafInterface.rawValue)")
        }
        guard (500...65500).contains(segmentDuration) else {
            throw .im(.constraintError, "\(field).segmentDuration: must be 500…65500 ms")
        }
        guard chunkDuration <= segmentDuration / 2 else {
            throw .im(.constraintError, "\(field).chunkDuration: must be ≤ segmentDuration / 2")
        }
        if let cencKey, cencKey.count != 16 {
            throw .im(.constraintError, "\(field).cencKey: must be 16 bytes")
        }
        if metadataEnabled != nil && !features.contains(.metadata) {
            throw .im(.invalidCommand, "\(field).metadataEnabled: requires the METADATA feature")
        }
        if cencKey != nil && cencKeyID == nil {
            throw .im(.invalidCommand, "\(field).cencKeyID: required with cencKey")
        }
        if let cencKeyID, cencKeyID.count != 16 {
            throw .im(.constraintError, "\(field).cencKeyID: must be 16 bytes")
        }
        if cencKeyID != nil && cencKey == nil {
            throw .im(.invalidCommand, "\(field).cencKeyID: only allowed with cencKey")
        }
        // The 1.5 constraint on the (now deprecated) track name; the newest reference no longer checks it.
        if let trackName, !(1...16).contains(trackName.utf8.count) {
            throw .im(.constraintError, "\(field).trackName: length must be 1…16 bytes")
        }
    }
}

/// Whether `url` is acceptable as a CMAF publishing point (reference ValidateUrl, TC-PAVST-2.10): it parses as an
/// RFC 3986 URI with scheme https and a non-empty host, its path ends with `/`, and it has no `?` and no `#`.
public func isValidIngestURL(_ url: String) -> Bool {
    // Checked on the raw string: a `?` or `#` anywhere is refused, even where a parser would not see a query.
    guard !url.contains("?"), !url.contains("#") else { return false }
    guard let components = URLComponents(string: url) else { return false }
    guard components.scheme?.lowercased() == "https" else { return false }
    guard let host = components.host, !host.isEmpty else { return false }
    return components.path.hasSuffix("/")
}
