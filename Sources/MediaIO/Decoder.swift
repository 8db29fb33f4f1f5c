import CFFmpeg

/// Owns a decoding `AVCodecContext` for one input stream.
public final class Decoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    public let timeBase: TimeBase

    /// How much of the picture the decoder may skip. Motion analysis does not need deblocked, full-quality pictures
    /// of every frame: skipping the loop filter and the non-reference (B) pictures costs nothing in detection and
    /// a large share of decode time.
    /// `keyframes` decodes key pictures only (motion from one picture per GOP, for low-power hosts).
    public enum Quality: Sendable { case full, analysis, keyframes }

    init(parameters: CodecParameters, timeBase: TimeBase, threads: Int = 0, quality: Quality = .full) throws {
        guard let codec = avcodec_find_decoder(parameters.codecID) else {
            throw MediaError("no decoder for \(parameters.codecName) in this FFmpeg build")
        }
        guard let ctx = avcodec_alloc_context3(codec) else { throw FFmpegError.outOfMemory("avcodec_alloc_context3") }
        context = ctx
        self.timeBase = timeBase
        try FFmpegError.check(avcodec_parameters_to_context(ctx, parameters.pointer), "configure \(parameters.codecName) decoder")
        ctx.pointee.pkt_timebase = timeBase.rational
        ctx.pointee.thread_count = Int32(threads)
        if quality != .full {
            ctx.pointee.skip_loop_filter = AVDISCARD_ALL
            ctx.pointee.skip_frame = quality == .keyframes ? AVDISCARD_NONKEY : AVDISCARD_NONREF
            ctx.pointee.flags2 |= AV_CODEC_FLAG2_FAST
        }
        try FFmpegError.check(avcodec_open2(ctx, codec, nil), "open \(parameters.codecName) decoder")
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&p)
    }

    /// Sends a packet (nil drains) and hands every decoded frame to `body`. Corrupt input data is reported by the
    /// decoder as INVALIDDATA; such packets are skipped rather than ending the recording.
    public func decode(_ packet: Packet?, into frame: Frame, _ body: (Frame) throws -> Void) throws {
        let sent = avcodec_send_packet(context, packet?.pointer)
        if sent == CFFmpeg_AVERROR_INVALIDDATA() { return }
        if sent != CFFmpeg_AVERROR_EOF() { try FFmpegError.check(sent, "decode") }
        while true {
            frame.unreference()
            let r = avcodec_receive_frame(context, frame.pointer)
            if r == CFFmpeg_EAGAIN_ERROR() || r == CFFmpeg_AVERROR_EOF() { return }
            if r == CFFmpeg_AVERROR_INVALIDDATA() { continue }
            try FFmpegError.check(r, "decode")
            try body(frame)
        }
    }
}
