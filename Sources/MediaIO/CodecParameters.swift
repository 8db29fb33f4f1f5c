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

    /// Replaces the codec's out-of-band configuration (avcC, AudioSpecificConfig, …).
    func setExtradata(_ bytes: UnsafeBufferPointer<UInt8>) throws(FFmpegError) {
        av_freep(&pointer.pointee.extradata)
        pointer.pointee.extradata_size = 0
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        guard let copy = av_mallocz(bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
            throw FFmpegError.outOfMemory("av_mallocz")
        }
        copy.copyMemory(from: base, byteCount: bytes.count)
        pointer.pointee.extradata = copy.assumingMemoryBound(to: UInt8.self)
        pointer.pointee.extradata_size = Int32(bytes.count)
    }

    /// Samples per audio frame (1024 for AAC-LC, 960 for Opus at 20 ms); 0 when unknown or not audio.
    public var frameSize: Int { Int(pointer.pointee.frame_size) }

    public var codecName: String { avcodec_get_name(pointer.pointee.codec_id).map { String(cString: $0) } ?? "unknown" }
    public var sampleRate: Int { Int(pointer.pointee.sample_rate) }
    public var channelCount: Int { Int(pointer.pointee.ch_layout.nb_channels) }
    /// The stream's nominal bit rate (the container's, or the estimate the conditioner set), nil when unknown.
    public var bitRate: Int? { pointer.pointee.bit_rate > 0 ? Int(pointer.pointee.bit_rate) : nil }

    /// The RFC 6381 codecs parameter a CMAF audio track of these parameters gets (`mp4a.40.<object type>` from the
    /// AudioSpecificConfig, else from the AAC profile; `opus`), before its header exists; nil for other codecs.
    public var audioCodecString: String? {
        switch pointer.pointee.codec_id {
        case AV_CODEC_ID_AAC:
            // The first five bits of an AudioSpecificConfig are the audio object type (2 = AAC-LC).
            if let first = extradata.first, first >> 3 > 0, first >> 3 < 31 { return "mp4a.40.\(first >> 3)" }
            let profile = pointer.pointee.profile
            return "mp4a.40.\(profile >= 0 ? profile + 1 : 2)"
        case AV_CODEC_ID_OPUS: return "opus"
        default: return nil
        }
    }
    var codecID: AVCodecID { pointer.pointee.codec_id }
    var extradata: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: pointer.pointee.extradata, count: Int(pointer.pointee.extradata_size))
    }
}
