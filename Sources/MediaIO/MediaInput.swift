import CFFmpeg
import Timeline

/// Owns a demuxing `AVFormatContext`: any file or URL libavformat can open.
///
/// Not Sendable: create, read and drop it on one dedicated thread (``MediaThread``), never on Swift's cooperative
/// pool, because `avformat_open_input` and `av_read_frame` block.
public final class MediaInput {
    let context: UnsafeMutablePointer<AVFormatContext>
    private let interrupt: InterruptFlag
    public let url: String
    /// The best video stream, if any.
    public let video: StreamDescription?
    /// The best audio stream (related to the chosen video stream), if any.
    public let audio: StreamDescription?
    /// Container format short name (`mov,mp4,m4a,3gp,3g2,mj2`, `mpegts`, …).
    public let formatName: String
    /// Container duration in seconds, if known.
    public let duration: Double?

    /// Opens and probes `url`. `options` are demuxer/protocol options (e.g. `rtsp_transport=tcp`).
    public init(url: String, interrupt: InterruptFlag = InterruptFlag(), options: [String: String] = [:]) throws {
        FFmpegLog.applyDefault()
        self.url = url
        self.interrupt = interrupt
        guard var ctx = avformat_alloc_context() else { throw FFmpegError.outOfMemory("avformat_alloc_context") }
        ctx.pointee.interrupt_callback = interrupt.callback
        var dict: OpaquePointer? = nil
        for (k, v) in options { av_dict_set(&dict, k, v, 0) }
        defer { av_dict_free(&dict) }
        var maybe: UnsafeMutablePointer<AVFormatContext>? = ctx
        // On failure avformat_open_input frees the context and nils the pointer, so nothing leaks here.
        let opened = avformat_open_input(&maybe, url, nil, &dict)
        guard opened >= 0, let openedContext = maybe else {
            if opened == CFFmpeg_AVERROR_INVALIDDATA() {
                throw MediaError("open \(url): \(FFmpegError.text(for: opened)) (not a media file, or one whose index is "
                                 + "missing: truncated or still being written)")
            }
            throw FFmpegError("open \(url)", code: opened)
        }
        ctx = openedContext
        // Probe with single-threaded decoders: frame threading would allocate a picture pool per thread just to
        // read the stream parameters, and that high-water mark stays in the process's peak memory.
        let streamCount = Int(ctx.pointee.nb_streams)
        var probeOptions = [OpaquePointer?](repeating: nil, count: max(streamCount, 1))
        for i in 0..<streamCount {
            av_dict_set(&probeOptions[i], "threads", "1", 0)
            // The pictures probing decodes (seven, for H.264's reorder delay) only tell the stream's parameters: not
            // deblocking them is a fifth less work on the way to the first packet.
            if ctx.pointee.streams[i]!.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
                av_dict_set(&probeOptions[i], "skip_loop_filter", "all", 0)
                av_dict_set(&probeOptions[i], "flags2", "+fast", 0)
            }
        }
        defer { for i in 0..<streamCount { av_dict_free(&probeOptions[i]) } }
        let probed = avformat_find_stream_info(ctx, &probeOptions)
        if probed < 0 {
            var doomed: UnsafeMutablePointer<AVFormatContext>? = ctx
            avformat_close_input(&doomed)
            throw FFmpegError("read stream info of \(url)", code: probed)
        }
        context = ctx
        formatName = ctx.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "unknown"
        duration = ctx.pointee.duration > 0 ? Double(ctx.pointee.duration) / Double(AV_TIME_BASE) : nil
        let videoIndex = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        let audioIndex = av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, videoIndex >= 0 ? videoIndex : -1, nil, 0)
        video = videoIndex >= 0
            ? StreamDescription(stream: ctx.pointee.streams[Int(videoIndex)]!, index: Int(videoIndex), kind: .video) : nil
        audio = audioIndex >= 0
            ? StreamDescription(stream: ctx.pointee.streams[Int(audioIndex)]!, index: Int(audioIndex), kind: .audio) : nil
        // Drop everything we do not record early, in the demuxer, so it never costs a copy.
        for i in 0..<Int(ctx.pointee.nb_streams) where i != Int(videoIndex) && i != Int(audioIndex) {
            ctx.pointee.streams[i]!.pointee.discard = AVDISCARD_ALL
        }
    }

    deinit {
        var p: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&p)
    }

    /// The codec parameters of stream `index`, owned by the input.
    func parameters(of index: Int) -> UnsafeMutablePointer<AVCodecParameters> {
        context.pointee.streams[index]!.pointee.codecpar
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context.pointee.streams[index]! }

    /// Video frames an MP4/MOV sample table promises, or nil for containers whose frame count is not a promise
    /// (AVI counts empty placeholder frames its demuxer drops; streams and MPEG-TS have no index). Fewer frames than
    /// this at the end of the file means the file is truncated.
    public var indexedVideoFrames: Int? {
        guard let v = video, formatName.hasPrefix("mov,mp4") else { return nil }
        let n = stream(v.index).pointee.nb_frames
        return n > 0 ? Int(n) : nil
    }

    /// True for an MPEG-TS file whose size is not a whole number of TS packets (188, 192 or 204 bytes): a writer
    /// was cut off mid-packet. MPEG-TS has no index, so this is the one sign of truncation it gives.
    public var endsInsidePacket: Bool {
        guard formatName == "mpegts", byteSize > 0 else { return false }
        return byteSize % 188 != 0 && byteSize % 192 != 0 && byteSize % 204 != 0
    }

    /// Reads the next packet of a selected stream into `packet`. Returns false at the end of the input.
    /// Throws on a read error (a truncated or corrupt file, a dropped connection) or when interrupted.
    public func read(into packet: Packet) throws(FFmpegError) -> Bool {
        while true {
            packet.unreference()
            if interrupt.isSet { throw FFmpegError("read \(url)", code: CFFmpeg_AVERROR_EXIT()) }
            let result = av_read_frame(context, packet.pointer)
            if result == CFFmpeg_AVERROR_EOF() { return false }
            try FFmpegError.check(result, "read \(url)")
            let i = packet.streamIndex
            if i == video?.index || i == audio?.index { return true }
        }
    }

    /// The container's overall bit rate (FFmpeg derives it from a file's size and duration), if known.
    public var bitRate: Int64? { context.pointee.bit_rate > 0 ? context.pointee.bit_rate : nil }

    /// Size of the input in bytes, if it is a file.
    public var byteSize: Int64 { context.pointee.pb.map { avio_size($0) } ?? -1 }
}
