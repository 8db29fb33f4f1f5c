import CFFmpeg
import Motion

/// The analysis planes of decoded pictures whose size is a whole multiple of the plane (``LumaBlockAverage``),
/// averaged band by band while the decoder writes them.
///
/// Why: averaging a finished 1080p picture reads its 2 MB luma plane back from the last-level cache or memory, and
/// the loads, not the additions, were the cost (profiled: 4.4 % of a P-only 1080p motion recording, the stalls on the
/// loads). The H.264 and MPEG video decoders report each finished band of macroblock rows (`draw_horiz_band`); adding
/// those rows to the plane right then reads them from the core's own cache.
///
/// A band belongs to the picture buffer it was written into (its luma pointer); a picture whose rows all arrived in
/// order, once, as a frame (not as fields) is kept under that pointer until the decoder hands the picture out. Anything
/// else — fields, a slice lost or out of order, concealed errors, a decoder without bands (HEVC), a cropped top or
/// left edge — falls back to averaging the finished picture, which gives the same plane.
final class BandAveragedPlanes {
    let width: Int
    let height: Int
    private var geometry: PictureGeometry?
    private var average: LumaBlockAverage?
    /// Column sums of the band being built, and of a whole-picture average (separate: a picture may be handed out
    /// while another one's bands are open).
    private var bandTotals: [UInt16] = []
    private var pictureTotals: [UInt16] = []
    /// The picture whose bands are arriving: its luma pointer, the next row expected (nil once out of order) and the
    /// plane so far.
    private var open: (key: UnsafeMutableRawPointer, nextRow: Int?, pixels: [UInt8])?
    /// Finished planes by luma pointer, oldest first; at most ``capacity`` (more pictures than H.264's largest
    /// decoded picture buffer): past that the oldest is dropped and its picture, if it is ever handed out, averaged
    /// whole.
    private var finished: [(key: UnsafeMutableRawPointer, pixels: [UInt8])] = []
    static let capacity = 20

    /// Pictures whose plane came from bands, and pictures averaged whole (the fallback).
    private(set) var bandPlanes = 0
    private(set) var wholePlanes = 0

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// The block average for `frame`'s geometry, nil when that geometry needs swscale; rebuilt when the stream
    /// changes size or format.
    private func averaging(_ key: PictureGeometry) -> LumaBlockAverage? {
        if key != geometry {
            geometry = key
            average = key.lumaRange.flatMap {
                LumaBlockAverage(sourceWidth: key.width, sourceHeight: key.height, width: width, height: height,
                                 limitedRange: $0 == .limited)
            }
            if let average {
                bandTotals = [UInt16](repeating: 0, count: average.sourceWidth)
                pictureTotals = bandTotals
            }
            open = nil
            finished.removeAll()
        }
        return average
    }

    /// A band of rows `y ..< y + rows` of `frame` is final (the decoder's `draw_horiz_band`; `isFrame` false for a
    /// field). `geometry` is the decoder's picture size and format: the buffer being written is the coded size (1088
    /// rows for 1080p H.264), the picture handed out is cropped to the decoder's size.
    func band(_ frame: UnsafePointer<AVFrame>, geometry: PictureGeometry, y: Int, rows: Int, isFrame: Bool) {
        guard let average = averaging(geometry), let luma = frame.pointee.data.0 else { return }
        let key = UnsafeMutableRawPointer(luma)
        if open?.key != key || y == 0 {
            // A new picture in this buffer: whatever was kept under it is stale.
            finished.removeAll { $0.key == key }
            open = (key, y == 0 ? 0 : nil, [UInt8](repeating: 0, count: width * height))
        }
        guard isFrame, rows > 0, open!.nextRow == y else {
            open!.nextRow = nil
            return
        }
        let stride = Int(frame.pointee.linesize.0)
        guard stride > 0 else {
            open!.nextRow = nil
            return
        }
        open!.pixels.withUnsafeMutableBufferPointer { out in
            bandTotals.withUnsafeMutableBufferPointer { totals in
                average.addRows(luma + y * stride, stride: stride, first: y, count: rows, into: out.baseAddress!,
                                columnTotals: totals.baseAddress!)
            }
        }
        let next = y + rows
        if next >= average.sourceHeight {
            finished.append((key, open!.pixels))
            if finished.count > Self.capacity { finished.removeFirst() }
            open = nil
        } else {
            open!.nextRow = next
        }
    }

    /// The plane of a picture the decoder handed out, or nil when its geometry needs swscale.
    func plane(of frame: UnsafePointer<AVFrame>) -> [UInt8]? {
        let p = frame.pointee
        guard let average = averaging(PictureGeometry(of: p)), let luma = p.data.0 else { return nil }
        let key = UnsafeMutableRawPointer(luma)
        if let index = finished.firstIndex(where: { $0.key == key }) {
            let pixels = finished.remove(at: index).pixels
            // Concealment rewrites damaged rows after their bands were reported.
            if p.decode_error_flags == 0, p.flags & AV_FRAME_FLAG_CORRUPT == 0 {
                bandPlanes += 1
                return pixels
            }
        }
        wholePlanes += 1
        return wholePicture(frame, average)
    }

    /// The plane averaged from the finished picture (what the bands must add up to), or nil as ``plane(of:)``.
    func wholePicturePlane(of frame: UnsafePointer<AVFrame>) -> [UInt8]? {
        averaging(PictureGeometry(of: frame.pointee)).map { wholePicture(frame, $0) }
    }

    private func wholePicture(_ frame: UnsafePointer<AVFrame>, _ average: LumaBlockAverage) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height)
        pixels.withUnsafeMutableBufferPointer { out in
            pictureTotals.withUnsafeMutableBufferPointer { totals in
                average.average(frame.pointee.data.0!, stride: Int(frame.pointee.linesize.0), into: out.baseAddress!,
                                columnTotals: totals.baseAddress!)
            }
        }
        return pixels
    }
}

/// What decides how a decoded picture is downscaled.
struct PictureGeometry: Equatable {
    let width: Int
    let height: Int
    let format: Int32

    /// The geometry of a decoded picture as handed out.
    init(of picture: AVFrame) {
        self.init(width: Int(picture.width), height: Int(picture.height), format: picture.format)
    }

    init(width: Int, height: Int, format: Int32) {
        (self.width, self.height, self.format) = (width, height, format)
    }

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
