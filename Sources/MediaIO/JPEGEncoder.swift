import CFFmpeg
import Foundation
import Timeline

/// A JPEG made from a decoded picture: the bytes of one baseline JFIF image and its size in pixels.
public struct JPEGPicture: Sendable, Hashable {
    public var bytes: [UInt8]
    public var width: Int
    public var height: Int

    public init(bytes: [UInt8], width: Int, height: Int) {
        self.bytes = bytes
        self.width = width
        self.height = height
    }
}

/// The latest picture the analysis decoded, kept by reference (its buffers are shared with the decoder's output, not
/// copied) so that a thumbnail or a snapshot can be made of it after the decode callback returned: a manual trigger
/// is applied between two packets, and a snapshot is asked for at any time.
///
/// Why a lock: with an analysis substream the pictures are decoded on the substream's reader thread and the JPEG is
/// made on the media thread. Each side only takes or drops a reference under the lock; the picture's pixels are never
/// written again once the decoder handed it out, so reading them outside the lock is safe.
public final class HeldPicture: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private let frame: Frame
    private var holding = false

    public init() throws {
        frame = try Frame()
    }

    /// Replaces the held picture with a new reference to `picture`.
    func hold(_ picture: Frame) throws {
        try lock.withLock {
            frame.unreference()
            holding = false
            try FFmpegError.check(av_frame_ref(frame.pointer, picture.pointer), "keep a decoded picture")
            holding = true
        }
    }

    /// Makes `destination` a new reference to the held picture; false (and `destination` empty) when none is held.
    func reference(into destination: Frame) throws -> Bool {
        try lock.withLock {
            destination.unreference()
            guard holding else { return false }
            try FFmpegError.check(av_frame_ref(destination.pointer, frame.pointer), "reference the kept picture")
            return true
        }
    }

    /// Drops the held picture (its buffers go back to the decoder's pool).
    public func release() {
        lock.withLock {
            frame.unreference()
            holding = false
        }
    }
}

/// Encodes decoded pictures as small JPEGs with libavcodec's `mjpeg` encoder: scaled (area average) to at most
/// `maxWidth` pixels wide with the picture's display aspect ratio, converted to full-range 4:2:0 (what a JPEG decoder
/// assumes; a limited-range picture encoded as is would look washed out).
///
/// Owns its scaler, its scaled frame and its encoder (made again when the picture size changes). Not thread-safe:
/// one owner, the media thread. Each ``encode(_:)`` is a synchronous FFmpeg call of a few milliseconds (a 1080p
/// picture scaled to 320 px): callers run it on a media thread, never on Swift's cooperative pool.
public final class JPEGEncoder {
    public let maxWidth: Int
    /// mjpeg's quantiser scale, 2 (best) … 31; 5 keeps a 320 px thumbnail near 10 KB.
    public let quality: Int32
    private let source: Frame
    private let scaled: Frame
    private var scaler: OpaquePointer?
    private var encoder: Encoder?
    private var encoderSize: (width: Int32, height: Int32) = (0, 0)
    /// Pictures sent to the current encoder: each gets the next timestamp (mpegvideo refuses one that does not
    /// increase).
    private var encoded: Int64 = 0

    public init(maxWidth: Int, quality: Int32 = 5) throws {
        precondition(maxWidth >= 16, "a JPEG narrower than 16 px shows nothing")
        self.maxWidth = maxWidth
        self.quality = quality
        source = try Frame()
        scaled = try Frame()
    }

    deinit { sws_freeContext(scaler) }

    /// The held picture as a JPEG; nil when no picture is held yet.
    public func encode(_ held: HeldPicture) throws -> JPEGPicture? {
        guard try held.reference(into: source) else { return nil }
        defer { source.unreference() }
        return try encode(source)
    }

    /// The size a `width`×`height` picture with sample aspect ratio `sampleAspect` gets: at most `maxWidth` wide
    /// (never enlarged), the display aspect ratio kept, both sides even (4:2:0 chroma).
    public static func outputSize(width: Int, height: Int, sampleAspect: (num: Int, den: Int), maxWidth: Int) -> (width: Int, height: Int) {
        let aspect = sampleAspect.num > 0 && sampleAspect.den > 0 ? Double(sampleAspect.num) / Double(sampleAspect.den) : 1
        let displayWidth = Double(width) * aspect
        let outWidth = max(2, Int(min(Double(maxWidth), displayWidth) / 2) * 2)
        let outHeight = max(2, Int((Double(outWidth) * Double(height) / displayWidth / 2).rounded()) * 2)
        return (outWidth, outHeight)
    }

    func encode(_ picture: Frame) throws -> JPEGPicture {
        let p = picture.pointer.pointee
        guard p.width > 0, p.height > 0 else { throw MediaError("cannot make a JPEG of a \(p.width)x\(p.height) picture") }
        let size = Self.outputSize(width: Int(p.width), height: Int(p.height),
                                   sampleAspect: (Int(p.sample_aspect_ratio.num), Int(p.sample_aspect_ratio.den)),
                                   maxWidth: maxWidth)
        try scale(picture, to: (Int32(size.width), Int32(size.height)))
        let encoder = try encoder(width: Int32(size.width), height: Int32(size.height))
        // With AV_CODEC_FLAG_QSCALE the encoder takes each picture's quantiser from the frame.
        scaled.pointer.pointee.quality = FF_QP2LAMBDA * quality
        scaled.pointer.pointee.pts = encoded
        encoded += 1
        var bytes: [UInt8] = []
        try encoder.encode(scaled) { packet in bytes.append(contentsOf: packet.payload) }
        guard !bytes.isEmpty else { throw MediaError("the mjpeg encoder returned no picture") }
        return JPEGPicture(bytes: bytes, width: size.width, height: size.height)
    }

    /// Scales and converts `picture` into `scaled` (full-range yuv420p).
    private func scale(_ picture: Frame, to size: (width: Int32, height: Int32)) throws {
        let p = picture.pointer.pointee
        let format = AVPixelFormat(rawValue: p.format)
        scaler = sws_getCachedContext(scaler, p.width, p.height, format, size.width, size.height, AV_PIX_FMT_YUV420P,
                                      SWS_AREA, nil, nil, nil)
        guard let scaler else { throw MediaError("cannot scale \(p.width)x\(p.height) pictures for a JPEG") }
        // The source's range as the decoder reports it (the deprecated yuvj formats are full range by definition);
        // the destination full range. Coefficients: BT.709 for pictures tagged so, BT.601 otherwise (swscale's own
        // default), the same on both sides so that only the range changes.
        let fullRangeSource = p.color_range == AVCOL_RANGE_JPEG
            || [AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P].contains(format)
        let coefficients = sws_getCoefficients(p.colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT)
        // Answers -1 for conversions whose range swscale does not handle (RGB to RGB); the picture is then made
        // without the range change rather than not at all.
        _ = sws_setColorspaceDetails(scaler, coefficients, fullRangeSource ? 1 : 0, coefficients, 1, 0, 1 << 16, 1 << 16)
        scaled.unreference()
        scaled.pointer.pointee.width = size.width
        scaled.pointer.pointee.height = size.height
        scaled.pointer.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        try FFmpegError.check(av_frame_get_buffer(scaled.pointer, 0), "allocate a JPEG picture")
        try FFmpegError.check(sws_scale_frame(scaler, scaled.pointer, picture.pointer), "scale a picture for a JPEG")
        scaled.pointer.pointee.color_range = AVCOL_RANGE_JPEG
    }

    /// The mjpeg encoder for pictures of this size (made again when the size changes: a camera switched resolution).
    private func encoder(width: Int32, height: Int32) throws -> Encoder {
        if let encoder, encoderSize == (width, height) { return encoder }
        encoder = nil
        let made = try Encoder(name: "mjpeg", globalHeader: false) { ctx in
            ctx.pointee.width = width
            ctx.pointee.height = height
            ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            // Full range: what JFIF means, and what lets mjpeg take yuv420p without the deprecated yuvj formats.
            ctx.pointee.color_range = AVCOL_RANGE_JPEG
            ctx.pointee.time_base = AVRational(num: 1, den: 25)
            ctx.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
        }
        encoder = made
        encoderSize = (width, height)
        encoded = 0
        return made
    }
}
