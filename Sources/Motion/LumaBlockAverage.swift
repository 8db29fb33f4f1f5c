import CLumaKernels

/// Scales a full-resolution 8-bit luma plane down to the analysis plane by averaging whole blocks of pixels, for
/// source sizes that are a whole multiple of the plane (1920×1080, 1280×720 and 640×360 are 12, 8 and 4 times 160×90;
/// 3840×2160 is 24 times). That is an exact area average, so sensor noise is averaged away as with swscale's `area`
/// filter, at a fraction of its cost: rows are summed into a row of column totals (a loop the compiler vectorises),
/// then each block's total is looked up in a table that divides, rounds and maps the range in one step.
///
/// Limited-range luma (16…235, what H.264 and HEVC cameras send unless they flag full range) is expanded to 0…255,
/// as swscale does when it writes a grey plane, so the detector's thresholds (in full-range levels) mean the same on
/// every source.
///
/// Where a block is an even number of columns wide (every camera size above) columns are summed in pairs: half the
/// totals to keep, and on CPUs with AVX2 a C kernel (CLumaKernels) makes each pair sum of 32 pixels one instruction.
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
    /// Totals are kept per pair of columns (blocks an even number of columns wide, at most 128 rows so a pair's
    /// total fits 16 bits), else per column.
    let sumsPairs: Bool
    /// Pair sums by the AVX2 kernel.
    let usesAVX2: Bool
    static let cpuHasAVX2 = pushav_luma_avx2_available() != 0

    /// nil when the source is not a whole multiple of the plane, or a block has more rows than a 16-bit column total
    /// can hold (more than 257).
    /// - Parameter allowAVX2: false keeps to the portable Swift code (tests compare the two).
    public init?(sourceWidth: Int, sourceHeight: Int, width: Int, height: Int, limitedRange: Bool, allowAVX2: Bool = true) {
        guard width > 0, height > 0, sourceWidth >= width, sourceHeight >= height,
              sourceWidth % width == 0, sourceHeight % height == 0
        else { return nil }
        let bw = sourceWidth / width, bh = sourceHeight / height
        guard bh <= 257 else { return nil }
        (self.sourceWidth, self.sourceHeight, self.width, self.height) = (sourceWidth, sourceHeight, width, height)
        (blockWidth, blockHeight) = (bw, bh)
        sumsPairs = bw % 2 == 0 && bh <= 128
        usesAVX2 = sumsPairs && allowAVX2 && Self.cpuHasAVX2
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
        if usesAVX2 {
            pushav_luma_pair_sums_avx2(top, stride, Int32(count), Int32(sourceWidth), continuing ? 1 : 0, columnTotals)
        } else if sumsPairs {
            sumPairs(top, stride: stride, count: count, continuing: continuing, totals: columnTotals)
        } else {
            sumColumns(top, stride: stride, count: count, continuing: continuing, columnTotals: columnTotals)
        }
    }

    /// Totals of column pairs (`totals[i]`: columns 2i and 2i + 1).
    private func sumPairs(
        _ top: UnsafePointer<UInt8>, stride: Int, count: Int, continuing: Bool, totals: UnsafeMutablePointer<UInt16>
    ) {
        let sourceWidth = self.sourceWidth
        let vectorWidth = sourceWidth & ~15
        var x = 0
        while x < vectorWidth {
            let out = UnsafeMutableRawPointer(totals + x / 2)
            var total = continuing ? out.loadUnaligned(as: SIMD8<UInt16>.self) : SIMD8<UInt16>()
            var row = UnsafeRawPointer(top + x)
            for _ in 0..<count {
                // 16 pixels read as 8 little-endian words: the low byte is the even column, the high byte the odd.
                let words = row.loadUnaligned(as: SIMD8<UInt16>.self)
                total &+= (words & 0x00FF) &+ (words &>> 8)
                row += stride
            }
            out.storeBytes(of: total, as: SIMD8<UInt16>.self)
            x += 16
        }
        while x + 1 < sourceWidth {
            var total: UInt16 = continuing ? totals[x / 2] : 0
            for r in 0..<count { total &+= UInt16(top[r * stride + x]) &+ UInt16(top[r * stride + x + 1]) }
            totals[x / 2] = total
            x += 2
        }
    }

    /// Totals of single columns.
    private func sumColumns(
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
        // Pairs: each block spans blockWidth / 2 pair totals. The common spans are written out (1080p: 6, 720p: 4,
        // 360p: 2): a loop of unknown length per plane pixel cost more than the sums.
        let perBlock = sumsPairs ? blockWidth / 2 : blockWidth
        let out = output + y * width, t = UnsafePointer(columnTotals)
        levels.withUnsafeBufferPointer { levels in
            let levels = levels.baseAddress!
            switch perBlock {
            case 2:
                for x in 0..<width {
                    let b = t + x &* 2
                    out[x] = levels[Int(b[0]) &+ Int(b[1])]
                }
            case 4:
                for x in 0..<width {
                    let b = t + x &* 4
                    out[x] = levels[(Int(b[0]) &+ Int(b[1])) &+ (Int(b[2]) &+ Int(b[3]))]
                }
            case 6:
                for x in 0..<width {
                    let b = t + x &* 6
                    out[x] = levels[(Int(b[0]) &+ Int(b[1])) &+ (Int(b[2]) &+ Int(b[3])) &+ (Int(b[4]) &+ Int(b[5]))]
                }
            default:
                for x in 0..<width {
                    let b = t + x &* perBlock
                    var total = 0
                    for i in 0..<perBlock { total &+= Int(b[i]) }
                    out[x] = levels[total]
                }
            }
        }
    }
}
