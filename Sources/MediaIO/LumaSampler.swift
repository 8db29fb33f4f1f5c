import CFFmpeg

/// A small greyscale picture handed from the media layer to motion analysis (row-major, stride = width).
public struct LumaImage: Sendable {
    public var width: Int
    public var height: Int
    public var pixels: [UInt8]
    /// Presentation time in seconds on the input's timeline (raw stream timestamps, not rebased).
    public var time: Double
    public var isKeyframe: Bool
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
    public init(input: MediaInput, width: Int = 160, threads: Int = 1) throws {
        guard let video = input.video, let w = video.width, let h = video.height, w > 0, h > 0 else {
            throw MediaError("\(input.url) has no decodable video stream")
        }
        decoder = try Decoder(parameters: try CodecParameters(copying: input.parameters(of: video.index)),
                              timeBase: video.timeBase, threads: threads, quality: .analysis)
        frame = try Frame()
        scaled = try Frame()
        self.width = min(width, w)
        height = max(2, Int((Double(self.width) * Double(h) / Double(w) / 2).rounded()) * 2)
        converter = PixelConverter(width: self.width, height: height, format: AV_PIX_FMT_GRAY8, flags: SWS_AREA)
    }

    /// Decodes `packet` (nil drains) and hands every picture, as a luma plane, to `body`.
    public func decode(_ packet: Packet?, _ body: (LumaImage) throws -> Void) throws {
        try decoder.decode(packet, into: frame) { picture in
            try converter.convert(picture, into: scaled)
            let p = scaled.pointer.pointee
            let stride = Int(p.linesize.0)
            var pixels = [UInt8](repeating: 0, count: width * height)
            pixels.withUnsafeMutableBufferPointer { out in
                for row in 0..<height {
                    (out.baseAddress! + row * width).update(from: p.data.0! + row * stride, count: width)
                }
            }
            let ts = picture.bestEffortTimestamp ?? 0
            try body(LumaImage(width: width, height: height, pixels: pixels,
                               time: decoder.timeBase.time(ts).seconds, isKeyframe: picture.isKeyframe))
        }
    }
}
