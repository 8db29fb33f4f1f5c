import CFFmpeg
import Motion
import Timeline

/// A small greyscale picture handed from the media layer to motion analysis (row-major, stride = width).
public struct LumaImage: Sendable {
    public var width: Int
    public var height: Int
    public var pixels: [UInt8]
}

/// A decoded picture, valid only inside the ``LumaSampler/decode(_:_:)`` callback: its time is known at once, the
/// (comparatively costly) downscale happens only if analysis asks for it.
public struct DecodedPicture {
    /// Presentation time on the input's timeline (raw stream timestamps, not rebased).
    public let time: MediaTime
    public let isKeyframe: Bool
    fileprivate let sampler: LumaSampler
    fileprivate let frame: Frame

    /// The picture scaled to the sampler's analysis size, luma only.
    public func luma() throws -> LumaImage { try sampler.scale(frame) }

    /// The decoder's pixel format for this picture.
    var pixelFormat: AVPixelFormat { AVPixelFormat(rawValue: frame.pointer.pointee.format) }

    /// The same picture through swscale's area filter, whatever its size (what ``luma()`` is checked against).
    func lumaBySwscale() throws -> LumaImage { try sampler.scaledBySwscale(frame) }
}

/// Decodes one video stream and scales each picture to a small luma plane for motion analysis.
///
/// Decodes at "analysis" quality (loop filter skipped): motion detection needs where pixels changed, not a pretty
/// picture, and skipping the deblocking filter is the biggest saving the decoder offers. Downscaling averages areas,
/// so sensor noise is averaged away instead of aliased: by whole blocks (``LumaBlockAverage``) where the picture is a
/// whole multiple of the plane, which is most camera sizes and costs a tenth of swscale's `area` filter on 1080p;
/// through swscale (`SWS_AREA`) otherwise.
public final class LumaSampler {
    private let decoder: Decoder
    private let frame: Frame
    private let scaled: Frame
    private let converter: PixelConverter
    /// The block average for the latest picture geometry, nil when that geometry needs swscale; rebuilt when the
    /// stream changes size or format mid-way.
    private var blockAverage: (key: PictureGeometry, average: LumaBlockAverage?)?
    private var columnTotals: [UInt16] = []
    public let width: Int
    public let height: Int

    /// - Parameters:
    ///   - width: analysis width; the height follows the source aspect ratio (rounded to even).
    ///   - threads: decoder threads (0 = FFmpeg's choice).
    /// - Parameters:
    ///   - height: analysis height; pass both to match the motion detector's plane exactly.
    ///   - keyframesOnly: decode key pictures only (the caller should send only keyframe packets).
    public init(input: MediaInput, width: Int = 160, height: Int? = nil, threads: Int = 1, keyframesOnly: Bool = false) throws {
        guard let video = input.video, let w = video.width, let h = video.height, w > 0, h > 0 else {
            throw MediaError("\(input.url) has no decodable video stream")
        }
        decoder = try Decoder(parameters: try CodecParameters(copying: input.parameters(of: video.index)),
                              timeBase: video.timeBase, threads: threads,
                              quality: keyframesOnly ? .keyframes : .analysis)
        frame = try Frame()
        scaled = try Frame()
        self.width = min(width, w)
        self.height = height ?? max(2, Int((Double(self.width) * Double(h) / Double(w) / 2).rounded()) * 2)
        converter = PixelConverter(width: self.width, height: self.height, format: AV_PIX_FMT_GRAY8, flags: SWS_AREA)
    }

    /// Decodes `packet` (nil drains) and hands every decoded picture to `body` in presentation order.
    public func decode(_ packet: Packet?, _ body: (DecodedPicture) throws -> Void) throws {
        try decoder.decode(packet, into: frame) { picture in
            guard let ts = picture.bestEffortTimestamp else { return }
            try body(DecodedPicture(time: decoder.timeBase.time(ts), isKeyframe: picture.isKeyframe, sampler: self,
                                    frame: picture))
        }
    }

    fileprivate func scale(_ picture: Frame) throws -> LumaImage {
        let p = picture.pointer.pointee
        let geometry = PictureGeometry(width: Int(p.width), height: Int(p.height), format: p.format)
        if blockAverage?.key != geometry {
            blockAverage = (geometry, geometry.lumaRange.flatMap {
                LumaBlockAverage(sourceWidth: geometry.width, sourceHeight: geometry.height, width: width, height: height,
                                 limitedRange: $0 == .limited)
            })
            if let average = blockAverage?.average { columnTotals = [UInt16](repeating: 0, count: average.sourceWidth) }
        }
        if let average = blockAverage?.average, let plane = p.data.0 {
            var pixels = [UInt8](repeating: 0, count: width * height)
            pixels.withUnsafeMutableBufferPointer { out in
                columnTotals.withUnsafeMutableBufferPointer { totals in
                    average.average(plane, stride: Int(p.linesize.0), into: out.baseAddress!, columnTotals: totals.baseAddress!)
                }
            }
            return LumaImage(width: width, height: height, pixels: pixels)
        }
        return try scaledBySwscale(picture)
    }

    /// The same plane through swscale's area filter (any size and pixel format).
    func scaledBySwscale(_ picture: Frame) throws -> LumaImage {
        try converter.convert(picture, into: scaled)
        let p = scaled.pointer.pointee
        let stride = Int(p.linesize.0)
        var pixels = [UInt8](repeating: 0, count: width * height)
        pixels.withUnsafeMutableBufferPointer { out in
            for row in 0..<height {
                (out.baseAddress! + row * width).update(from: p.data.0! + row * stride, count: width)
            }
        }
        return LumaImage(width: width, height: height, pixels: pixels)
    }
}

/// What decides how a decoded picture is downscaled.
struct PictureGeometry: Equatable {
    let width: Int
    let height: Int
    let format: Int32

    enum LumaRange { case limited, full }

    /// The range of plane 0 for the 8-bit Y′CbCr formats whose first plane is the luma plane itself, as swscale reads
    /// them (the `j` formats are full range); nil for every other format (those go through swscale).
    var lumaRange: LumaRange? {
        switch AVPixelFormat(rawValue: format) {
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV444P, AV_PIX_FMT_NV12, AV_PIX_FMT_NV21: .limited
        case AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P: .full
        default: nil
        }
    }
}
