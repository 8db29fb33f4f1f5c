import CFFmpeg

/// Owns an encoding `AVCodecContext` (libx264 or FFmpeg's AAC encoder for codecs CMAF cannot carry; mjpeg for
/// thumbnails).
final class Encoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let name: String

    /// `configure` sets dimensions, rates and formats before the encoder is opened with `options`. `globalHeader`:
    /// parameter sets out of band, as MP4 sample entries carry them (a JPEG carries its tables itself).
    init(name: String, options: [String: String] = [:], globalHeader: Bool = true,
         configure: (UnsafeMutablePointer<AVCodecContext>) -> Void) throws {
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw MediaError("encoder \(name) is not available in this FFmpeg build")
        }
        guard let ctx = avcodec_alloc_context3(codec) else { throw FFmpegError.outOfMemory("avcodec_alloc_context3") }
        context = ctx
        self.name = name
        configure(ctx)
        // Out-of-band parameter sets (avcC / AudioSpecificConfig), which MP4 sample entries carry.
        if globalHeader { ctx.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }
        var dict: OpaquePointer? = nil
        for (k, v) in options { av_dict_set(&dict, k, v, 0) }
        defer { av_dict_free(&dict) }
        try FFmpegError.check(avcodec_open2(ctx, codec, &dict), "open \(name) encoder")
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&p)
    }

    var timeBase: TimeBase { TimeBase(context.pointee.time_base) }

    /// Sends a frame (nil drains) and hands every packet produced to `emit`.
    func encode(_ frame: Frame?, emit: (Packet) throws -> Void) throws {
        let sent = avcodec_send_frame(context, frame?.pointer)
        if sent != CFFmpeg_AVERROR_EOF() { try FFmpegError.check(sent, "encode with \(name)") }
        while true {
            let packet = try Packet()
            let r = avcodec_receive_packet(context, packet.pointer)
            if r == CFFmpeg_EAGAIN_ERROR() || r == CFFmpeg_AVERROR_EOF() { return }
            try FFmpegError.check(r, "encode with \(name)")
            try emit(packet)
        }
    }
}
