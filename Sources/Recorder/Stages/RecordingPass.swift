import CMAF
import Domain
import Foundation
import Logging
import MediaIO
import Motion
import Timeline

/// The stages of one recording pass, opened on one input and wired together, and the steps a packet takes through
/// them: demux (``PacketReader``) → condition (``ConditionedTracks``) → write into the ``PreRollBuffer`` on the clock of
/// ``InputTimeline`` → analyse (``MotionStage``) → decide (``ClipRunners``) → hand over (``RecordingReport``).
///
/// A class because every step changes the same few things (the timeline, the buffer's retention, the overflow count)
/// and the conditioners call back into the write step; ``RecordingPipeline/run()`` drives it, one packet at a time, on
/// the media thread that owns it.
final class RecordingPass {
    let url: String
    let options: RecordingOptions
    let stop: RecordingStop
    let logger: Logger

    let input: MediaInput
    let reader: PacketReader
    let tracks: ConditionedTracks
    let video: any TrackConditioner
    let audio: (any TrackConditioner)?
    let motion: MotionStage
    let runners: ClipRunners
    let buffer: PreRollBuffer
    private(set) var timeline: InputTimeline
    private var overflow = BufferOverflow()
    /// Real-time pacing (a file standing in for a camera): video packet times against the wall clock.
    private var pacer = RealTimePacer()
    private let frameDuration: MediaTime
    /// Whether motion is analysed at all (a motion trigger, or `alwaysAnalyseMotion`).
    let needsMotion: Bool
    /// The report's input and option facts, as they were when the input opened; sessions are added at the end.
    private var report: RecordingReport

    /// Opens the input and every stage on it; throws ``RecordingStoppedBeforeStart`` when a stop interrupted the
    /// opening, and a ``MediaError`` for an input without video.
    init(url: String, options: RecordingOptions, interrupt: InterruptFlag, stop: RecordingStop, logger: Logger) throws {
        self.url = url
        self.options = options
        self.stop = stop
        self.logger = logger
        let input: MediaInput
        do {
            input = try MediaInput(url: url, interrupt: interrupt, options: options.inputOptions)
        } catch where stop.isRequested {
            throw RecordingStoppedBeforeStart(input: url)
        }
        self.input = input
        guard let videoStream = input.video else {
            throw MediaError("\(url) has no video stream (\(input.formatName))")
        }
        let video = try input.conditioner(for: videoStream, keyframeInterval: options.segmentDuration)
        let audioStream = options.includeAudio ? input.audio : nil
        let audio = try audioStream.map { try input.conditioner(for: $0, keyframeInterval: options.segmentDuration) }
        self.video = video
        self.audio = audio
        let needsMotion = options.alwaysAnalyseMotion || options.policies.contains { $0.trigger == .motion }
        self.needsMotion = needsMotion
        logger.info("recording", metadata: [
            "input": "\(url)", "video": "\(videoStream.codec)\(video.transcodes ? " (transcoding)" : "")",
            "audio": "\(audioStream.map { $0.codec + (audio!.transcodes ? " (transcoding)" : "") } ?? "none")",
            "motion analysis": "\(needsMotion)",
        ])

        let motion = try MotionStage(analysing: needsMotion, input: input, videoStream: videoStream, options: options,
                                     logger: logger)
        self.motion = motion
        let settings = SessionSettings(video: video, videoCodec: videoStream.codec, frameRate: videoStream.frameRate,
                                       audio: audio, audioCodec: audioStream?.codec, options: options,
                                       pictures: motion.pictures)
        let runners = ClipRunners(settings: settings, options: options, logger: logger)
        self.runners = runners
        options.control?.record {
            $0.videoWidth = videoStream.width
            $0.videoHeight = videoStream.height
        }
        let timeline = InputTimeline(preRolls: options.policies.map(\.maxPreRoll))
        self.timeline = timeline
        buffer = PreRollBuffer(retention: timeline.retention(maxPreRoll: runners.maxPreRoll),
                               byteLimit: options.preRollByteLimit)
        tracks = ConditionedTracks(video: video, audio: audio)
        frameDuration = MediaTime(seconds: 1 / max(videoStream.frameRate ?? 30, 1))
        report = RecordingReport(
            input: .init(url: url, container: input.formatName, duration: input.duration,
                         video: RecordingReport.StreamFacts(videoStream), audio: input.audio.map { RecordingReport.StreamFacts($0) }),
            options: .init(policies: options.policies.map(RecordingReport.PolicyEcho.init),
                           segmentDuration: Int(options.segmentDuration.converted(to: 1000).value),
                           chunkDuration: Int(options.chunkDuration?.converted(to: 1000).value ?? 0),
                           audio: audioStream != nil),
            sessions: [])
        do {
            reader = try PacketReader(input: input, videoStream: videoStream, audioStream: audioStream, logger: logger)
        } catch {
            motion.close()
            throw error
        }
    }

    /// Ends the analysis decoder's work (the pass's FFmpeg objects are freed with their owners).
    func close() { motion.close() }

    /// What a progress line shows.
    var progress: RecordingProgress {
        RecordingProgress(position: timeline.position, duration: input.duration, sessions: runners.sessionCount)
    }

    // MARK: - One packet read

    /// Everything one packet the reader has just read goes through: the control's changes first, snapshot requests,
    /// real-time pacing, then the packet conditioned, buffered, analysed and decided on, and the buffer trimmed.
    func admitReadPacket() throws {
        try applyControl()
        motion.pictures?.answerSnapshotRequests()
        if options.paceRealTime, let t = reader.currentVideoTime { try paceVideo(t) }
        options.control?.record {
            $0.packetsRead += 1
            $0.lastPacketRead = .now
        }
        if let item = try reader.admit() { try conditioned(item) }
        trim()
    }

    /// The end of the input: what the reader and the conditioners still hold goes through, the analysis drains, and
    /// (unless a stop cut the reading short) the input is checked for truncation: a file that simply stops is not an
    /// error to FFmpeg's demuxers; the index or a cut-off packet tells.
    func drainInput(stopped: Bool) throws {
        for item in reader.flush() { try conditioned(item) }
        try tracks.flushVideo(to: appendVideo)
        try analyseBuffered(draining: true)
        try tracks.drain(video: appendVideo, audio: appendAudio)
        if !stopped { try reader.checkComplete(newest: timeline.newest, origin: timeline.origin) }
    }

    /// After an input failure: pictures read before the fault still belong to their clips.
    func flushAfterFailure() {
        try? tracks.flushVideo(to: appendVideo)
    }

    /// Ends the analysis and every runner (each open recording gets its End, whatever another one's failure) and
    /// hands the stages' counts to the report. Throws ``RecordingFailure`` (carrying the report) after an input
    /// failure, the first runner's error otherwise, and a ``MediaError`` for a file in which no keyframe was usable.
    func finish(stopped: Bool, failure: (any Error)?) throws -> RecordingReport {
        // Analysis ended: a zone still triggered stops with it.
        motion.finish(at: timeline.videoEnd)
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

    // MARK: - The steps

    private func conditioned(_ item: PacketReader.Item) throws {
        switch item {
        case .video(let p):
            // Buffer first, analyse second: a decision at frame t must find t's own packet in the buffer
            // (a clip or a continuous session that begins on a keyframe starts at that keyframe).
            try tracks.push(video: p, to: appendVideo)
            if motion.decodesMainStream {
                motion.queue(p)  // already our own reference: the demuxer reuses only the reader's packet
                try analyseBuffered()
            }
        case .audio(let p):
            try tracks.push(audio: p, to: appendAudio)
        }
    }

    /// The write step: a conditioned video packet into the pre-roll buffer, the timeline advanced, the runners fed.
    private func appendVideo(_ packet: Packet, randomAccess: Bool) throws {
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

    private func appendAudio(_ packet: Packet) throws {
        guard let audio, let pts = packet.pts else { return }
        let t = audio.timeBase.time(pts)
        try buffer.append(packet, kind: .audio, pts: t, dts: t, isRandomAccess: true)
        try runners.pump(buffer: buffer, analysisTime: motion.lastFrameTime)
    }

    /// Decodes for analysis the raw packets whose conditioned packets are all in the buffer.
    private func analyseBuffered(draining: Bool = false) throws {
        guard tracks.settled || draining else { return }
        try motion.decodeQueued(draining: draining) { t, isKeyframe, sample in
            try runners.picture(at: t, isKeyframe: isKeyframe, sample: sample, buffer: buffer)
        }
    }

    /// Brings the runners to what ``RecordingControl`` holds, at the media time reached (the latest analysed
    /// picture); the analysis follows the desired zones and zone triggers.
    private func applyControl() throws {
        guard let control = options.control else { return }
        let update = control.take()
        guard update.desired != nil || !update.triggers.isEmpty || !update.failedSessions.isEmpty else { return }
        try runners.apply(update, at: motion.lastFrameTime ?? timeline.newest, analysisTime: motion.lastFrameTime,
                          buffer: buffer) { desired in
            buffer.retention = timeline.retention(maxPreRoll: runners.maxPreRoll)
            motion.follow(zones: desired.zones, zoneTriggers: desired.zoneTriggers)
        }
    }

    private func paceVideo(_ time: MediaTime) throws {
        guard let due = pacer.due(time) else { return }
        while ContinuousClock.now < due, !stop.isRequested {
            Thread.sleep(forTimeInterval: min(0.02, max(0, (due - ContinuousClock.now) / .seconds(1))))
            try applyControl()
        }
    }

    /// Drops from the buffer what no runner needs any more; a packet some session still needed is counted lost.
    private func trim() {
        let pushedOut = buffer.trim(newest: timeline.newest, keepFrom: runners.oldestNeeded)
        for entry in pushedOut {
            let sessions = runners.sessions(needing: entry)
            guard !sessions.isEmpty else { continue }
            overflow.count(entry, sessions: sessions, at: timeline.newest, logger: logger, byteLimit: buffer.byteLimit)
        }
    }
}
