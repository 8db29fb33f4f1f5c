import CFFmpeg
import CMAF
import Domain
import Timeline

/// Turns one input stream's packets into packets a CMAF track can carry: passed through (H.264, HEVC, AAC, Opus; ADTS
/// AAC re-framed) or, for anything else, transcoded.
public protocol TrackConditioner: AnyObject {
    var kind: MediaKind { get }
    /// True when the conditioner decodes and re-encodes.
    var transcodes: Bool { get }
    /// Time base of the packets it emits.
    var timeBase: TimeBase { get }
    /// Codec parameters of the packets it emits; final once the first packet came out.
    func outputParameters() throws -> CodecParameters
    /// Takes one input packet (consumed) and emits zero or more conditioned packets.
    func push(_ packet: Packet, emit: (Packet) throws -> Void) throws
    /// Emits what is still buffered at the end of the input.
    func drain(emit: (Packet) throws -> Void) throws
    /// What a conditioned packet offers for random access, from its NAL units for video (``AccessPointLookahead``
    /// turns that into "can start a segment"); every audio packet is ``AccessPointKind/closed``.
    func accessPoint(_ packet: Packet) -> AccessPointKind
    /// Packets or decoded frames dropped on the way: data a bitstream filter rejects as invalid, frames a transcoder
    /// cannot encode (a presentation time that does not increase).
    var droppedPackets: Int { get }
}

/// Codecs a CMAF track carries as they are (our `hvc1`/`avc1` sample entries, `mp4a`, `Opus`).
public enum CMAFCodecSupport {
    public static func isPassthrough(codec: String) -> Bool {
        ["h264", "hevc", "aac", "opus"].contains(codec)
    }
}

/// Passes packets through; re-frames ADTS AAC with `aac_adtstoasc` when the first packet carries an ADTS header.
final class PassthroughConditioner: TrackConditioner {
    let kind: MediaKind
    let transcodes = false
    var droppedPackets: Int { (adts?.rejectedPackets ?? 0) + unusablePackets }
    let timeBase: TimeBase
    private let input: CodecParameters
    private var adts: BitstreamFilter?
    /// The input parameters completed with the AudioSpecificConfig `aac_adtstoasc` derives from the first ADTS header.
    private var reframed: CodecParameters?
    private var decided = false
    /// AAC that is neither ADTS nor comes with an AudioSpecificConfig: every packet is dropped (and counted).
    private var lacksConfiguration = false
    private var unusablePackets = 0
    private let probe: RandomAccessProbe

    /// `bitRate`: the stream's bit rate where its parameters do not say (written to the CMAF header's btrt box).
    init(stream: StreamDescription, parameters: UnsafePointer<AVCodecParameters>, bitRate: Int64?) throws {
        kind = stream.kind
        timeBase = stream.timeBase
        input = try CodecParameters(copying: parameters)
        if input.pointer.pointee.bit_rate <= 0, let bitRate { input.pointer.pointee.bit_rate = bitRate }
        probe = RandomAccessProbe(parameters: input)
    }

    func outputParameters() throws -> CodecParameters {
        if let reframed { return reframed }
        if let adts { return try adts.outputParameters() }
        return input
    }

    func push(_ packet: Packet, emit: (Packet) throws -> Void) throws {
        if !decided {
            decided = true
            let bytes = packet.payload
            if input.codecID == AV_CODEC_ID_AAC, bytes.count > 2, bytes[0] == 0xFF, bytes[1] & 0xF0 == 0xF0 {
                adts = try BitstreamFilter(name: "aac_adtstoasc", input: input, timeBase: timeBase)
            } else if input.codecID == AV_CODEC_ID_AAC, input.extradata.isEmpty {
                // Raw AAC frames without their AudioSpecificConfig (a damaged esds): no decoder could play the track.
                lacksConfiguration = true
            }
        }
        if lacksConfiguration {
            unusablePackets += 1
            return
        }
        if let adts { try adts.filter(packet) { try takeConfiguration($0, from: adts); try emit($0) } } else { try emit(packet) }
    }

    func drain(emit: (Packet) throws -> Void) throws {
        guard let adts else { return }
        try adts.filter(nil) { try takeConfiguration($0, from: adts); try emit($0) }
    }

    /// FFmpeg 5.1's aac_adtstoasc hands the AudioSpecificConfig over as NEW_EXTRADATA side data on its first output
    /// packet, not in its output parameters; a CMAF header is written before any sample, so we must carry it over
    /// ourselves or the `esds` would have no decoder configuration.
    private func takeConfiguration(_ packet: Packet, from filter: BitstreamFilter) throws {
        guard reframed == nil else { return }
        var size = 0
        guard let data = av_packet_get_side_data(packet.pointer, AV_PKT_DATA_NEW_EXTRADATA, &size), size > 0 else { return }
        let parameters = try filter.outputParameters()
        try parameters.setExtradata(UnsafeBufferPointer(start: data, count: size))
        reframed = parameters
    }

    func accessPoint(_ packet: Packet) -> AccessPointKind {
        kind == .audio ? .closed : probe.accessPoint(packet)
    }
}

extension MediaInput {
    /// The conditioner for a selected stream: passthrough where CMAF allows it, else a transcoder.
    /// `keyframeInterval` is where a video transcoder forces IDRs (the segment duration).
    public func conditioner(for stream: StreamDescription, keyframeInterval: MediaTime) throws -> any TrackConditioner {
        let par = parameters(of: stream.index)
        if CMAFCodecSupport.isPassthrough(codec: stream.codec) {
            return try PassthroughConditioner(stream: stream, parameters: par, bitRate: estimatedBitRate(of: stream))
        }
        switch stream.kind {
        case .video:
            return try VideoTranscoder(stream: stream, parameters: par, keyframeInterval: keyframeInterval,
                                       sourceBitRate: estimatedBitRate(of: stream))
        case .audio: return try AudioTranscoder(stream: stream, parameters: par)
        }
    }

    /// A stream's bit rate: its own if the container or codec declares one, else (a file) the container's average
    /// less what the other recorded stream declares. Nil for a live input that declares nothing; a damaged header's
    /// absurd value (beyond 1 Gbit/s) counts as unknown.
    func estimatedBitRate(of stream: StreamDescription) -> Int64? {
        let plausible: ClosedRange<Int64> = 1000...1_000_000_000
        if let own = stream.bitRate, plausible.contains(own) { return own }
        guard let total = bitRate, plausible.contains(total) else { return nil }
        let other = [video, audio].compactMap { $0 }.filter { $0.index != stream.index }.compactMap(\.bitRate)
            .filter { plausible.contains($0) }.reduce(0, +)
        return total - other >= plausible.lowerBound ? total - other : nil
    }
}
