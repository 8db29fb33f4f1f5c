import CFFmpeg

/// Owns a `SwsContext` converting decoded pictures to another pixel format and size (yuv420p for the H.264 encoder,
/// a small grey plane for motion analysis).
final class PixelConverter {
    private var context: OpaquePointer?
    let width: Int32
    let height: Int32
    let format: AVPixelFormat
    private let flags: Int32

    init(width: Int, height: Int, format: AVPixelFormat, flags: Int32 = SWS_BICUBIC) {
        self.width = Int32(width)
        self.height = Int32(height)
        self.format = format
        self.flags = flags
    }

    deinit { sws_freeContext(context) }

    /// Converts `source` into `destination` (reallocating its buffers as needed).
    func convert(_ source: Frame, into destination: Frame) throws {
        let src = source.pointer
        context = sws_getCachedContext(
            context, src.pointee.width, src.pointee.height, AVPixelFormat(rawValue: src.pointee.format),
            width, height, format, flags, nil, nil, nil)
        guard let context else { throw MediaError("cannot convert \(src.pointee.width)x\(src.pointee.height) pictures") }
        destination.unreference()
        destination.pointer.pointee.width = width
        destination.pointer.pointee.height = height
        destination.pointer.pointee.format = format.rawValue
        try FFmpegError.check(av_frame_get_buffer(destination.pointer, 0), "allocate converted picture")
        try FFmpegError.check(sws_scale_frame(context, destination.pointer, src), "convert picture")
        try FFmpegError.check(av_frame_copy_props(destination.pointer, src), "copy picture properties")
    }
}
