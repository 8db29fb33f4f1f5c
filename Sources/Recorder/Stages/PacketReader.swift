import Domain
import Foundation
import Logging
import MediaIO
import Timeline

/// The demux stage: reads the input once and hands on the packets of the recorded video and audio streams with
/// their timestamps repaired, so the analysis, the pre-roll buffer and every muxer agree on one timeline.
///
/// Damaged or glitching timestamps are dropped or repaired here, before anything else sees the packet (see
/// `TimestampRepair`); the first problem of each kind is a warning, the rest are counted for the report and logged at
/// debug level. A file that simply stops is not an error to FFmpeg's demuxers, so the reader also remembers what tells
/// a truncated file from a complete one (``checkComplete(newest:origin:)``).
final class PacketReader {
    /// A packet of a recorded stream, its timestamps repaired. Each is a reference of its own: the demuxer reuses
    /// only the reader's packet.
    enum Item {
        case video(Packet)
        case audio(Packet)
    }

    let input: MediaInput
    let videoStream: StreamDescription
    /// nil when the recording leaves audio out.
    let audioStream: StreamDescription?
    private let logger: Logger
    /// What `read()` fills; valid until the next read.
    private let packet: Packet
    private(set) var videoTimestamps: TimestampRepair<Packet>
    private(set) var audioTimestamps: TimestampRepair<Packet>
    private var warned = Set<String>()
    private var videoPacketsRead = 0
    private var lastVideoPacketCorrupt = false

    init(input: MediaInput, videoStream: StreamDescription, audioStream: StreamDescription?, logger: Logger) throws {
        self.input = input
        self.videoStream = videoStream
        self.audioStream = audioStream
        self.logger = logger
        packet = try Packet()
        videoTimestamps = TimestampRepair(ticksPerSecond: videoStream.timeBase.ticksPerSecond)
        audioTimestamps = TimestampRepair(ticksPerSecond: audioStream?.timeBase.ticksPerSecond ?? 1)
    }

    /// Reads the next packet of any stream; false at the end of the input. A stop request interrupts it with an error.
    func read() throws -> Bool {
        try input.read(into: packet)
    }

    /// The presentation time of the packet just read, when it is the recorded video stream's (real-time pacing).
    var currentVideoTime: MediaTime? {
        guard packet.streamIndex == videoStream.index, let pts = packet.pts ?? packet.dts else { return nil }
        return videoStream.timeBase.time(pts)
    }

    /// Passes the packet just read through its stream's timestamp repair: what comes out (the repair holds one
    /// packet back, so this may be the previous one of the stream), or nil (held, dropped, or another stream's).
    func admit() throws -> Item? {
        if packet.streamIndex == videoStream.index {
            videoPacketsRead += 1
            lastVideoPacketCorrupt = packet.isCorrupt
            let step = videoTimestamps.admit(try packet.reference(), pts: packet.pts, dts: packet.dts, duration: packet.duration)
            note("video", dropped: step.dropped, repaired: [])
            return step.output.map { .video(applied($0, stream: "video")) }
        } else if let audioStream, packet.streamIndex == audioStream.index {
            let step = audioTimestamps.admit(try packet.reference(), pts: packet.pts, dts: packet.dts, duration: packet.duration)
            note("audio", dropped: step.dropped, repaired: [])
            return step.output.map { .audio(applied($0, stream: "audio")) }
        }
        return nil
    }

    /// The packets the repair still holds, video first, once the input has ended.
    func flush() -> [Item] {
        var items: [Item] = []
        if let output = videoTimestamps.flush() { items.append(.video(applied(output, stream: "video"))) }
        if let output = audioTimestamps.flush() { items.append(.audio(applied(output, stream: "audio"))) }
        return items
    }

    /// Throws when the input that just ended was cut off: fewer video frames than its index lists, a transport-stream
    /// packet cut in the middle, or a last video frame FFmpeg flagged as corrupt. `newest` and `origin` place the
    /// end on the report's timeline for the message.
    func checkComplete(newest: MediaTime, origin: MediaTime?) throws {
        if let expected = input.indexedVideoFrames, videoPacketsRead < expected {
            throw MediaError(String(format: "%@ is truncated: its index lists %d video frames, only %d could be read "
                + "(input ends at %.3f s)", input.url, expected, videoPacketsRead, (newest - (origin ?? .zero)).seconds))
        } else if input.endsInsidePacket {
            throw MediaError("\(input.url) is truncated: it ends inside a transport-stream packet")
        } else if lastVideoPacketCorrupt {
            throw MediaError("\(input.url) is truncated: its last video frame is cut off")
        }
    }

    private func applied(_ repaired: TimestampRepair<Packet>.Output, stream: String) -> Packet {
        let p = repaired.payload
        (p.pts, p.dts, p.duration) = (repaired.pts, repaired.dts, repaired.duration)
        note(stream, dropped: [], repaired: repaired.repairs)
        return p
    }

    private func note(_ stream: String, dropped: [TimestampRepair<Packet>.Problem], repaired: [TimestampRepair<Packet>.Problem]) {
        for (what, problem) in dropped.map({ ("dropped a packet", $0) }) + repaired.map({ ("repaired a timestamp", $0) }) {
            let first = warned.insert("\(stream) \(what) \(problem)").inserted
            logger.log(level: first ? .warning : .debug, "input \(stream): \(what) (\(problem.rawValue))")
        }
    }
}
