import Testing
@testable import Motion

@Suite struct LumaBlockAverageTests {
    /// Which geometries the block average takes (the rest go through swscale).
    @Test(arguments: [
        (1920, 1080, 160, 90, true), (1280, 720, 160, 90, true), (640, 360, 160, 90, true), (3840, 2160, 160, 90, true),
        (1280, 960, 160, 120, true), (160, 90, 160, 90, true),
        (768, 576, 160, 120, false), (1920, 1080, 160, 91, false), (100, 90, 160, 90, false), (160, 90 * 258, 160, 90, false),
    ])
    func acceptsWholeMultiplesOnly(source: (Int, Int, Int, Int, Bool)) {
        let average = LumaBlockAverage(sourceWidth: source.0, sourceHeight: source.1, width: source.2, height: source.3,
                                       limitedRange: true)
        #expect((average != nil) == source.4)
    }

    /// A flat picture of one luma level: its plane value, full range kept, limited range expanded as swscale does.
    @Test(arguments: [
        (0, false, 0), (255, false, 255), (128, false, 128),
        (16, true, 0), (235, true, 255), (0, true, 0), (255, true, 255), (126, true, 128), (17, true, 1), (234, true, 254),
    ], [true, false])
    func flatPicture(level: (Int, Bool, Int), allowAVX2: Bool) {
        let average = LumaBlockAverage(sourceWidth: 48, sourceHeight: 24, width: 4, height: 2, limitedRange: level.1,
                                       allowAVX2: allowAVX2)!
        let plane = [UInt8](repeating: UInt8(level.0), count: 48 * 24)
        #expect(run(average, plane, stride: 48) == [UInt8](repeating: UInt8(level.2), count: 8))
    }

    /// The AVX2 pair sums, the portable pair sums and the portable column sums give the same plane, whole and band
    /// by band, on random pictures of the geometries cameras send (and one with odd blocks, which sums columns).
    @Test(arguments: [(1920, 1080, 160, 90), (1280, 720, 160, 90), (640, 360, 160, 90), (3840, 2160, 160, 90),
                      (480, 270, 160, 90), (1936, 1088, 242, 136), (200, 100, 100, 50)])
    func kernelsAgree(geometry: (Int, Int, Int, Int)) {
        let (w, h, pw, ph) = geometry
        let stride = w + 32
        var state: UInt32 = UInt32(w * h)
        let plane = (0..<(stride * h)).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        let fast = LumaBlockAverage(sourceWidth: w, sourceHeight: h, width: pw, height: ph, limitedRange: true)!
        let portable = LumaBlockAverage(sourceWidth: w, sourceHeight: h, width: pw, height: ph, limitedRange: true,
                                        allowAVX2: false)!
        #expect(fast.sumsPairs == (fast.blockWidth % 2 == 0))
        #expect(fast.usesAVX2 == (fast.sumsPairs && LumaBlockAverage.cpuHasAVX2))
        #expect(!portable.usesAVX2)
        let expected = run(portable, plane, stride: stride)
        #expect(run(fast, plane, stride: stride) == expected)
        #expect(runInBands(fast, plane, stride: stride, bandSizes: [16]) == expected)
        #expect(runInBands(portable, plane, stride: stride, bandSizes: [5, 11]) == expected)
        // Every plane pixel is the rounded, range-expanded mean of its own block (checked on a few).
        for (x, y) in [(0, 0), (pw - 1, ph - 1), (pw / 2, ph / 3)] {
            var total = 0
            for r in 0..<fast.blockHeight {
                for c in 0..<fast.blockWidth { total += Int(plane[(y * fast.blockHeight + r) * stride + x * fast.blockWidth + c]) }
            }
            let n = Double(fast.blockWidth * fast.blockHeight)
            let level = min(255, max(0, ((Double(total) / n - 16) * 255 / 219).rounded()))
            #expect(abs(Int(expected[y * pw + x]) - Int(level)) <= 1)
        }
    }

    /// Each plane pixel is the rounded mean of its own block only, read through a stride wider than the picture.
    @Test func blocksAreAveragedSeparatelyThroughAStride() {
        let (w, h, stride) = (6, 4, 8)  // 3×2 blocks of 2×2 pixels; 2 bytes of padding per row hold 255
        var plane = [UInt8](repeating: 255, count: stride * h)
        for y in 0..<h { for x in 0..<w { plane[y * stride + x] = UInt8(10 * (y / 2 * 3 + x / 2) + (x + y) % 2) } }
        let average = LumaBlockAverage(sourceWidth: w, sourceHeight: h, width: 3, height: 2, limitedRange: false)!
        // Every block holds two pixels of v and two of v + 1: the mean v + 0.5 rounds up.
        #expect(run(average, plane, stride: stride) == [1, 11, 21, 31, 41, 51])
    }

    /// Rows added band by band, in any band sizes (a decoder's 16- or 32-row bands against 12-row blocks, single rows,
    /// bands that overrun the picture), give exactly the plane of the whole picture.
    @Test(arguments: [[16], [32], [1], [5, 7], [13], [12], [1088]])
    func bandsAddUpToTheWholePicture(bandSizes: [Int]) {
        let (w, h, stride) = (192, 108, 200)  // 12 × 12 blocks of a 16 × 9 plane
        var state: UInt32 = 12345
        let plane = (0..<(stride * h)).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        for allowAVX2 in [true, false] {
            let average = LumaBlockAverage(sourceWidth: w, sourceHeight: h, width: 16, height: 9, limitedRange: true,
                                           allowAVX2: allowAVX2)!
            #expect(runInBands(average, plane, stride: stride, bandSizes: bandSizes) == run(average, plane, stride: stride))
        }
    }

    private func runInBands(_ average: LumaBlockAverage, _ plane: [UInt8], stride: Int, bandSizes: [Int]) -> [UInt8] {
        var banded = [UInt8](repeating: 0, count: average.width * average.height)
        var totals = [UInt16](repeating: 0, count: average.sourceWidth)
        var row = 0, band = 0
        plane.withUnsafeBufferPointer { p in
            banded.withUnsafeMutableBufferPointer { o in
                totals.withUnsafeMutableBufferPointer { t in
                    while row < average.sourceHeight {
                        let count = bandSizes[band % bandSizes.count]
                        average.addRows(p.baseAddress! + row * stride, stride: stride, first: row, count: count,
                                        into: o.baseAddress!, columnTotals: t.baseAddress!)
                        row += count
                        band += 1
                    }
                }
            }
        }
        return banded
    }

    private func run(_ average: LumaBlockAverage, _ plane: [UInt8], stride: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: average.width * average.height)
        var totals = [UInt16](repeating: 0, count: average.sourceWidth)
        plane.withUnsafeBufferPointer { p in
            output.withUnsafeMutableBufferPointer { o in
                totals.withUnsafeMutableBufferPointer { average.average(p.baseAddress!, stride: stride, into: o.baseAddress!,
                                                                         columnTotals: $0.baseAddress!) }
            }
        }
        return output
    }
}

/// The detector's non-trapping float → level conversion is `UInt8(_:)` exactly, around every whole and half level.
@Suite struct TruncatedLevelTests {
    @Test func equalsTruncatingConversion() {
        var values: [Float] = (0...261_632).map { Float($0) / 1024 }  // every 1/1024 of 0…255.5
        for level in 0...255 {
            for v in [Float(level), Float(level) + 0.5] { values += [v.nextDown, v, v.nextUp] }
        }
        for v in values where v >= 0 && v <= 255.5 {
            let expected = v <= 255 ? UInt8(v) : 255
            guard MotionDetector.truncatedLevel(v) == expected else {
                Issue.record("truncatedLevel(\(v)) = \(MotionDetector.truncatedLevel(v)), expected \(expected)")
                return
            }
        }
    }
}

/// The detector's four-way histograms count exactly what one counter per bin counts, at every length (the tail that
/// is not a multiple of four included).
@Suite struct SplitHistogramTests {
    @Test(arguments: [0, 1, 3, 4, 7, 14_400, 14_403])
    func countsEveryValueOnce(length: Int) {
        var state: UInt32 = 7
        let values = (0..<length).map { _ -> UInt8 in
            state = state &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: state >> 16) % 9  // few bins: neighbours collide, as in a residual
        }
        let others = values.reversed().map { $0 &* 3 }
        var expected = [Int](repeating: 0, count: 256), histogram = expected
        for v in values { expected[Int(v)] += 1 }
        values.withUnsafeBufferPointer { MotionDetector.count($0, into: &histogram) { Int($0) } }
        #expect(histogram == expected)
        var expectedPairs = [Int](repeating: 0, count: 511), pairs = expectedPairs
        for (a, b) in zip(values, others) { expectedPairs[Int(a) - Int(b) + 255] += 1 }
        values.withUnsafeBufferPointer { a in
            others.withUnsafeBufferPointer { b in MotionDetector.count(pairs: a, b, into: &pairs) { Int($0) - Int($1) + 255 } }
        }
        #expect(pairs == expectedPairs)
    }
}
