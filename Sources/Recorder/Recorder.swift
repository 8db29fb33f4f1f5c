import Foundation
import Logging
import MediaIO
import Timeline

/// What to record and how to cut it.
public struct RecordingOptions: Sendable {
    public var output: URL
    public var segmentDuration: MediaTime = .milliseconds(4000)
    /// nil or zero: no chunks (Matter ChunkDuration 0).
    public var chunkDuration: MediaTime? = nil
    public var includeAudio = true
    public var videoTrackName = "video"
    public var audioTrackName = "audio"
    public var writeClips = true
    /// First session number to use (session numbers only ever increase per connection).
    public var firstSession = 1
    /// Demuxer/protocol options (e.g. `rtsp_transport=tcp`).
    public var inputOptions: [String: String] = [:]
    /// Receives every init segment, chunk and finished segment as it is written (see ``RecordingEvent``).
    public var events: (@Sendable (RecordingEvent) -> Void)? = nil

    public init(output: URL) { self.output = output }
}

/// Progress of a long recording, reported about once a second.
public struct RecordingProgress: Sendable {
    /// Seconds of input read so far, on the input timeline.
    public var position: Double
    /// Input duration, if known.
    public var duration: Double?
    public var sessions: Int
}

/// Reads an input once and records it as CMAF sessions.
public enum Recorder {
    /// Records the whole input as one continuous session. Runs the FFmpeg work on a dedicated thread; cancelling the
    /// task interrupts it. A read error part-way (a truncated file, a dropped stream) still closes the open session so
    /// every segment written stays valid: the report then carries the error and the call throws ``RecordingFailure``.
    public static func recordContinuous(
        input url: String, options: RecordingOptions, logger: Logger = Logger(label: "pushav.recorder"),
        progress: (@Sendable (RecordingProgress) -> Void)? = nil
    ) async throws -> RecordingReport {
        let interrupt = InterruptFlag()
        return try await MediaThread.run(name: "pushav-record", interrupt: interrupt) {
            try ContinuousRecording(url: url, options: options, interrupt: interrupt, logger: logger, progress: progress).run()
        }
    }
}

/// A recording that failed part-way: `report` lists what was completed before `underlying` happened.
public struct RecordingFailure: Error, Sendable, CustomStringConvertible {
    public let underlying: any Error
    public let report: RecordingReport?
    public var description: String { "\(underlying)" }
}

/// The synchronous body of a continuous recording; lives on the media thread.
struct ContinuousRecording {
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
        logger.info("recording", metadata: [
            "input": "\(url)", "video": "\(videoStream.codec)\(video.transcodes ? " (transcoding)" : "")",
            "audio": "\(audioStream.map { $0.codec + (audio!.transcodes ? " (transcoding)" : "") } ?? "none")",
        ])
        var report = RecordingReport(
            input: .init(url: url, container: input.formatName, duration: input.duration,
                         video: RecordingReport.StreamFacts(videoStream), audio: input.audio.map { RecordingReport.StreamFacts($0) }),
            options: .init(trigger: "continuous", segmentDuration: Int(options.segmentDuration.converted(to: 1000).value),
                           chunkDuration: Int(options.chunkDuration?.converted(to: 1000).value ?? 0),
                           audio: audioStream != nil),
            sessions: [])
        var session: SessionWriter?
        // Audio conditioned before the first video keyframe is known (x264's lookahead alone holds back ~1 s of video)
        // waits here; the session drops what precedes its start. Bounded so a stream without video keyframes cannot
        // grow it without limit.
        var earlyAudio: [Packet] = []
        func handleAudio(_ packet: Packet) throws {
            if let session { return try session.writeAudio(packet) }
            earlyAudio.append(try packet.reference())
            if earlyAudio.count > 2048 { earlyAudio.removeFirst(earlyAudio.count - 2048) }
        }
        var origin: MediaTime?  // first video frame: 0 on the report's timeline
        var lastProgress = ContinuousClock.now
        var position = MediaTime.zero

        func handleVideo(_ packet: Packet) throws {
            guard let pts = packet.pts ?? packet.dts else { return }
            let t = video.timeBase.time(pts)
            if origin == nil { origin = t }
            position = max(position, t)
            let randomAccess = video.isRandomAccess(packet)
            if session == nil {
                guard randomAccess else { return }  // nothing before the first real keyframe can be decoded
                session = try SessionWriter(
                    layout: SessionLayout(root: options.output, session: options.firstSession,
                                          videoTrackName: options.videoTrackName, audioTrackName: options.audioTrackName),
                    start: t, video: video, videoCodec: videoStream.codec, frameRate: videoStream.frameRate,
                    audio: audio, audioCodec: audioStream?.codec, segmentDuration: options.segmentDuration,
                    chunkDuration: options.chunkDuration, writeClip: options.writeClips, emit: options.events)
                for early in earlyAudio { try session?.writeAudio(early) }
                earlyAudio.removeAll()
            }
            try session?.writeVideo(packet, isRandomAccess: randomAccess)
        }

        let packet = try Packet()
        var failure: (any Error)?
        var videoPacketsRead = 0
        var lastVideoPacketCorrupt = false
        do {
            while try input.read(into: packet) {
                if packet.streamIndex == videoStream.index {
                    videoPacketsRead += 1
                    lastVideoPacketCorrupt = packet.isCorrupt
                    try video.push(packet, emit: handleVideo)
                } else if let audio, packet.streamIndex == audioStream?.index {
                    try audio.push(packet, emit: handleAudio)
                }
                if let progress, ContinuousClock.now - lastProgress > .seconds(1) {
                    lastProgress = .now
                    progress(RecordingProgress(position: (position - (origin ?? .zero)).seconds,
                                               duration: input.duration, sessions: report.sessions.count + (session == nil ? 0 : 1)))
                }
            }
            try video.drain(emit: handleVideo)
            try audio?.drain(emit: handleAudio)
            // A file that simply stops is not an error to FFmpeg's demuxers; the index or a cut-off packet tells.
            if let expected = input.indexedVideoFrames, videoPacketsRead < expected {
                throw MediaError(String(format: "%@ is truncated: its index lists %d video frames, only %d could be read "
                    + "(input ends at %.3f s)", url, expected, videoPacketsRead, (position - (origin ?? .zero)).seconds))
            } else if input.endsInsidePacket {
                throw MediaError("\(url) is truncated: it ends inside a transport-stream packet")
            } else if lastVideoPacketCorrupt {
                throw MediaError("\(url) is truncated: its last video frame is cut off")
            }
        } catch {
            failure = error
            logger.notice("input failed; closing the open session with what was read", metadata: ["error": "\(error)"])
        }
        if let session {
            var record = try session.finish(at: nil, reason: failure == nil ? "endOfInput" : "inputError")
            record.rebase(to: origin ?? session.start)
            report.sessions.append(record)
            options.events?(.sessionFinished(record))
        }
        if let failure {
            report.error = "\(failure)"
            throw RecordingFailure(underlying: failure, report: report)
        }
        if session == nil { throw MediaError("\(url): no decodable video keyframe found") }
        return report
    }
}

extension RecordingReport.StreamFacts {
    init(_ s: StreamDescription) {
        self.init(index: s.index, codec: s.codec, profile: s.profile, timeBase: s.timeBase.description, width: s.width,
                  height: s.height, frameRate: s.frameRate, sampleRate: s.sampleRate, channels: s.channels,
                  bitRate: s.bitRate)
    }
}

extension SessionRecord {
    /// Moves times from the input's raw timestamps to the report timeline (0 = the input's first video frame).
    mutating func rebase(to origin: MediaTime) {
        let o = origin.seconds
        start -= o
        end -= o
        for t in tracks.indices {
            for s in tracks[t].segments.indices { tracks[t].segments[s].start += start }
        }
    }
}
