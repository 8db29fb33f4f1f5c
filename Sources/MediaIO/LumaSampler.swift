import CFFmpeg
import Domain
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

    /// Keeps the whole decoded picture (every plane at full size, by reference: no copy, no second decode) beyond
    /// this callback, for a trigger's thumbnail or a snapshot (``JPEGEncoder``).
    public func keep(in held: HeldPicture) throws { try held.hold(frame) }

    /// The decoder's pixel format for this picture.
    var pixelFormat: AVPixelFormat { AVPixelFormat(rawValue: frame.pointer.pointee.format) }

    /// The same picture through swscale's area filter, whatever its size (what ``luma()`` is checked against).
    func lumaBySwscale() throws -> LumaImage { try sampler.scaledBySwscale(frame) }

    /// The block average of the finished picture, not of its bands; nil where the geometry needs swscale.
    func lumaByWholePicture() -> [UInt8]? { sampler.wholePicturePlane(frame) }
}

/// Decodes one video stream and scales each picture to a small luma plane for motion analysis.
///
/// Decodes at "analysis" quality (loop filter skipped): motion detection needs where pixels changed, not a pretty
/// picture, and skipping the deblocking filter is the biggest saving the decoder offers. Downscaling averages areas,
/// so sensor noise is averaged away instead of aliased: by whole blocks (``LumaBlockAverage``) where the picture is a
/// whole multiple of the plane, which is most camera sizes and costs a tenth of swscale's `area` filter on 1080p
/// (and less again where the decoder reports its bands: ``BandAveragedPlanes``); through swscale (`SWS_AREA`)
/// otherwise.
public final class LumaSampler {
    private let decoder: Decoder
    private let frame: Frame
    private let scaled: Frame
    private let converter: PixelConverter
    /// Planes by block average, built from the decoder's bands where it reports them.
    private let planes: BandAveragedPlanes
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
        self.width = min(width, w)
        self.height = height ?? max(2, Int((Double(self.width) * Double(h) / Double(w) / 2).rounded()) * 2)
        planes = BandAveragedPlanes(width: self.width, height: self.height)
        decoder = try Decoder(parameters: try CodecParameters(copying: input.parameters(of: video.index)),
                              timeBase: video.timeBase, threads: threads,
                              quality: keyframesOnly ? .keyframes : .analysis, bands: planes)
        frame = try Frame()
        scaled = try Frame()
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
        if let pixels = planes.plane(of: UnsafePointer(picture.pointer)) { return LumaImage(width: width, height: height, pixels: pixels) }
        return try scaledBySwscale(picture)
    }

    fileprivate func wholePicturePlane(_ picture: Frame) -> [UInt8]? {
        planes.wholePicturePlane(of: UnsafePointer(picture.pointer))
    }

    /// Planes built from the decoder's bands, and planes averaged from the finished picture (no bands, or unusable).
    public var planeSources: (bands: Int, wholePictures: Int) { (planes.bandPlanes, planes.wholePlanes) }

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
