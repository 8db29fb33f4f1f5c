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

        let motion = try MotionStage(analysing: needsMotion, input: input, videoStream: videoStream, options: options,
                                     logger: logger)
        defer { motion.close() }
        let pictures = motion.pictures
        let settings = SessionSettings(video: video, videoCodec: videoStream.codec, frameRate: videoStream.frameRate,
                                       audio: audio, audioCodec: audioStream?.codec, options: options, pictures: pictures)
        let runners = ClipRunners(settings: settings, options: options, logger: logger)
        options.control?.record {
            $0.videoWidth = videoStream.width
            $0.videoHeight = videoStream.height
        }
        var timeline = InputTimeline(preRolls: options.policies.map(\.maxPreRoll))
        let buffer = PreRollBuffer(retention: timeline.retention(maxPreRoll: runners.maxPreRoll),
                                   byteLimit: options.preRollByteLimit)
        var overflow = BufferOverflow()
        let tracks = ConditionedTracks(video: video, audio: audio)
        let frameDuration = MediaTime(seconds: 1 / max(videoStream.frameRate ?? 30, 1))

        func trim() {
            let pushedOut = buffer.trim(newest: timeline.newest, keepFrom: runners.oldestNeeded)
            for entry in pushedOut {
                let sessions = runners.sessions(needing: entry)
                guard !sessions.isEmpty else { continue }
                overflow.count(entry, sessions: sessions, at: timeline.newest, logger: logger, byteLimit: buffer.byteLimit)
            }
        }

        /// Decodes for analysis the raw packets whose conditioned packets are all in the buffer.
        func analyseBuffered(draining: Bool = false) throws {
            guard tracks.settled || draining else { return }
            try motion.decodeQueued(draining: draining) { t, isKeyframe, sample in
                try runners.picture(at: t, isKeyframe: isKeyframe, sample: sample, buffer: buffer)
            }
        }

        /// The write stage: a conditioned video packet into the pre-roll buffer, the timeline advanced, the runners fed.
        func appendVideo(_ packet: Packet, randomAccess: Bool) throws {
            guard let pts = packet.pts ?? packet.dts else { return }
            let t = video.timeBase.time(pts)
            let dts = packet.dts.map { video.timeBase.time($0) } ?? t
            // What we write as a sync sample is what we accept as a segment start (a CRA may come without the flag).
            if randomAccess { packet.isKeyframe = true }
            let duration = packet.duration > 0 ? video.timeBase.time(packet.duration) : frameDuration
            try timeline.picture(at: t, duration: duration, randomAccess: randomAccess, logger: logger)
            buffer.retention = timeline.retention(maxPreRoll: runners.maxPreRoll)
            try buffer.append(packet, kind: .video, pts: t, dts: dts, isRandomAccess: randomAccess)
            // Without analysis of this stream the timeline advances with the packets themselves (monotonic
            // presentation time); an analysis stream's pictures up to t then decide motion at t.
            if motion.advance(to: t) {
                try runners.frame(at: t, isKeyframe: randomAccess, buffer: buffer)
                try motion.analyseOtherStream(upTo: t, origin: timeline.origin) { sample in
                    try runners.motion(sample, at: t, buffer: buffer)
                }
            }
            try runners.pump(buffer: buffer, analysisTime: motion.lastFrameTime)
        }

        func appendAudio(_ packet: Packet) throws {
            guard let audio, let pts = packet.pts else { return }
            let t = audio.timeBase.time(pts)
            try buffer.append(packet, kind: .audio, pts: t, dts: t, isRandomAccess: true)
            try runners.pump(buffer: buffer, analysisTime: motion.lastFrameTime)
        }

        /// Brings the runners to what ``RecordingControl`` holds, at the media time reached (the latest analysed
        /// picture); the analysis follows the desired zones and zone triggers.
        func applyControl() throws {
            guard let control = options.control else { return }
            let update = control.take()
            guard update.desired != nil || !update.triggers.isEmpty || !update.failedSessions.isEmpty else { return }
            try runners.apply(update, at: motion.lastFrameTime ?? timeline.newest, analysisTime: motion.lastFrameTime,
                              buffer: buffer) { desired in
                buffer.retention = timeline.retention(maxPreRoll: runners.maxPreRoll)
                motion.follow(zones: desired.zones, zoneTriggers: desired.zoneTriggers)
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
            try tracks.push(video: p, to: appendVideo)
            if motion.decodesMainStream {
                motion.queue(p)  // already our own reference: the demuxer reuses only the reader's packet
                try analyseBuffered()
            }
        }

        func conditioned(_ item: PacketReader.Item) throws {
            switch item {
            case .video(let p): try videoPacket(p)
            case .audio(let p): try tracks.push(audio: p, to: appendAudio)
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
                                  metadata: ["at": "\(timeline.position)"])
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
                    progress(RecordingProgress(position: timeline.position, duration: input.duration,
                                               sessions: runners.sessionCount))
                }
            }
            for item in reader.flush() { try conditioned(item) }
            try tracks.flushVideo(to: appendVideo)
            try analyseBuffered(draining: true)
            try tracks.drain(video: appendVideo, audio: appendAudio)
            // A file that simply stops is not an error to FFmpeg's demuxers; the index or a cut-off packet tells.
            // A stopped recording did not read to the end, so none of this applies to it.
            if !stopped { try reader.checkComplete(newest: timeline.newest, origin: timeline.origin) }
        } catch {
            failure = error
            logger.notice("input failed; closing open clips with what was read", metadata: ["error": "\(error)"])
            try? tracks.flushVideo(to: appendVideo)  // pictures read before the fault still belong to their clips
        }
        // Analysis ended: a zone still triggered stops with it.
        motion.finish(at: timeline.videoEnd)
        // Every runner ends, whatever another one's failure: each open recording gets its End.
        do {
            try runners.endOfInput(at: timeline.videoEnd, stopped: stopped, buffer: buffer)
        } catch where failure == nil {
            throw error
        } catch {}

        report.handOver(runners: runners, motion: motion, reader: reader, buffer: buffer, overflow: overflow,
                        conditionerDrops: tracks.droppedPackets, timeline: timeline,
                        stopped: stopped, events: options.events, logger: logger)
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
