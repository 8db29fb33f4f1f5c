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
    let logger: Logger
    let progress: (@Sendable (RecordingProgress) -> Void)?

    func run() throws -> RecordingReport {
        let input = try MediaInput(url: url, interrupt: interrupt, options: options.inputOptions)
        guard let videoStream = input.video else {
            throw MediaError("\(url) has no video stream (\(input.formatName))")
        }
        let video = try input.conditioner(for: videoStream, keyframeInterval: options.segmentDuration)
        let audioStream = options.includeAudio ? input.audio : nil
        let audio = try audioStream.map { try input.conditioner(for: $0, keyframeInterval: options.segmentDuration) }
        let settings = SessionSettings(video: video, videoCodec: videoStream.codec, frameRate: videoStream.frameRate,
                                       audio: audio, audioCodec: audioStream?.codec, options: options)
        let runners = options.policies.map { ClipRunner(policy: $0, settings: settings, logger: logger) }
        let needsMotion = options.policies.contains { $0.trigger == .motion }
        logger.info("recording", metadata: [
            "input": "\(url)", "video": "\(videoStream.codec)\(video.transcodes ? " (transcoding)" : "")",
            "audio": "\(audioStream.map { $0.codec + (audio!.transcodes ? " (transcoding)" : "") } ?? "none")",
            "motion analysis": "\(needsMotion)",
        ])

        var analysis = try needsMotion ? MotionAnalysis(input: input, options: options) : nil
        let maxPreRoll = options.policies.map(\.maxPreRoll).max() ?? .zero
        // At least MaxPreRollLen plus two keyframe intervals; the interval is learnt from the stream.
        var keyframeInterval = MediaTime.seconds(2)
        var lastKeyframe: MediaTime?
        let buffer = PreRollBuffer(retention: maxPreRoll + keyframeInterval + keyframeInterval,
                                   byteLimit: options.preRollByteLimit)
        var origin: MediaTime?  // the first video frame: 0 on the report's timeline
        var newest = MediaTime.zero  // latest presentation time read
        var videoEnd = MediaTime.zero  // end of the latest-presented video frame
        var lastFrameTime: MediaTime?
        let frameDuration = MediaTime(seconds: 1 / max(videoStream.frameRate ?? 30, 1))

        func trim() {
            buffer.trim(newest: newest, keepFrom: runners.compactMap(\.oldestNeeded).min())
        }

        func appendVideo(_ packet: Packet) throws {
            guard let pts = packet.pts ?? packet.dts else { return }
            let t = video.timeBase.time(pts)
            let dts = packet.dts.map { video.timeBase.time($0) } ?? t
            let randomAccess = video.isRandomAccess(packet)
            if origin == nil || t < origin! { origin = t }
            newest = max(newest, t)
            let duration = packet.duration > 0 ? video.timeBase.time(packet.duration) : frameDuration
            videoEnd = max(videoEnd, t + duration)
            if randomAccess {
                if let last = lastKeyframe, t > last {
                    if let tooShort = options.policies.first(where: {
                        $0.maxPreRoll > .zero && $0.maxPreRoll < t - last
                    }) {
                        // Allocation would refuse this pre-roll against the stream's KeyFrameInterval (rule 9).
                        throw MediaError("cluster InvalidPreRollLength (0x0C): maxPreRollLen \(tooShort.maxPreRoll.converted(to: 1000).value) ms "
                            + "is shorter than the input's keyframe interval \((t - last).converted(to: 1000).value) ms")
                    }
                    keyframeInterval = max(keyframeInterval, t - last)
                    buffer.retention = maxPreRoll + keyframeInterval + keyframeInterval
                }
                lastKeyframe = t
            }
            try buffer.append(packet, kind: .video, pts: t, dts: dts, isRandomAccess: randomAccess)
            // Without analysis the timeline advances with the packets themselves (monotonic presentation time).
            if !needsMotion, lastFrameTime == nil || t > lastFrameTime! {
                lastFrameTime = t
                for r in runners { try r.frame(at: t, isKeyframe: randomAccess, buffer: buffer) }
            }
            for r in runners { try r.pump(buffer: buffer, analysisTime: lastFrameTime, inputEnded: false) }
        }

        func appendAudio(_ packet: Packet) throws {
            guard let audio, let pts = packet.pts else { return }
            let t = audio.timeBase.time(pts)
            try buffer.append(packet, kind: .audio, pts: t, dts: t, isRandomAccess: true)
            for r in runners { try r.pump(buffer: buffer, analysisTime: lastFrameTime, inputEnded: false) }
        }

        func analysed(_ picture: DecodedPicture) throws {
            guard var a = analysis else { return }
            let t = picture.time
            if let last = lastFrameTime, t <= last { return }
            lastFrameTime = t
            let sample = try a.analyse(picture, origin: origin ?? t)
            analysis = a
            for r in runners {
                try r.frame(at: t, isKeyframe: picture.isKeyframe, buffer: buffer)
                if let sample, r.policy.trigger == .motion, r.policy.motionFilter.matches(sample) {
                    try r.motion(at: t, buffer: buffer)
                }
                try r.pump(buffer: buffer, analysisTime: t, inputEnded: false)
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

        let packet = try Packet()
        var failure: (any Error)?
        var videoPacketsRead = 0
        var lastVideoPacketCorrupt = false
        var lastProgress = ContinuousClock.now
        // Damaged or glitching timestamps are dropped or repaired here, before anything else sees the packet, so the
        // analysis, the pre-roll buffer and every muxer agree on one timeline (see TimestampRepair).
        var videoTimestamps = TimestampRepair<Packet>(ticksPerSecond: videoStream.timeBase.ticksPerSecond)
        var audioTimestamps = TimestampRepair<Packet>(ticksPerSecond: audioStream?.timeBase.ticksPerSecond ?? 1)
        var timestampWarnings = Set<String>()

        func note(_ stream: String, dropped: [TimestampRepair<Packet>.Problem], repaired: [TimestampRepair<Packet>.Problem]) {
            for (what, problem) in dropped.map({ ("dropped a packet", $0) }) + repaired.map({ ("repaired a timestamp", $0) }) {
                // The first of each kind is a warning; the rest are counted (report.json) and logged at debug level.
                let first = timestampWarnings.insert("\(stream) \(what) \(problem)").inserted
                logger.log(level: first ? .warning : .debug, "input \(stream): \(what) (\(problem.rawValue))")
            }
        }

        func videoPacket(_ repaired: TimestampRepair<Packet>.Output) throws {
            let p = repaired.payload
            (p.pts, p.dts, p.duration) = (repaired.pts, repaired.dts, repaired.duration)
            note("video", dropped: [], repaired: repaired.repairs)
            // Buffer first, analyse second: a decision at frame t must find t's own packet in the buffer
            // (a clip or a continuous session that begins on a keyframe starts at that keyframe).
            try video.push(p, emit: appendVideo)
            if let sampler = analysis?.sampler { try sampler.decode(p, analysed) }
        }

        func audioPacket(_ repaired: TimestampRepair<Packet>.Output) throws {
            guard let audio else { return }
            let p = repaired.payload
            (p.pts, p.dts, p.duration) = (repaired.pts, repaired.dts, repaired.duration)
            note("audio", dropped: [], repaired: repaired.repairs)
            try audio.push(p, emit: appendAudio)
        }

        do {
            while try input.read(into: packet) {
                if packet.streamIndex == videoStream.index {
                    videoPacketsRead += 1
                    lastVideoPacketCorrupt = packet.isCorrupt
                    let step = videoTimestamps.admit(try packet.reference(), pts: packet.pts, dts: packet.dts,
                                                     duration: packet.duration)
                    note("video", dropped: step.dropped, repaired: [])
                    if let output = step.output { try videoPacket(output) }
                } else if audio != nil, packet.streamIndex == audioStream?.index {
                    let step = audioTimestamps.admit(try packet.reference(), pts: packet.pts, dts: packet.dts,
                                                     duration: packet.duration)
                    note("audio", dropped: step.dropped, repaired: [])
                    if let output = step.output { try audioPacket(output) }
                }
                trim()
                if let progress, ContinuousClock.now - lastProgress > .seconds(1) {
                    lastProgress = .now
                    progress(RecordingProgress(position: (newest - (origin ?? newest)).seconds, duration: input.duration,
                                               sessions: runners.map(\.sessionCount).reduce(0, +)))
                }
            }
            if let output = videoTimestamps.flush() { try videoPacket(output) }
            if let output = audioTimestamps.flush() { try audioPacket(output) }
            if let sampler = analysis?.sampler { try sampler.decode(nil, analysed) }
            try video.drain(emit: appendVideo)
            try audio?.drain(emit: appendAudio)
            // A file that simply stops is not an error to FFmpeg's demuxers; the index or a cut-off packet tells.
            if let expected = input.indexedVideoFrames, videoPacketsRead < expected {
                throw MediaError(String(format: "%@ is truncated: its index lists %d video frames, only %d could be read "
                    + "(input ends at %.3f s)", url, expected, videoPacketsRead, (newest - (origin ?? .zero)).seconds))
            } else if input.endsInsidePacket {
                throw MediaError("\(url) is truncated: it ends inside a transport-stream packet")
            } else if lastVideoPacketCorrupt {
                throw MediaError("\(url) is truncated: its last video frame is cut off")
            }
        } catch {
            failure = error
            logger.notice("input failed; closing open clips with what was read", metadata: ["error": "\(error)"])
        }
        for r in runners { try r.endOfInput(at: videoEnd, buffer: buffer) }

        let zero = origin ?? .zero
        for r in runners {
            for var record in r.records {
                guard !record.tracks.isEmpty else {
                    logger.warning("session \(record.session) got no media before the input failed; its headers were removed")
                    continue
                }
                record.rebase(to: zero)
                report.sessions.append(record)
                options.events?(.sessionFinished(record))
            }
        }
        report.sessions.sort { ($0.start, $0.session) < ($1.start, $1.session) }
        report.motion = analysis?.intervals(origin: zero) ?? []
        report.input.damage = .init(video: videoTimestamps, audio: audioTimestamps,
                                        conditionerDrops: (video.droppedPackets, audio?.droppedPackets ?? 0))
        let damage = report.input.damage
        if damage.droppedPackets + damage.repairedTimestamps > 0 {
            logger.warning("input damaged: \(damage.droppedPackets) packet(s) dropped, \(damage.repairedTimestamps) timestamp(s) repaired")
        }
        report.preRollBuffer = .init(peakBytes: buffer.peakBytes, peakPackets: buffer.peakPackets,
                                     retention: buffer.retention.seconds)
        if let failure {
            report.error = "\(failure)"
            throw RecordingFailure(underlying: failure, report: report)
        }
        if report.sessions.isEmpty && !needsMotion {
            throw MediaError("\(url): no decodable video keyframe found")
        }
        return report
    }
}

/// Decoding to luma planes, the motion detector, and the detected intervals the report lists.
struct MotionAnalysis {
    let sampler: LumaSampler
    private var detector: MotionDetector
    private let reportSensitivity: Int
    private var intervals: [(start: MediaTime, end: MediaTime)] = []
    private var lastMotion: MediaTime?

    init(input: MediaInput, options: RecordingOptions) throws {
        guard let v = input.video, let w = v.width, let h = v.height else { throw MediaError("no video size") }
        // The analysis plane keeps at least 8 pixels a side; a picture narrower than that (a damaged header) has
        // nothing to analyse, and the detector and the sampler would disagree on the plane's size.
        guard w >= 8, h >= 8 else { throw MediaError("video picture \(w)x\(h) is too small to analyse for motion") }
        var config = MotionDetectorConfiguration(sourceWidth: w, sourceHeight: h, sensitivity: options.reportSensitivity,
                                                 zones: options.zones)
        let size = MotionDetectorConfiguration.analysisSize(sourceWidth: w, sourceHeight: h, longSide: options.analysisWidth)
        config.analysisWidth = size.width
        config.analysisHeight = size.height
        config.analysisInterval = options.analysisInterval
        detector = MotionDetector(configuration: config)
        sampler = try LumaSampler(input: input, width: size.width, height: size.height)
        reportSensitivity = options.reportSensitivity
    }

    /// Analyses the picture if the detector wants it (its analysis rate) and returns what moved, or nil.
    mutating func analyse(_ picture: DecodedPicture, origin: MediaTime) throws -> MotionSample? {
        let seconds = picture.time.seconds
        guard detector.wantsFrame(at: seconds) else { return nil }
        let image = try picture.luma()
        guard let result = detector.analyse(LumaPlane(width: image.width, height: image.height, pixels: image.pixels),
                                            at: seconds, isKeyframe: picture.isKeyframe)
        else { return nil }
        if result.anywhere.moved(atSensitivity: reportSensitivity) {
            // One interval while motion keeps being seen; a gap of more than a second starts a new one.
            if let last = lastMotion, picture.time - last <= .seconds(1), !intervals.isEmpty {
                intervals[intervals.count - 1].end = picture.time
            } else {
                intervals.append((picture.time, picture.time))
            }
            lastMotion = picture.time
        }
        var zones: [UInt16: Int] = [:]
        for (id, motion) in result.zones { if let s = motion.lowestSensitivity { zones[UInt16(id)] = s } }
        return MotionSample(time: picture.time, anywhere: result.anywhere.lowestSensitivity,
                            outsideZones: result.outsideZones.lowestSensitivity, zones: zones)
    }

    func intervals(origin: MediaTime) -> [RecordingReport.MotionInterval] {
        intervals.map { .init(start: ($0.start - origin).seconds, end: ($0.end - origin).seconds) }
    }
}
