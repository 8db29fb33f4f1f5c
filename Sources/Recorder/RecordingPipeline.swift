import CMAF
import Domain
import Foundation
import Logging
import MediaIO
import Motion
import Timeline

/// The synchronous body of a recording; lives on the media thread. Demuxes once, analyses once, and feeds every
/// connection's ``ClipRunner`` from the same packets.
struct RecordingPipeline {
    let url: String
    let options: RecordingOptions
    let interrupt: InterruptFlag
    let stop: RecordingStop
    let logger: Logger
    let progress: (@Sendable (RecordingProgress) -> Void)?

    func run() throws -> RecordingReport {
        let input: MediaInput
        do {
            input = try MediaInput(url: url, interrupt: interrupt, options: options.inputOptions)
        } catch where stop.isRequested {
            throw RecordingStoppedBeforeStart(input: url)
        }
        guard let videoStream = input.video else {
            throw MediaError("\(url) has no video stream (\(input.formatName))")
        }
        let video = try input.conditioner(for: videoStream, keyframeInterval: options.segmentDuration)
        let audioStream = options.includeAudio ? input.audio : nil
        let audio = try audioStream.map { try input.conditioner(for: $0, keyframeInterval: options.segmentDuration) }
        let needsMotion = options.alwaysAnalyseMotion || options.policies.contains { $0.trigger == .motion }
        logger.info("recording", metadata: [
            "input": "\(url)", "video": "\(videoStream.codec)\(video.transcodes ? " (transcoding)" : "")",
            "audio": "\(audioStream.map { $0.codec + (audio!.transcodes ? " (transcoding)" : "") } ?? "none")",
            "motion analysis": "\(needsMotion)",
        ])

        var analysis = try needsMotion ? MotionAnalysis(video: videoStream, options: options) : nil
        if analysis?.resumed == true { logger.debug("motion analysis goes on with what the previous pass learned (no warm-up)") }
        // Whatever ends the pass (the end of the input, a loss, a stop), the next one goes on with this detector.
        defer { if let analysis, let handover = options.motionHandover { handover.keep(analysis.detector) } }
        // The analysed pictures, kept for thumbnails and snapshots (only where they are decoded anyway: with analysis).
        let pictures = try options.snapshots.flatMap { requests in
            try analysis.map { _ in try TriggerPictures(requests: requests, logger: logger) }
        }
        defer { pictures?.held.release() }
        let settings = SessionSettings(video: video, videoCodec: videoStream.codec, frameRate: videoStream.frameRate,
                                       audio: audio, audioCodec: audioStream?.codec, options: options, pictures: pictures)
        let runners = ClipRunners(settings: settings, options: options, logger: logger)
        options.control?.record {
            $0.videoWidth = videoStream.width
            $0.videoHeight = videoStream.height
        }
        // Zone Management's triggers, fed every analysed picture.
        var zoneTriggers = ZoneTriggers(options.zoneTriggers)
        func reportZoneEvents(_ events: [ZoneEvent]) {
            guard let sink = options.zoneEvents else { return }
            for event in events { sink(event) }
        }
        // Set when this recording ends (not by a stop request: the reader must not fail before the main stream ends).
        let analysisInterrupt = InterruptFlag()
        // With an analysis source the main stream is never decoded: motion comes from the other stream's pictures.
        let analysisReader = try analysis.flatMap { a in
            try options.analysisSource.map {
                try AnalysisStreamReader(source: $0, width: a.width, height: a.height,
                                         keyframesOnly: options.analyseKeyframesOnly, paceRealTime: options.paceRealTime,
                                         interrupt: analysisInterrupt, logger: logger, keeping: pictures?.held)
            }
        }
        defer { analysisReader?.stop() }
        let sampler = try analysis.flatMap { a in
            analysisReader == nil
                ? try LumaSampler(input: input, width: a.width, height: a.height, keyframesOnly: options.analyseKeyframesOnly)
                : nil
        }
        // At least MaxPreRollLen plus two keyframe intervals; the interval is learnt from the stream.
        var keyframeInterval = MediaTime.seconds(2)
        var lastKeyframe: MediaTime?
        var keyframeGaps = KeyframeGaps(limit: options.policies.map(\.maxPreRoll).filter { $0 > .zero }.min())
        let buffer = PreRollBuffer(retention: runners.maxPreRoll + keyframeInterval + keyframeInterval,
                                   byteLimit: options.preRollByteLimit)
        var overflow = BufferOverflow()
        // Video packets wait here, in decode order, until it is known whether they can start a segment (an HEVC CRA
        // is SAP 1/2 only if no RASL picture follows it); their analysis waits with them (`undecoded`), so a decision
        // at frame t still finds t's packet, with its verdict, in the buffer.
        var lookahead = AccessPointLookahead<Packet>()
        var undecoded: [Packet] = []
        var origin: MediaTime?  // the first video frame: 0 on the report's timeline
        var newest = MediaTime.zero  // latest presentation time read
        var videoEnd = MediaTime.zero  // end of the latest-presented video frame
        var lastFrameTime: MediaTime?
        let frameDuration = MediaTime(seconds: 1 / max(videoStream.frameRate ?? 30, 1))
        var analysisLag = MediaTime.zero  // how late the analysis stream's pictures were applied, at most

        func trim() {
            let pushedOut = buffer.trim(newest: newest, keepFrom: runners.oldestNeeded)
            for entry in pushedOut {
                let sessions = runners.sessions(needing: entry)
                guard !sessions.isEmpty else { continue }
                overflow.count(entry, sessions: sessions, at: newest, logger: logger, byteLimit: buffer.byteLimit)
            }
        }

        /// Sends a video packet into the lookahead; what it has decided goes on to the buffer.
        func decideVideo(_ packet: Packet) throws {
            for decided in lookahead.add(try packet.reference(), video.accessPoint(packet)) {
                try appendVideo(decided.item, randomAccess: decided.isAccessPoint)
            }
        }

        /// The input ended or failed: nothing follows the held pictures, so a held CRA had no RASL pictures.
        func flushVideo() throws {
            for decided in lookahead.flush() { try appendVideo(decided.item, randomAccess: decided.isAccessPoint) }
        }

        /// Decodes for analysis the raw packets whose conditioned packets are all in the buffer.
        func analyseBuffered() throws {
            guard lookahead.isEmpty, let sampler else { return }
            let ready = undecoded
            undecoded.removeAll()
            for raw in ready { try sampler.decode(raw, analysed) }
        }

        func appendVideo(_ packet: Packet, randomAccess: Bool) throws {
            guard let pts = packet.pts ?? packet.dts else { return }
            let t = video.timeBase.time(pts)
            let dts = packet.dts.map { video.timeBase.time($0) } ?? t
            // What we write as a sync sample is what we accept as a segment start (a CRA may come without the flag).
            if randomAccess { packet.isKeyframe = true }
            if origin == nil || t < origin! { origin = t }
            newest = max(newest, t)
            let duration = packet.duration > 0 ? video.timeBase.time(packet.duration) : frameDuration
            videoEnd = max(videoEnd, t + duration)
            if let last = lastKeyframe { keyframeGaps.picture(at: t, lastKeyframe: last, logger: logger) }
            if randomAccess {
                if let last = lastKeyframe, t > last {
                    if keyframeGaps.nominal == nil, let tooShort = options.policies.first(where: {
                        $0.maxPreRoll > .zero && $0.maxPreRoll < t - last
                    }) {
                        // Allocation would refuse this pre-roll against the stream's KeyFrameInterval (rule 9): the
                        // first interval is the stream's configured one. Later, longer gaps only lengthen pre-rolls.
                        throw MediaError("cluster InvalidPreRollLength (0x0C): maxPreRollLen \(tooShort.maxPreRoll.converted(to: 1000).value) ms "
                            + "is shorter than the input's keyframe interval \((t - last).converted(to: 1000).value) ms")
                    }
                    keyframeGaps.keyframe(at: t, after: last, logger: logger)
                    keyframeInterval = max(keyframeInterval, t - last)
                    buffer.retention = runners.maxPreRoll + keyframeInterval + keyframeInterval
                }
                lastKeyframe = t
            }
            try buffer.append(packet, kind: .video, pts: t, dts: dts, isRandomAccess: randomAccess)
            // Without analysis of this stream the timeline advances with the packets themselves (monotonic
            // presentation time); an analysis stream's pictures up to t then decide motion at t.
            if sampler == nil, lastFrameTime == nil || t > lastFrameTime! {
                lastFrameTime = t
                try runners.frame(at: t, isKeyframe: randomAccess, buffer: buffer)
                try analyseOtherStream(upTo: t)
            }
            try runners.pump(buffer: buffer, analysisTime: lastFrameTime)
        }

        func appendAudio(_ packet: Packet) throws {
            guard let audio, let pts = packet.pts else { return }
            let t = audio.timeBase.time(pts)
            try buffer.append(packet, kind: .audio, pts: t, dts: t, isRandomAccess: true)
            try runners.pump(buffer: buffer, analysisTime: lastFrameTime)
        }

        /// Runs the detector on the picture at `t` (if it wants one then) and counts what it did.
        func detect(at t: MediaTime, isKeyframe: Bool, luma: () throws -> LumaImage) throws -> MotionSample? {
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
            if let sample { reportZoneEvents(zoneTriggers.analysed(sample)) }
            return sample
        }

        /// A picture of the main stream, decoded for analysis.
        func analysed(_ picture: DecodedPicture) throws {
            guard analysis != nil else { return }
            options.metrics?.framesDecoded.increment()
            let t = picture.time
            if let last = lastFrameTime, t <= last { return }
            lastFrameTime = t
            // Before the detector: a trigger at t gets t's picture as its thumbnail.
            pictures?.keep(picture)
            let sample = try detect(at: t, isKeyframe: picture.isKeyframe, luma: picture.luma)
            try runners.picture(at: t, isKeyframe: picture.isKeyframe, sample: sample, buffer: buffer)
        }

        /// The analysis stream's pictures up to main-stream time `t` (see ``AnalysisStreamReader`` for how the two
        /// line up). Motion they show starts clips at `t`: the main frame being decided, which already is in the buffer.
        func analyseOtherStream(upTo t: MediaTime) throws {
            guard let reader = analysisReader, let origin else { return }
            let (pictures, outcome) = reader.take(upTo: t - origin, wait: reader.source.synchronous)
            for picture in pictures {
                options.metrics?.framesDecoded.increment()
                let at = origin + picture.offset
                analysisLag = max(analysisLag, t - at)
                guard let sample = try detect(at: at, isKeyframe: picture.isKeyframe, luma: { picture.luma }) else { continue }
                try runners.motion(sample, at: t, buffer: buffer)
            }
            switch outcome {
            case .running: break
            case .failed(let error): throw MediaError("analysis source \(reader.source.url) failed: \(error)")
            case .ended where !AnalysisSource.isLocalFile(reader.source.url):
                throw MediaError("analysis source \(reader.source.url) ended while the main stream goes on")
            case .ended: break  // a file: the rest of the main stream has no motion to see
            }
        }

        /// Brings the runners to what ``RecordingControl`` holds, at the media time reached (the latest analysed
        /// picture); the analysis follows the desired zones and zone triggers.
        var appliedZones = options.zones
        var appliedZoneTriggers = options.zoneTriggers
        func applyControl() throws {
            guard let control = options.control else { return }
            let update = control.take()
            guard update.desired != nil || !update.triggers.isEmpty || !update.failedSessions.isEmpty else { return }
            try runners.apply(update, at: lastFrameTime ?? newest, analysisTime: lastFrameTime, buffer: buffer) { desired in
                buffer.retention = runners.maxPreRoll + keyframeInterval + keyframeInterval
                if desired.zones != appliedZones {
                    appliedZones = desired.zones
                    analysis?.replaceZones(desired.zones)
                }
                if desired.zoneTriggers != appliedZoneTriggers {
                    appliedZoneTriggers = desired.zoneTriggers
                    reportZoneEvents(zoneTriggers.replace(with: desired.zoneTriggers))
                }
            }
        }

        // Real-time pacing (a file standing in for a camera): video packet times against the wall clock.
        var pacer = RealTimePacer()
        func paceVideo(_ time: MediaTime) throws {
            guard let due = pacer.due(time) else { return }
            while ContinuousClock.now < due, !stop.isRequested {
                Thread.sleep(forTimeInterval: min(0.02, max(0, (due - ContinuousClock.now) / .seconds(1))))
                try applyControl()
            }
        }

        var report = RecordingReport(
            input: .init(url: url, container: input.formatName, duration: input.duration,
                         video: RecordingReport.StreamFacts(videoStream), audio: input.audio.map { RecordingReport.StreamFacts($0) }),
            options: .init(policies: options.policies.map(RecordingReport.PolicyEcho.init),
                           segmentDuration: Int(options.segmentDuration.converted(to: 1000).value),
                           chunkDuration: Int(options.chunkDuration?.converted(to: 1000).value ?? 0),
                           audio: audioStream != nil),
            sessions: [])

        let reader = try PacketReader(input: input, videoStream: videoStream, audioStream: audioStream, logger: logger)
        var failure: (any Error)?
        var stopped = false
        var lastProgress = ContinuousClock.now

        func videoPacket(_ p: Packet) throws {
            // Buffer first, analyse second: a decision at frame t must find t's own packet in the buffer
            // (a clip or a continuous session that begins on a keyframe starts at that keyframe).
            try video.push(p, emit: decideVideo)
            if sampler != nil {
                // Keyframe-only analysis never sends the other packets to the decoder (it would parse and drop them).
                if !options.analyseKeyframesOnly || p.isKeyframe {
                    undecoded.append(p)  // already our own reference: the demuxer reuses only `packet`
                }
                try analyseBuffered()
            }
        }

        func audioPacket(_ p: Packet) throws {
            try audio?.push(p, emit: appendAudio)
        }

        func conditioned(_ item: PacketReader.Item) throws {
            switch item {
            case .video(let p): try videoPacket(p)
            case .audio(let p): try audioPacket(p)
            }
        }

        do {
            while true {
                let more: Bool
                do {
                    more = try reader.read()
                } catch {
                    guard stop.isRequested else { throw error }
                    // The stop interrupted the read (or came between two): what was read so far is the recording.
                    stopped = true
                    logger.notice("stop requested; ending open clips at the last frame read",
                                  metadata: ["at": "\((newest - (origin ?? newest)).seconds)"])
                    break
                }
                guard more else { break }
                try applyControl()
                pictures?.answerSnapshotRequests()
                if options.paceRealTime, let t = reader.currentVideoTime { try paceVideo(t) }
                options.control?.record {
                    $0.packetsRead += 1
                    $0.lastPacketRead = .now
                }
                if let item = try reader.admit() { try conditioned(item) }
                trim()
                if let progress, ContinuousClock.now - lastProgress > .seconds(1) {
                    lastProgress = .now
                    progress(RecordingProgress(position: (newest - (origin ?? newest)).seconds, duration: input.duration,
                                               sessions: runners.sessionCount))
                }
            }
            for item in reader.flush() { try conditioned(item) }
            try flushVideo()
            try analyseBuffered()
            if let sampler { try sampler.decode(nil, analysed) }
            try video.drain(emit: decideVideo)
            try flushVideo()
            try audio?.drain(emit: appendAudio)
            // A file that simply stops is not an error to FFmpeg's demuxers; the index or a cut-off packet tells.
            // A stopped recording did not read to the end, so none of this applies to it.
            if !stopped { try reader.checkComplete(newest: newest, origin: origin) }
        } catch {
            failure = error
            logger.notice("input failed; closing open clips with what was read", metadata: ["error": "\(error)"])
            try? flushVideo()  // pictures read before the fault still belong to their clips
        }
        // Analysis ended: a zone still triggered stops with it.
        if analysis != nil { reportZoneEvents(zoneTriggers.finish(at: videoEnd)) }
        // Every runner ends, whatever another one's failure: each open recording gets its End.
        do {
            try runners.endOfInput(at: videoEnd, stopped: stopped, buffer: buffer)
        } catch where failure == nil {
            throw error
        } catch {}

        let zero = origin ?? .zero
        for var record in runners.records {
            record.rebase(to: zero)
            report.sessions.append(record)
            options.events?(.sessionFinished(record))
        }
        report.sessions.sort { ($0.start, $0.session) < ($1.start, $1.session) }
        report.motion = analysis?.intervals(origin: zero) ?? []
        if let analysisReader {
            let counts = analysisReader.counts
            report.analysisSource = .init(url: analysisReader.source.url, pictures: counts.decoded,
                                          droppedPictures: counts.dropped, largestLag: analysisLag.seconds)
        }
        report.input.damage = .init(video: reader.videoTimestamps, audio: reader.audioTimestamps,
                                        conditionerDrops: (video.droppedPackets, audio?.droppedPackets ?? 0))
        let damage = report.input.damage
        if damage.droppedPackets + damage.repairedTimestamps > 0 {
            logger.warning("input damaged: \(damage.droppedPackets) packet(s) dropped, \(damage.repairedTimestamps) timestamp(s) repaired")
        }
        report.preRollBuffer = .init(peakBytes: buffer.peakBytes, peakPackets: buffer.peakPackets,
                                     retention: buffer.retention.seconds, droppedPackets: overflow.packets,
                                     droppedBytes: overflow.bytes, affectedSessions: overflow.sessions.sorted())
        report.droppedClips = runners.dropped.map { var d = $0; d.trigger -= zero.seconds; return d }
            .sorted { $0.trigger < $1.trigger }
        report.longKeyframeIntervals = keyframeGaps.report(inputEnd: videoEnd, lastKeyframe: lastKeyframe)
        // Same arithmetic as the sessions' rebased times: an open clip's `end` equals it exactly.
        if stopped { report.stoppedAt = videoEnd.seconds - zero.seconds }
        if let failure {
            report.error = "\(failure)"
            throw RecordingFailure(underlying: failure, report: report)
        }
        if report.sessions.isEmpty && !needsMotion && !stopped && options.control == nil {
            throw MediaError("\(url): no decodable video keyframe found")
        }
        return report
    }
}

/// Keyframe spacing as the recording sees it. The first interval is the stream's own (allocation checks MaxPreRollLen
/// against it); a later gap longer than the shortest MaxPreRollLen (a late or missing IDR on a live camera) is logged
/// once, when it passes the limit, and counted: clips in it simply get a longer pre-roll.
struct KeyframeGaps {
    let limit: MediaTime?
    /// The first keyframe interval; nil until the second keyframe.
    private(set) var nominal: MediaTime?
    private var count = 0
    private var longest: MediaTime?
    private var overdue = false

    init(limit: MediaTime?) { self.limit = limit }

    /// A video picture at `t`, the latest keyframe being at `lastKeyframe`.
    mutating func picture(at t: MediaTime, lastKeyframe: MediaTime, logger: Logger) {
        guard let limit, let nominal, !overdue, t - lastKeyframe > limit else { return }
        overdue = true
        count += 1
        logger.warning("no keyframe for longer than MaxPreRollLen; clips in this gap get a longer pre-roll", metadata: [
            "lastKeyframe": "\(lastKeyframe.seconds)", "maxPreRollLen": "\(limit.seconds)", "keyframeInterval": "\(nominal.seconds)",
        ])
    }

    /// A keyframe at `t` after the one at `last`.
    mutating func keyframe(at t: MediaTime, after last: MediaTime, logger: Logger) {
        guard nominal != nil else {
            nominal = t - last
            return
        }
        if overdue {
            overdue = false
            longest = max(longest ?? .zero, t - last)
            logger.notice("keyframe after a long gap", metadata: ["at": "\(t.seconds)", "gap": "\((t - last).seconds)"])
        }
    }

    func report(inputEnd: MediaTime, lastKeyframe: MediaTime?) -> RecordingReport.LongKeyframeIntervals {
        var longest = self.longest
        if overdue, let lastKeyframe { longest = max(longest ?? .zero, inputEnd - lastKeyframe) }  // never ended
        return .init(count: count, longest: longest?.seconds, limit: limit?.seconds)
    }
}

/// The motion detector and the detected intervals the report lists.
struct MotionAnalysis {
    private(set) var detector: MotionDetector
    /// Whether `detector` is the previous pass's (``RecordingOptions/motionHandover``), resumed.
    let resumed: Bool
    private let reportSensitivity: Int
    private var intervals: [(start: MediaTime, end: MediaTime)] = []
    private var lastMotion: MediaTime?
    /// The last analysed picture showed the camera moved (not shaken): the detector started over, nothing triggered.
    private(set) var cameraMoved = false
    /// The luma plane analysed (pictures are scaled to exactly this).
    let width: Int
    let height: Int

    /// The camera's zones changed: from the next picture on, motion is located in the new ones.
    mutating func replaceZones(_ zones: [MotionZone]) {
        detector.replaceZones(zones)
    }

    /// Analysis of `video` (zones are in its pixel coordinates), whichever stream the pictures come from.
    init(video: StreamDescription, options: RecordingOptions) throws {
        guard let w = video.width, let h = video.height else { throw MediaError("no video size") }
        // The analysis plane keeps at least 8 pixels a side; a picture narrower than that (a damaged header) has
        // nothing to analyse, and the detector and the sampler would disagree on the plane's size.
        guard w >= 8, h >= 8 else { throw MediaError("video picture \(w)x\(h) is too small to analyse for motion") }
        var config = MotionDetectorConfiguration(sourceWidth: w, sourceHeight: h, sensitivity: options.reportSensitivity,
                                                 zones: options.zones)
        let size = MotionDetectorConfiguration.analysisSize(sourceWidth: w, sourceHeight: h, longSide: options.analysisWidth)
        config.analysisWidth = size.width
        config.analysisHeight = size.height
        config.analysisInterval = options.analysisInterval
        (detector, resumed) = options.motionHandover?.take(for: config) ?? (MotionDetector(configuration: config), false)
        (width, height) = (size.width, size.height)
        reportSensitivity = options.reportSensitivity
    }

    /// Analyses the picture at `time` if the detector wants it (its analysis rate) and returns what moved, or nil.
    mutating func analyse(at time: MediaTime, isKeyframe: Bool, luma: () throws -> LumaImage) throws -> MotionSample? {
        let seconds = time.seconds
        guard detector.wantsFrame(at: seconds) else { return nil }
        let image = try luma()
        guard let result = detector.analyse(LumaPlane(width: image.width, height: image.height, pixels: image.pixels),
                                            at: seconds, isKeyframe: isKeyframe)
        else { return nil }
        cameraMoved = result.cameraMoved
        if result.anywhere.moved(atSensitivity: reportSensitivity) {
            // One interval while motion keeps being seen; a gap of more than a second starts a new one.
            if let last = lastMotion, time - last <= .seconds(1), !intervals.isEmpty {
                intervals[intervals.count - 1].end = time
            } else {
                intervals.append((time, time))
            }
            lastMotion = time
        }
        var zones: [UInt16: Int] = [:]
        for (id, motion) in result.zones { if let s = motion.lowestSensitivity { zones[UInt16(id)] = s } }
        return MotionSample(time: time, anywhere: result.anywhere.lowestSensitivity,
                            outsideZones: result.outsideZones.lowestSensitivity, zones: zones)
    }

    func intervals(origin: MediaTime) -> [RecordingReport.MotionInterval] {
        intervals.map { .init(start: ($0.start - origin).seconds, end: ($0.end - origin).seconds) }
    }
}
