import CFFmpeg

/// Owns a copy of one stream's `AVCodecParameters` (codec, dimensions, extradata, …).
public final class CodecParameters {
    let pointer: UnsafeMutablePointer<AVCodecParameters>

    init(copying source: UnsafePointer<AVCodecParameters>) throws(FFmpegError) {
        guard let p = avcodec_parameters_alloc() else { throw FFmpegError.outOfMemory("avcodec_parameters_alloc") }
        pointer = p
        try FFmpegError.check(avcodec_parameters_copy(p, source), "avcodec_parameters_copy")
    }

    init(from codecContext: UnsafePointer<AVCodecContext>) throws(FFmpegError) {
        guard let p = avcodec_parameters_alloc() else { throw FFmpegError.outOfMemory("avcodec_parameters_alloc") }
        pointer = p
        try FFmpegError.check(avcodec_parameters_from_context(p, codecContext), "avcodec_parameters_from_context")
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecParameters>? = pointer
        avcodec_parameters_free(&p)
    }

    public var codecName: String { avcodec_get_name(pointer.pointee.codec_id).map { String(cString: $0) } ?? "unknown" }
    var codecID: AVCodecID { pointer.pointee.codec_id }
    var extradata: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: pointer.pointee.extradata, count: Int(pointer.pointee.extradata_size))
    }
}
