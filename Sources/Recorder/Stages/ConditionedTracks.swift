import CMAF
import Domain
import MediaIO

/// The condition stage: each recorded track's conditioner (the packets as they are, or transcoded where the codec
/// needs it) and, for video, the access-point lookahead. A video packet goes on to the buffer only once it is known
/// whether it can start a segment: an HEVC CRA is SAP 1/2 only if no RASL picture follows it.
final class ConditionedTracks {
    let video: any TrackConditioner
    let audio: (any TrackConditioner)?
    /// Video packets in decode order, held until their access-point verdict is known.
    private var lookahead = AccessPointLookahead<Packet>()

    init(video: any TrackConditioner, audio: (any TrackConditioner)?) {
        self.video = video
        self.audio = audio
    }

    /// Whether every video packet pushed so far has gone on (the analysis of a picture waits until its packet,
    /// with its verdict, is in the buffer).
    var settled: Bool { lookahead.isEmpty }

    /// Packets the conditioners could not use (counted in the report's input damage).
    var droppedPackets: (video: Int, audio: Int) { (video.droppedPackets, audio?.droppedPackets ?? 0) }

    /// Conditions a video packet; what the lookahead has decided goes to `write` with whether it is an access point.
    func push(video packet: Packet, to write: (Packet, Bool) throws -> Void) throws {
        try video.push(packet) { try decide($0, write) }
    }

    /// Conditions an audio packet (every audio packet is an access point).
    func push(audio packet: Packet, to write: (Packet) throws -> Void) throws {
        try audio?.push(packet, emit: write)
    }

    /// The input ended or failed: nothing follows the held pictures, so a held CRA had no RASL pictures.
    func flushVideo(to write: (Packet, Bool) throws -> Void) throws {
        for decided in lookahead.flush() { try write(decided.item, decided.isAccessPoint) }
    }

    /// What the conditioners still hold (a transcoder's delayed output), video then audio, the lookahead flushed.
    func drain(video writeVideo: (Packet, Bool) throws -> Void, audio writeAudio: (Packet) throws -> Void) throws {
        try video.drain { try decide($0, writeVideo) }
        try flushVideo(to: writeVideo)
        try audio?.drain(emit: writeAudio)
    }

    private func decide(_ packet: Packet, _ write: (Packet, Bool) throws -> Void) throws {
        for decided in lookahead.add(try packet.reference(), video.accessPoint(packet)) {
            try write(decided.item, decided.isAccessPoint)
        }
    }
}
