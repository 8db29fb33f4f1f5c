import CFFmpeg
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
}

/// Decodes one video stream and scales each picture to a small luma plane for motion analysis.
///
/// Decodes at "analysis" quality (loop filter skipped): motion detection needs where pixels changed, not a pretty
/// picture, and skipping the deblocking filter is the biggest saving the decoder offers. Area averaging (`SWS_AREA`)
/// when downscaling averages sensor noise away instead of aliasing it.
public final class LumaSampler {
    private let decoder: Decoder
    private let frame: Frame
    private let scaled: Frame
    private let converter: PixelConverter
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
