/// One frame's luma (Y) plane at analysis resolution: row-major, one byte per pixel, stride = width.
///
/// The media layer produces it by decoding and downscaling the video's Y plane (no chroma is needed).
public struct LumaPlane: Sendable, Hashable {
    public let width: Int
    public let height: Int
    /// `width × height` bytes, row after row.
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width > 0 && height > 0, "a plane needs at least one pixel")
        precondition(pixels.count == width * height, "pixels must hold width × height bytes")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// A plane of one level.
    public init(width: Int, height: Int, level: UInt8) {
        self.init(width: width, height: height, pixels: [UInt8](repeating: level, count: width * height))
    }

    public subscript(x: Int, y: Int) -> UInt8 {
        get { pixels[y * width + x] }
        set { pixels[y * width + x] = newValue }
    }
}
