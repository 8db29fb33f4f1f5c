import CMAF
import Domain
import Foundation
import Motion
import Recorder
import Timeline
import TransportModel

// The one path from a transport connection's TransportOptions to what the recorder does with it, shared by
// `pushav record` (a transport given as flags or a JSON document) and `pushav serve` (allocated connections).

extension ClipPolicy {
    /// The clip policy of a transport whose options passed the cluster's validation.
    ///
    /// - Parameters:
    ///   - zones: the camera's motion zones (Zone Management); a zone's own sensitivity (serve.yaml) stands in for
    ///     the Zone Management Sensitivity when the transport names the zone without a sensitivity of its own.
    ///   - zoneManagementSensitivity: the Zone Management Sensitivity attribute: what a transport with a null
    ///     motionSensitivity (and no per-zone one) uses.
    ///   - continuousSessionLength: how long a Continuous transport's CMAF sessions last (rule 7).
    public init(
        transport t: TransportOptionsStruct, zones: [MotionZone], zoneManagementSensitivity: UInt8 = 10, output: URL,
        continuousSessionLength: MediaTime
    ) {
        let triggers = t.triggerOptions
        switch triggers.triggerType {
        case .motion, .command:
            let control = triggers.motionTimeControl.map {
                ClipTimeControl(initial: Int64($0.initialDuration), augmentation: Int64($0.augmentationDuration),
                                max: Int64($0.maxDuration), blind: Int64($0.blindDuration))
            } ?? .matterDefaults
            self.init(
                trigger: triggers.triggerType.type ?? .command,
                timeControl: control,
                maxPreRoll: .milliseconds(Int64(triggers.maxPreRollLen ?? 0)),
                motionFilter: MotionTriggerFilter(triggers: triggers, zones: zones, zoneManagementSensitivity: zoneManagementSensitivity),
                continuousSessionLength: continuousSessionLength,
                output: output)
        default:
            self.init(trigger: .continuous, maxPreRoll: .zero, continuousSessionLength: continuousSessionLength,
                      output: output)
        }
    }
}

extension MotionTriggerFilter {
    /// Rule 1's filter for a transport's TriggerOptions: each named zone at its resolved sensitivity (its own under
    /// PERZONESENS, else motionSensitivity, else the configured zone's own, else the Zone Management Sensitivity),
    /// and motion anywhere at motionSensitivity or that Sensitivity when it names none.
    public init(triggers: TransportTriggerOptionsStruct, zones: [MotionZone], zoneManagementSensitivity: UInt8) {
        let entries = (triggers.motionZones?.value ?? []).map { entry in
            ZoneEntry(
                zone: entry.zone.value,
                sensitivity: Int(triggers.effectiveSensitivity(
                    for: entry,
                    zoneManagementSensitivity: zones.first { $0.id == entry.zone.value }?.sensitivity.map { UInt8(clamping: $0) }
                        ?? zoneManagementSensitivity)))
        }
        self.init(zones: entries,
                  sensitivity: Int(triggers.effectiveSensitivity(for: nil, zoneManagementSensitivity: zoneManagementSensitivity)))
    }
}

extension RecordingOptions {
    /// What recording one transport connection takes: its clip policy, segment and chunk durations, track names.
    ///
    /// Interface2DASH sessions get DASH manifests; CENCKey and CENCKeyID make every header and segment encrypted
    /// (``CommonEncryption``). Throws the status the camera answers AllocatePushTransport with for what this recorder
    /// does not implement (FAILURE, as the Matter reference camera answers it): CMAF Interface-2 HLS.
    public init(
        transport t: TransportOptionsStruct, zones: [MotionZone], zoneManagementSensitivity: UInt8 = 10, output: URL,
        continuousSessionLength: MediaTime = .seconds(300)
    ) throws(TransportCommandError) {
        guard let cmaf = t.containerOptions.cmafContainerOptions else {
            throw .im(.invalidCommand, "containerOptions.cmafContainerOptions: required for CMAF")
        }
        try Self.checkImplemented(cmaf)
        let names = try t.trackNames()
        let policy = ClipPolicy(transport: t, zones: zones, zoneManagementSensitivity: zoneManagementSensitivity, output: output,
                                continuousSessionLength: continuousSessionLength)
        self.init(output: output, policies: [policy])
        segmentDuration = .milliseconds(Int64(cmaf.segmentDuration))
        chunkDuration = cmaf.chunkDuration > 0 ? .milliseconds(Int64(cmaf.chunkDuration)) : nil
        self.zones = zones
        reportSensitivity = policy.motionFilter.zones.map(\.sensitivity).max() ?? policy.motionFilter.sensitivity
        trackNames = names
        dashManifest = cmaf.cmafInterface == .interface2DASH
        if let key = cmaf.cencKey, let keyID = cmaf.cencKeyID {
            do {
                encryption = try CommonEncryption(key: [UInt8](key), keyID: [UInt8](keyID))
            } catch {
                throw .im(.constraintError, "containerOptions.cmafContainerOptions.cencKey: \(error)")
            }
        }
    }

    static func checkImplemented(_ cmaf: CMAFContainerOptionsStruct) throws(TransportCommandError) {
        let field = "containerOptions.cmafContainerOptions"
        switch cmaf.cmafInterface {
        case .interface1, .interface2DASH: break
        case .interface2HLS:
            throw .im(.failure, "\(field).cmafInterface: Interface2HLS is not supported (as on the Matter reference camera); use Interface1")
        default:
            throw .im(.constraintError, "\(field).cmafInterface: unknown value \(cmaf.cmafInterface.rawValue)")
        }
    }
}
