import CFFmpeg
import Domain
import Timeline

/// Collects what FFmpeg's mp4 muxer writes into memory (the AVIO write callback's target).
///
/// What ``take()`` hands out is kept by its receiver (a segment, an upload event), so each fragment gets a buffer of
/// its own; it is reserved at the size of the previous fragment taken, so a fragment is written into one buffer
/// instead of one that doubles its way up from 64 KiB (a copy and fresh pages at every step).
final class ByteSink {
    private(set) var bytes: [UInt8] = []

    func append(_ data: UnsafeBufferPointer<UInt8>) {
        if bytes.capacity == 0, let expected { bytes.reserveCapacity(Swift.max(expected, data.count)) }
        bytes.append(contentsOf: data)
    }

    private var expected: Int?

    func take() -> [UInt8] {
        let taken = bytes
        bytes = []
        // A little over the last size: the next fragment of a steady stream fits without growing.
        if !taken.isEmpty { expected = taken.count + taken.count / 8 }
        return taken
    }
}

/// One CMAF track (a CMAF header holds exactly one track): FFmpeg's mp4 muxer in `cmaf` + `frag_custom` mode writing
/// into memory through a custom `AVIOContext`.
///
/// * ``initSegment`` is the CMAF header (`ftyp` + `moov` with `mvex/trex`, no samples), written at creation.
/// * ``write(_:ticks:)`` adds a sample; ``cut()`` closes the open fragment and returns its bytes
///   (`prft` + `moof` + `mdat`): call it right before the keyframe that starts the next segment, or at a chunk boundary.
/// * Timestamps are owned by the caller: `frag_discont` makes the muxer keep them verbatim as `tfdt`, so the caller can
///   rebase every track of a session to one origin and keep the audio/video offset exact (without it the muxer rebases
///   each track to zero on its own and AAC priming shifts audio).
public final class CMAFTrackMuxer {
    private let context: UnsafeMutablePointer<AVFormatContext>
    private var io: UnsafeMutablePointer<AVIOContext>?
    private let sink = ByteSink()
    private let scratch: Packet
    /// The CMAF header bytes.
    public private(set) var initSegment: [UInt8] = []
    /// The track's media timescale as written in `mdhd` (the output stream's time base is 1/timescale).
    public private(set) var timeBase = TimeBase(num: 1, den: 1)
    public let kind: MediaKind
    private var pendingSamples = 0
    private var finished = false

    /// - Parameters:
    ///   - parameters: codec parameters of the (already CMAF-compatible) stream; copied.
    ///   - timescale: the video track timescale; `nil` lets FFmpeg choose (audio always uses the sample rate).
    public init(parameters: CodecParameters, kind: MediaKind, timescale: Int32?) throws {
        self.kind = kind
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try FFmpegError.check(avformat_alloc_output_context2(&ctx, nil, "mp4", nil), "allocate mp4 muxer")
        guard let ctx else { throw FFmpegError.outOfMemory("avformat_alloc_output_context2") }
        context = ctx
        scratch = try Packet()
        // From here on every stored property is set, so deinit frees whatever a later throw leaves behind.
        guard let buffer = av_malloc(64 * 1024) else { throw FFmpegError.outOfMemory("av_malloc") }
        io = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), 64 * 1024, 1,
            Unmanaged.passUnretained(sink).toOpaque(), nil,
            { opaque, data, size in
                guard let opaque, let data, size > 0 else { return 0 }
                let sink = Unmanaged<ByteSink>.fromOpaque(opaque).takeUnretainedValue()
                sink.append(UnsafeBufferPointer(start: data, count: Int(size)))
                return size
            }, nil)
        guard let io else {
            av_free(buffer)
            throw FFmpegError.outOfMemory("avio_alloc_context")
        }
        ctx.pointee.pb = io
        ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        guard let stream = avformat_new_stream(ctx, nil) else { throw FFmpegError.outOfMemory("avformat_new_stream") }
        try FFmpegError.check(avcodec_parameters_copy(stream.pointee.codecpar, parameters.pointer), "copy codec parameters")
        let par = stream.pointee.codecpar!
        // hvc1 (parameter sets only in hvcC) is what Apple players and Matter controllers expect; FFmpeg's mp4 default
        // for HEVC is hev1. AVC keeps FFmpeg's default avc1.
        par.pointee.codec_tag = par.pointee.codec_id == AV_CODEC_ID_HEVC ? CMAFTrackMuxer.fourCC("hvc1") : 0
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        av_dict_set(&options, "movflags", "+cmaf+frag_custom+skip_sidx+skip_trailer+frag_discont", 0)
        av_dict_set(&options, "write_prft", "wallclock", 0)
        // A btrt box in every sample entry (buffer size, maximum and average bit rate): DASH-IF ingest SHOULD. FFmpeg
        // still leaves it out when it knows no bit rate at all, so the conditioners fill in the stream's bit rate
        // where the input declares none (MPEG-TS video, transcoded video).
        av_dict_set(&options, "write_btrt", "1", 0)
        if kind == .video, let timescale { av_dict_set(&options, "video_track_timescale", "\(timescale)", 0) }
        // We hand the muxer timestamps that already start where they should; it must not shift them again.
        ctx.pointee.avoid_negative_ts = AVFMT_AVOID_NEG_TS_DISABLED
        try FFmpegError.check(avformat_write_header(ctx, &options), "write CMAF header")
        if let leftover = av_dict_get(options, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw MediaError("mp4 muxer did not accept option \(String(cString: leftover.pointee.key))")
        }
        avio_flush(io)
        initSegment = sink.take()
        timeBase = TimeBase(stream.pointee.time_base)
    }

    deinit {
        if let io { av_freep(&io.pointee.buffer) }  // the muxer may have replaced the buffer we allocated
        avio_context_free(&io)
        avformat_free_context(context)
    }

    /// Writes one sample. `ticks` are the caller-owned (rebased) pts, dts and duration on ``timeBase``.
    public func write(_ packet: Packet, pts: Int64, dts: Int64, duration: Int64) throws {
        precondition(!finished, "write after finish")
        scratch.unreference()
        try FFmpegError.check(av_packet_ref(scratch.pointer, packet.pointer), "av_packet_ref")
        scratch.streamIndex = 0
        scratch.pts = pts
        scratch.dts = dts
        scratch.duration = duration
        try FFmpegError.check(av_write_frame(context, scratch.pointer), "write \(kind.rawValue) sample")
        pendingSamples += 1
    }

    /// Closes the open fragment (one CMAF chunk) and returns its bytes; empty when no sample is pending.
    public func cut() throws -> [UInt8] {
        guard pendingSamples > 0 else { return [] }
        try FFmpegError.check(av_write_frame(context, nil), "flush \(kind.rawValue) fragment")
        if let io { avio_flush(io) }
        pendingSamples = 0
        return sink.take()
    }

    /// Flushes the last fragment and ends the muxer (no `mfra`: `skip_trailer`).
    public func finish() throws -> [UInt8] {
        guard !finished else { return [] }
        let last = try cut()
        finished = true
        try FFmpegError.check(av_write_trailer(context), "finish \(kind.rawValue) track")
        if let io { avio_flush(io) }
        return last + sink.take()
    }

    /// A copy of the track's codec parameters as the muxer holds them (for writing the same packets elsewhere).
    public func parameters() throws -> CodecParameters {
        try CodecParameters(copying: context.pointee.streams[0]!.pointee.codecpar)
    }

    static func fourCC(_ s: String) -> UInt32 {
        s.utf8.reversed().reduce(0) { ($0 << 8) | UInt32($1) }
    }
}
