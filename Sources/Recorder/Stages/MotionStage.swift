import Domain
import Foundation
import Logging
import MediaIO
import Motion
import Timeline

/// The analyse stage: decodes the pictures motion is seen in (the main stream's, or an analysis stream's), runs the
/// detector and Zone Management's triggers on them, keeps pictures for thumbnails and snapshots, and says what moved
/// at which media time. It decides nothing about recordings: ``ClipRunners`` does, with what this stage reports.
///
/// Without analysis (no Motion policy, nothing asked for it) the stage only keeps the timeline's clock: the latest
/// picture time, which then advances with the video packets (``advance(to:)``).
final class MotionStage {
    private var analysis: MotionAnalysis?
    /// The analysed pictures, kept for thumbnails and snapshots (only where they are decoded anyway: with analysis).
    let pictures: TriggerPictures?
    /// With an analysis source the main stream is never decoded: motion comes from the other stream's pictures.
    private let analysisReader: AnalysisStreamReader?
    /// Set when this recording ends (not by a stop request: the reader must not fail before the main stream ends).
    private let analysisInterrupt = InterruptFlag()
    private let sampler: LumaSampler?
    /// Zone Management's triggers, fed every analysed picture.
    private var zoneTriggers: ZoneTriggers
    private var appliedZones: [MotionZone]
    private var appliedZoneTriggers: [ZoneTrigger]
    /// Main-stream packets waiting to be decoded until the buffer holds their conditioned packets.
    private var undecoded: [Packet] = []
    /// The latest picture time the timeline reached: analysed, or read when nothing is analysed.
    private(set) var lastFrameTime: MediaTime?
    /// How late the analysis stream's pictures were applied, at most.
    private var analysisLag = MediaTime.zero
    private let options: RecordingOptions
    private let logger: Logger

    init(analysing: Bool, input: MediaInput, videoStream: StreamDescription, options: RecordingOptions, logger: Logger) throws {
        self.options = options
        self.logger = logger
        let analysis = try analysing ? MotionAnalysis(video: videoStream, options: options) : nil
        if analysis?.resumed == true { logger.debug("motion analysis goes on with what the previous pass learned (no warm-up)") }
        self.analysis = analysis
        let pictures = try options.snapshots.flatMap { requests in
            try analysis.map { _ in try TriggerPictures(requests: requests, logger: logger) }
        }
        self.pictures = pictures
        let interrupt = analysisInterrupt
        let analysisReader = try analysis.flatMap { a in
            try options.analysisSource.map {
                try AnalysisStreamReader(source: $0, width: a.width, height: a.height,
                                         keyframesOnly: options.analyseKeyframesOnly, paceRealTime: options.paceRealTime,
                                         interrupt: interrupt, logger: logger, keeping: pictures?.held)
            }
        }
        self.analysisReader = analysisReader
        sampler = try analysis.flatMap { a in
            analysisReader == nil
                ? try LumaSampler(input: input, width: a.width, height: a.height, keyframesOnly: options.analyseKeyframesOnly)
                : nil
        }
        zoneTriggers = ZoneTriggers(options.zoneTriggers)
        appliedZones = options.zones
        appliedZoneTriggers = options.zoneTriggers
    }

    /// Ends the pass: the analysis reader stops, held pictures go, and whatever ended the pass (the end of the input,
    /// a loss, a stop) the next one goes on with this detector.
    func close() {
        analysisReader?.stop()
        pictures?.held.release()
        if let analysis, let handover = options.motionHandover { handover.keep(analysis.detector) }
    }

    /// Whether the main stream's own pictures are decoded for analysis.
    var decodesMainStream: Bool { sampler != nil }

    /// Without decoding: the timeline reaches the video picture at `t`. False when `t` is not later than the latest.
    func advance(to t: MediaTime) -> Bool {
        guard sampler == nil, lastFrameTime == nil || t > lastFrameTime! else { return false }
        lastFrameTime = t
        return true
    }

    /// A main-stream packet to decode once its conditioned packet is in the buffer. Keyframe-only analysis never sends
    /// the other packets to the decoder (it would parse and drop them).
    func queue(_ packet: Packet) {
        guard sampler != nil, !options.analyseKeyframesOnly || packet.isKeyframe else { return }
        undecoded.append(packet)
    }

    /// Decodes the queued packets (`nil`: drains the decoder at the end) and hands each newly analysed picture on:
    /// its time, whether it is a keyframe, and what moved (nil when the detector skipped it at its analysis rate).
    func decodeQueued(draining: Bool = false, _ picture: (MediaTime, Bool, MotionSample?) throws -> Void) throws {
        guard let sampler else { return }
        let ready = undecoded
        undecoded.removeAll()
        let handle = { (decoded: DecodedPicture) throws in
            if let (t, sample) = try self.analysed(decoded) { try picture(t, decoded.isKeyframe, sample) }
        }
        for raw in ready { try sampler.decode(raw, handle) }
        if draining { try sampler.decode(nil, handle) }
    }

    /// The analysis stream's pictures up to main-stream time `t` (see ``AnalysisStreamReader`` for how the two line
    /// up), each sample handed to `motion`. Motion they show starts clips at `t`: the main frame being decided.
    func analyseOtherStream(upTo t: MediaTime, origin: MediaTime?, _ motion: (MotionSample) throws -> Void) throws {
        guard let reader = analysisReader, let origin else { return }
        let (pictures, outcome) = reader.take(upTo: t - origin, wait: reader.source.synchronous)
        for picture in pictures {
            options.metrics?.framesDecoded.increment()
            let at = origin + picture.offset
            analysisLag = max(analysisLag, t - at)
            if let sample = try detect(at: at, isKeyframe: picture.isKeyframe, luma: { picture.luma }) { try motion(sample) }
        }
        switch outcome {
        case .running: break
        case .failed(let error): throw MediaError("analysis source \(reader.source.url) failed: \(error)")
        case .ended where !AnalysisSource.isLocalFile(reader.source.url):
            throw MediaError("analysis source \(reader.source.url) ended while the main stream goes on")
        case .ended: break  // a file: the rest of the main stream has no motion to see
        }
    }

    /// The camera's zones and zone triggers as the desired state has them: from the next picture on.
    func follow(zones: [MotionZone], zoneTriggers triggers: [ZoneTrigger]) {
        if zones != appliedZones {
            appliedZones = zones
            analysis?.replaceZones(zones)
        }
        if triggers != appliedZoneTriggers {
            appliedZoneTriggers = triggers
            report(zoneTriggers.replace(with: triggers))
        }
    }

    /// Analysis ended at `end`: a zone still triggered stops with it.
    func finish(at end: MediaTime) {
        if analysis != nil { report(zoneTriggers.finish(at: end)) }
    }

    /// The report's motion intervals, on the timeline that starts at `origin`.
    func intervals(origin: MediaTime) -> [RecordingReport.MotionInterval] { analysis?.intervals(origin: origin) ?? [] }

    /// How the analysis stream was used, for the report (nil without one).
    var analysisSourceUse: RecordingReport.AnalysisSourceUse? {
        guard let analysisReader else { return nil }
        let counts = analysisReader.counts
        return .init(url: analysisReader.source.url, pictures: counts.decoded, droppedPictures: counts.dropped,
                     largestLag: analysisLag.seconds)
    }

    /// A picture of the main stream, decoded: its time and sample, or nil when it is not later than the latest.
    private func analysed(_ picture: DecodedPicture) throws -> (MediaTime, MotionSample?)? {
        guard analysis != nil else { return nil }
        options.metrics?.framesDecoded.increment()
        let t = picture.time
        if let last = lastFrameTime, t <= last { return nil }
        lastFrameTime = t
        // Before the detector: a trigger at t gets t's picture as its thumbnail.
        pictures?.keep(picture)
        return (t, try detect(at: t, isKeyframe: picture.isKeyframe, luma: picture.luma))
    }

    /// Runs the detector on the picture at `t` (if it wants one then) and counts what it did.
    private func detect(at t: MediaTime, isKeyframe: Bool, luma: () throws -> LumaImage) throws -> MotionSample? {
        guard var a = analysis else { return nil }
        let began = ContinuousClock.now
        let sample = try a.analyse(at: t, isKeyframe: isKeyframe, luma: luma)
        analysis = a
        if a.cameraMoved {
            // Counted and told, never a clip: the detector learns the new view.
            logger.warning("the camera moved: the whole picture shifted further than shake; motion detection starts over",
                           metadata: ["at": "\(t.seconds)"])
            options.metrics?.cameraMoved.increment()
        }
        if let metrics = options.metrics, sample != nil {
            metrics.framesAnalysed.increment()
            metrics.analysisTime.record(duration: ContinuousClock.now - began)
        }
        if let control = options.control, let sample {
            control.record {
                $0.framesAnalysed += 1
                if sample.anywhere != nil { $0.noteMotion(at: Date()) }
            }
        }
        if let sample { report(zoneTriggers.analysed(sample)) }
        return sample
    }

    private func report(_ events: [ZoneEvent]) {
        guard let sink = options.zoneEvents else { return }
        for event in events { sink(event) }
    }
}
