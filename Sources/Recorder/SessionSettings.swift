import Domain
import Foundation
import Logging
import MediaIO
import Timeline

/// What every session of a recording shares: the conditioned tracks and the CMAF settings.
struct SessionSettings {
    let video: any TrackConditioner
    let videoCodec: String
    let frameRate: Double?
    let audio: (any TrackConditioner)?
    let audioCodec: String?
    let options: RecordingOptions
    /// The analysed pictures, when the recording keeps them (thumbnails at each trigger).
    let pictures: TriggerPictures?

    var hasAudio: Bool { audio != nil }

    func makeWriter(session: SessionNumber, start: MediaTime, policy: ClipPolicy) throws -> SessionWriter {
        let format = policy.format ?? options.sessionFormat
        return try SessionWriter(
            layout: SessionLayout(root: policy.output, session: session, trackNames: format.trackNames),
            start: start, video: video, videoCodec: videoCodec, frameRate: frameRate,
            audio: format.includeAudio ? audio : nil, audioCodec: format.includeAudio ? audioCodec : nil,
            segmentDuration: format.segmentDuration, chunkDuration: format.chunkDuration,
            writeClip: format.writeClips, manifest: format.dashManifest, encryption: format.encryption,
            writesFiles: format.writesSegmentFiles, emit: counted(policy.hooks?.events ?? options.events))
    }

    /// `emit`, also counting the bytes recorded when the recording has metrics.
    private func counted(_ emit: (@Sendable (RecordingEvent) -> Void)?) -> (@Sendable (RecordingEvent) -> Void)? {
        guard let metrics = options.metrics else { return emit }
        return { event in
            metrics.count(event)
            emit?(event)
        }
    }
}
