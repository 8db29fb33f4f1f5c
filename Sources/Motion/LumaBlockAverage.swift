/// Scales a full-resolution 8-bit luma plane down to the analysis plane by averaging whole blocks of pixels, for
/// source sizes that are a whole multiple of the plane (1920×1080, 1280×720 and 640×360 are 12, 8 and 4 times 160×90;
/// 3840×2160 is 24 times). That is an exact area average, so sensor noise is averaged away as with swscale's `area`
/// filter, at a fraction of its cost: rows are summed into a row of column totals (a loop the compiler vectorises),
/// then each block's total is looked up in a table that divides, rounds and maps the range in one step.
///
/// Limited-range luma (16…235, what H.264 and HEVC cameras send unless they flag full range) is expanded to 0…255,
/// as swscale does when it writes a grey plane, so the detector's thresholds (in full-range levels) mean the same on
/// every source.
public struct LumaBlockAverage: Sendable {
    public let sourceWidth: Int
    public let sourceHeight: Int
    public let width: Int
    public let height: Int
    /// Source pixels per plane pixel, across and down.
    public let blockWidth: Int
    public let blockHeight: Int
    /// Block total → plane value (rounded mean, range-expanded for limited-range sources).
    private let levels: [UInt8]

    /// nil when the source is not a whole multiple of the plane, or a block has more rows than a 16-bit column total
    /// can hold (more than 257).
    public init?(sourceWidth: Int, sourceHeight: Int, width: Int, height: Int, limitedRange: Bool) {
        guard width > 0, height > 0, sourceWidth >= width, sourceHeight >= height,
              sourceWidth % width == 0, sourceHeight % height == 0
        else { return nil }
        let bw = sourceWidth / width, bh = sourceHeight / height
        guard bh <= 257 else { return nil }
        (self.sourceWidth, self.sourceHeight, self.width, self.height) = (sourceWidth, sourceHeight, width, height)
        (blockWidth, blockHeight) = (bw, bh)
        let n = bw * bh
        levels = (0...(n * 255)).map { total in
            guard limitedRange else { return UInt8((total + n / 2) / n) }
            // (mean − 16) · 255 / 219, rounded, clamped: in integers on the total to avoid a second rounding.
            let scaled = total * 255 - 16 * 255 * n
            guard scaled > 0 else { return 0 }
            return UInt8(min(255, (scaled + 219 * n / 2) / (219 * n)))
        }
    }

    /// Averages `plane` (rows `stride` bytes apart) into `output` (`width × height` bytes, row-major).
    /// `columnTotals` is scratch space of at least `sourceWidth` elements.
    public func average(
        _ plane: UnsafePointer<UInt8>, stride: Int, into output: UnsafeMutablePointer<UInt8>,
        columnTotals: UnsafeMutablePointer<UInt16>
    ) {
        addRows(plane, stride: stride, first: 0, count: sourceHeight, into: output, columnTotals: columnTotals)
    }

    /// Adds source rows `first ..< first + count` (`rows` points at row `first`, rows `stride` bytes apart) and writes
    /// every plane row they complete into `output`. Calls must continue where the previous one ended, starting at row
    /// 0, with the same `columnTotals` (at least `sourceWidth` elements): they hold the sums of a plane row whose
    /// block is still open. This is how a picture is averaged band by band as a decoder finishes it, while its rows
    /// are still in the cache. Rows at or past `sourceHeight` are ignored.
    public func addRows(
        _ rows: UnsafePointer<UInt8>, stride: Int, first: Int, count: Int, into output: UnsafeMutablePointer<UInt8>,
        columnTotals: UnsafeMutablePointer<UInt16>
    ) {
        let end = Swift.min(first + count, sourceHeight)
        var row = first
        while row < end {
            let inBlock = row % blockHeight
            let run = Swift.min(blockHeight - inBlock, end - row)
            sumRows(rows + (row - first) * stride, stride: stride, count: run, continuing: inBlock > 0,
                    columnTotals: columnTotals)
            if inBlock + run == blockHeight { finishPlaneRow(row / blockHeight, into: output, columnTotals: columnTotals) }
            row += run
        }
    }

    /// Column sums of `count` rows, added to the open totals when `continuing`.
    private func sumRows(
        _ top: UnsafePointer<UInt8>, stride: Int, count: Int, continuing: Bool, columnTotals: UnsafeMutablePointer<UInt16>
    ) {
        let sourceWidth = self.sourceWidth
        let vectorWidth = sourceWidth & ~15
        // 16 columns at a time down all the rows in registers (one store per 16 totals, not one per row: the totals'
        // loads and stores cost more than the additions), then the columns left over.
        var x = 0
        while x < vectorWidth {
            let totals = UnsafeMutableRawPointer(columnTotals + x)
            var total = continuing ? totals.loadUnaligned(as: SIMD16<UInt16>.self) : SIMD16<UInt16>()
            var row = UnsafeRawPointer(top + x)
            for _ in 0..<count {
                total &+= SIMD16<UInt16>(truncatingIfNeeded: row.loadUnaligned(as: SIMD16<UInt8>.self))
                row += stride
            }
            totals.storeBytes(of: total, as: SIMD16<UInt16>.self)
            x += 16
        }
        for x in vectorWidth..<sourceWidth {
            var total: UInt16 = continuing ? columnTotals[x] : 0
            for r in 0..<count { total &+= UInt16(top[r * stride + x]) }
            columnTotals[x] = total
        }
    }

    /// Plane row `y` from the column sums of its block's rows.
    private func finishPlaneRow(_ y: Int, into output: UnsafeMutablePointer<UInt8>, columnTotals: UnsafeMutablePointer<UInt16>) {
        let bw = blockWidth
        let out = output + y * width
        levels.withUnsafeBufferPointer { levels in
            for x in 0..<width {
                var total = 0
                let first = columnTotals + x * bw
                for i in 0..<bw { total &+= Int(first[i]) }
                out[x] = levels[total]
            }
        }
    }
}
