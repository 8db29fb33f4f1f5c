import CFFmpeg
import Domain

/// Writes an ordinary, progressive MP4 file with both tracks of a session, for people (players, browsers, mail).
///
/// It receives the same rebased packets as the CMAF track muxers, so it shows exactly what was uploaded. Unlike the
/// CMAF tracks it keeps FFmpeg's edit lists, which is how a plain MP4 says "audio starts 10 ms after video".
public final class ClipFileWriter {
    private let context: UnsafeMutablePointer<AVFormatContext>
    private var opened = false
    private var finished = false
    private var streamIndex: [MediaKind: Int32] = [:]
    private var timeBases: [MediaKind: TimeBase] = [:]
    private let scratch: Packet
    public let path: String

    /// Creates `path` with one stream per entry of `tracks`; `timeBase` is the time base of the packets passed to
    /// ``write(_:kind:pts:dts:duration:)`` for that track.
    public init(path: String, tracks: [(kind: MediaKind, parameters: CodecParameters, timeBase: TimeBase)]) throws {
        self.path = path
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try FFmpegError.check(avformat_alloc_output_context2(&ctx, nil, "mp4", path), "allocate clip muxer")
        context = ctx!
        scratch = try Packet()
        for track in tracks {
            guard let stream = avformat_new_stream(context, nil) else { throw FFmpegError.outOfMemory("avformat_new_stream") }
            try FFmpegError.check(avcodec_parameters_copy(stream.pointee.codecpar, track.parameters.pointer), "copy codec parameters")
            let par = stream.pointee.codecpar!
            par.pointee.codec_tag = par.pointee.codec_id == AV_CODEC_ID_HEVC ? CMAFTrackMuxer.fourCC("hvc1") : 0
            stream.pointee.time_base = track.timeBase.rational
            streamIndex[track.kind] = stream.pointee.index
        }
        try FFmpegError.check(avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE), "create \(path)")
        opened = true
        try FFmpegError.check(avformat_write_header(context, nil), "write clip header")
        for (kind, index) in streamIndex { timeBases[kind] = TimeBase(context.pointee.streams[Int(index)]!.pointee.time_base) }
        for track in tracks where timeBases[track.kind] != nil { inputTimeBase[track.kind] = track.timeBase }
    }

    private var inputTimeBase: [MediaKind: TimeBase] = [:]

    deinit {
        if opened { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
    }

    /// Writes one packet of `kind`, timestamps in that track's input time base.
    public func write(_ packet: Packet, kind: MediaKind, pts: Int64, dts: Int64, duration: Int64) throws {
        guard let index = streamIndex[kind], let from = inputTimeBase[kind], let to = timeBases[kind] else { return }
        scratch.unreference()
        try FFmpegError.check(av_packet_ref(scratch.pointer, packet.pointer), "av_packet_ref")
        scratch.streamIndex = Int(index)
        scratch.pts = av_rescale_q(pts, from.rational, to.rational)
        scratch.dts = av_rescale_q(dts, from.rational, to.rational)
        scratch.duration = av_rescale_q(duration, from.rational, to.rational)
        try FFmpegError.check(av_interleaved_write_frame(context, scratch.pointer), "write clip packet")
    }

    /// Writes the index (`moov`) and closes the file.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        try FFmpegError.check(av_write_trailer(context), "finish \(path)")
        try FFmpegError.check(avio_closep(&context.pointee.pb), "close \(path)")
        opened = false
    }
}
