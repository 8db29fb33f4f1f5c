import CFFmpeg

/// Owns an `AVBSFContext` (e.g. `aac_adtstoasc`, which turns ADTS-framed AAC into the raw frames plus
/// AudioSpecificConfig an MP4 track needs; the `cmaf` muxer mode disables FFmpeg's automatic insertion of it).
final class BitstreamFilter {
    private let context: UnsafeMutablePointer<AVBSFContext>

    init(name: String, input: CodecParameters, timeBase: TimeBase) throws(FFmpegError) {
        guard let filter = av_bsf_get_by_name(name) else {
            throw FFmpegError("find bitstream filter \(name)", code: CFFmpeg_AVERROR(ENOSYS))
        }
        var ctx: UnsafeMutablePointer<AVBSFContext>? = nil
        try FFmpegError.check(av_bsf_alloc(filter, &ctx), "allocate \(name)")
        context = ctx!
        try FFmpegError.check(avcodec_parameters_copy(context.pointee.par_in, input.pointer), "configure \(name)")
        context.pointee.time_base_in = timeBase.rational
        try FFmpegError.check(av_bsf_init(context), "initialise \(name)")
    }

    deinit {
        var p: UnsafeMutablePointer<AVBSFContext>? = context
        av_bsf_free(&p)
    }

    /// Parameters of the filtered stream (for aac_adtstoasc: with the AudioSpecificConfig once a packet went through).
    func outputParameters() throws(FFmpegError) -> CodecParameters { try CodecParameters(copying: context.pointee.par_out) }

    /// Packets the filter rejected as invalid data (a damaged ADTS header, …), dropped instead of ending the stream.
    private(set) var rejectedPackets = 0

    /// Filters `packet` (consumed) and hands every output packet to `emit`; pass nil to drain at the end.
    func filter(_ packet: Packet?, emit: (Packet) throws -> Void) throws {
        try FFmpegError.check(av_bsf_send_packet(context, packet?.pointer), "bitstream filter send")
        while true {
            let out = try Packet()
            let r = av_bsf_receive_packet(context, out.pointer)
            if r == CFFmpeg_EAGAIN_ERROR() || r == CFFmpeg_AVERROR_EOF() { return }
            if r == CFFmpeg_AVERROR_INVALIDDATA() {
                rejectedPackets += 1  // one damaged frame of a live stream must not end the recording
                continue
            }
            try FFmpegError.check(r, "bitstream filter receive")
            try emit(out)
        }
    }
}
