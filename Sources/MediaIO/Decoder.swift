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

    /// Receives the finished bands of each picture; held here so it lives as long as the context that calls it.
    private let bands: BandAveragedPlanes?

    /// - Parameter bands: gets every band of rows the decoder finishes (H.264 and the MPEG video decoders report
    ///   them; other decoders never call it). Single-threaded decoding only (`threads == 1`): with more threads bands
    ///   arrive from several threads in any order, so they are not asked for.
    init(parameters: CodecParameters, timeBase: TimeBase, threads: Int = 0, quality: Quality = .full,
         bands: BandAveragedPlanes? = nil) throws {
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
        self.bands = threads == 1 ? bands : nil
        if let bands = self.bands {
            ctx.pointee.opaque = Unmanaged.passUnretained(bands).toOpaque()
            // In coded order: a band always belongs to the picture being decoded, never to a held earlier one.
            ctx.pointee.slice_flags = SLICE_FLAG_CODED_ORDER
            ctx.pointee.draw_horiz_band = { context, frame, _, y, type, height in
                guard let context, let frame, let opaque = context.pointee.opaque else { return }
                let c = context.pointee
                Unmanaged<BandAveragedPlanes>.fromOpaque(opaque).takeUnretainedValue().band(
                    frame, geometry: PictureGeometry(width: Int(c.width), height: Int(c.height), format: c.pix_fmt.rawValue),
                    y: Int(y), rows: Int(height), isFrame: type == 3)
            }
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
