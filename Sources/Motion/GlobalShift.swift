/// How far the whole picture moved against the background, in analysis pixels: the frame shows the background
/// shifted by (`dx`, `dy`), i.e. frame(x, y) ≈ background(x − dx, y − dy).
///
/// Why: a camera on a pole or a wall shakes in the wind, and at 160×90 a shake of a few source pixels moves every
/// textured edge by a fraction of an analysis pixel — a change along every edge of the picture at once, with no
/// person in it. Measuring that shift and comparing against the frame brought back into the background's place
/// removes it; what still differs then is the scene, not the camera.
public struct GlobalShift: Sendable, Hashable {
    public var dx: Double
    public var dy: Double

    public init(dx: Double, dy: Double) {
        self.dx = dx
        self.dy = dy
    }

    public static let zero = GlobalShift(dx: 0, dy: 0)

    public var magnitude: Double { (dx * dx + dy * dy).squareRoot() }
}

/// Estimates a ``GlobalShift`` between a frame and the background (pure arithmetic on the small analysis plane).
///
/// Two stages: (1) a whole-pixel search of the column and row profiles' slopes within `maxShift` (profiles are sums
/// over a whole row or column, so a person covering a few percent of the picture barely moves them, and slopes ignore
/// a brightness offset); (2) a few Lucas–Kanade steps for the sub-pixel part on the whole plane: the background is
/// resampled at the current estimate and the least-squares step along its gradients taken, pixels whose difference
/// is far beyond the typical one (a moving object, a lamp spot) left out.
public struct GlobalShiftEstimator: Sendable {
    public let width: Int
    public let height: Int
    /// The largest shift measured, in analysis pixels; beyond it the camera moved rather than shook.
    public let maxShift: Int
    private var warped: [Float]

    /// What ``estimate(frame:background:)`` found.
    public struct Estimate: Sendable, Hashable {
        public var shift: GlobalShift
        /// The picture has enough texture in both directions and the steps settled within `maxShift`: the shift is
        /// trustworthy (zero when no shift explains the picture better than none). When false, `shift` is zero.
        public var reliable: Bool
        /// The whole-pixel search ended at its limit: the picture moved by `maxShift` or more (camera moved).
        public var atLimit: Bool
    }

    public init(width: Int, height: Int, maxShift: Int = 3) {
        self.width = width
        self.height = height
        self.maxShift = maxShift
        warped = [Float](repeating: 0, count: width * height)
    }

    public mutating func estimate(frame: [UInt8], background: [Float]) -> Estimate {
        let margin = maxShift + 2
        guard width > 2 * margin + 8, height > 2 * margin + 8, frame.count == width * height, background.count == frame.count
        else { return Estimate(shift: .zero, reliable: false, atLimit: false) }
        let (sx, limitX) = Self.profileShift(frame: frame, background: background, count: width, stride: 1, across: height,
                                              acrossStride: width, maxShift: maxShift)
        let (sy, limitY) = Self.profileShift(frame: frame, background: background, count: height, stride: width, across: width,
                                              acrossStride: 1, maxShift: maxShift)
        var dx = Double(sx), dy = Double(sy)
        var settled = false
        for _ in 0..<5 {
            guard let step = lucasKanadeStep(frame: frame, background: background, dx: dx, dy: dy, margin: margin) else {
                return Estimate(shift: .zero, reliable: false, atLimit: limitX || limitY)
            }
            dx += step.dx
            dy += step.dy
            if abs(dx) > Double(maxShift) || abs(dy) > Double(maxShift) {
                return Estimate(shift: .zero, reliable: false, atLimit: true)
            }
            if step.magnitude < 0.01 {
                settled = true
                break
            }
        }
        // Five steps that still move by hundredths of a pixel are as good as settled for a residual.
        _ = settled
        // A shift must explain the picture: brought back by it, the frame is clearly closer to the background than
        // as it is. A light sweeping a wall or a large object drags the steps a little without any shake; that
        // shift explains nothing and is not used.
        let moved = difference(frame: frame, background: background, dx: dx, dy: dy, margin: margin)
        let still = difference(frame: frame, background: background, dx: 0, dy: 0, margin: margin)
        // At the limit: the steps settled at the edge of the range, where the true shift may lie beyond it.
        let atLimit = Swift.max(abs(dx), abs(dy)) > Double(maxShift) - 0.25
        // The smaller the shift, the less it can improve: a tenth of a pixel explains only a little of an edge.
        let required = 1 - (1 - explainedFraction) * Swift.min(1, (dx * dx + dy * dy).squareRoot())
        guard moved < required * still else { return Estimate(shift: .zero, reliable: true, atLimit: atLimit) }
        return Estimate(shift: GlobalShift(dx: dx, dy: dy), reliable: true, atLimit: atLimit)
    }

    /// The whole-pixel shift within `range` (both axes) that best lines up the frame's row and column profiles with
    /// the background's: a cheap look further than shake, for telling a camera that was moved from a light change.
    public func coarseShift(frame: [UInt8], background: [Float], range: Int) -> (dx: Int, dy: Int) {
        guard width > 2 * range + 4, height > 2 * range + 4, frame.count == width * height, background.count == frame.count
        else { return (0, 0) }
        let (dx, _) = Self.profileShift(frame: frame, background: background, count: width, stride: 1, across: height,
                                         acrossStride: width, maxShift: range)
        let (dy, _) = Self.profileShift(frame: frame, background: background, count: height, stride: width, across: width,
                                         acrossStride: 1, maxShift: range)
        return (dx, dy)
    }

    /// The whole-pixel shift along one axis that best matches the slopes of the frame's and the background's
    /// profiles (sums across the other axis), and whether it is at the search's limit.
    static func profileShift(frame: [UInt8], background: [Float], count: Int, stride: Int, across: Int, acrossStride: Int,
                             maxShift: Int) -> (Int, Bool) {
        var frameProfile = [Float](repeating: 0, count: count), backgroundProfile = frameProfile
        for i in 0..<count {
            var f: Float = 0, b: Float = 0
            for j in 0..<across {
                let index = i * stride + j * acrossStride
                f += Float(frame[index])
                b += background[index]
            }
            frameProfile[i] = f
            backgroundProfile[i] = b
        }
        let frameSlope = (0..<(count - 1)).map { frameProfile[$0 + 1] - frameProfile[$0] }
        let backgroundSlope = (0..<(count - 1)).map { backgroundProfile[$0 + 1] - backgroundProfile[$0] }
        // frame(x) ≈ background(x − shift): compare over the columns both cover, the same number for every shift.
        func cost(_ shift: Int) -> Float {
            var total: Float = 0
            for x in maxShift..<(count - 1 - maxShift) { total += abs(frameSlope[x] - backgroundSlope[x - shift]) }
            return total
        }
        // The cheapest shift; the smaller one of two within a thousandth (a flat picture stays at 0).
        var best = 0, bestCost = cost(0)
        for shift in (1...maxShift).flatMap({ [$0, -$0] }) {
            let c = cost(shift)
            if c < bestCost * (1 - 1e-3) {
                bestCost = c
                best = shift
            }
        }
        return (best, abs(best) == maxShift)
    }

    /// How much closer to the background a frame shifted by a pixel or more must be than the frame as it is for the
    /// shift to count (a smaller shift, proportionally less).
    public var explainedFraction = 0.8

    /// The mean absolute difference between the frame and the background resampled at (dx, dy), each pixel's
    /// difference capped at 24 levels so a moving object weighs no more than a shaken edge.
    private mutating func difference(frame: [UInt8], background: [Float], dx: Double, dy: Double, margin: Int) -> Double {
        warp(background, dx: dx, dy: dy, margin: margin)
        let residual = residual(frame: frame, margin: margin, cap: 24)
        return Double(residual.absoluteSum / residual.count)
    }

    /// Frame against `warped` over the interior: the mean level difference (an overall brightness change is not a
    /// shift), and the sum of the absolute differences left after it, each pixel's capped at `cap`, over `count` pixels.
    private func residual(frame: [UInt8], margin: Int, cap: Float) -> (level: Float, absoluteSum: Float, count: Float) {
        let w = width, h = height
        var frameSum: Float = 0, warpedSum: Float = 0, n: Float = 0
        for y in margin..<(h - margin) {
            for x in margin..<(w - margin) {
                frameSum += Float(frame[y * w + x])
                warpedSum += warped[y * w + x]
                n += 1
            }
        }
        let level = (frameSum - warpedSum) / n
        var total: Float = 0
        for y in margin..<(h - margin) {
            for x in margin..<(w - margin) { total += Swift.min(abs(Float(frame[y * w + x]) - warped[y * w + x] - level), cap) }
        }
        return (level, total, n)
    }

    /// `warped(x) = background(x − d)`, bilinear, over the interior and one pixel more.
    private mutating func warp(_ background: [Float], dx: Double, dy: Double, margin: Int) {
        let w = width, h = height
        let fx = Float(dx).rounded(.down), fy = Float(dy).rounded(.down)
        let ax = Float(dx) - fx, ay = Float(dy) - fy
        let ix = Int(fx), iy = Int(fy)
        background.withUnsafeBufferPointer { b in
            warped.withUnsafeMutableBufferPointer { out in
                for y in (margin - 1)..<(h - margin + 1) {
                    // Source rows y − iy − 1 and y − iy: x − d lies between them, (1 − ay) of the way from the lower.
                    let upper = (y - iy - 1) * w, lower = (y - iy) * w
                    for x in (margin - 1)..<(w - margin + 1) {
                        let left = x - ix - 1, right = x - ix
                        let top = b[upper + left] * ax + b[upper + right] * (1 - ax)
                        let bottom = b[lower + left] * ax + b[lower + right] * (1 - ax)
                        out[y * w + x] = top * ay + bottom * (1 - ay)
                    }
                }
            }
        }
    }

    /// One least-squares step δ with frame(x) ≈ background(x − d − δ), over the interior; nil where the picture has
    /// too little texture in some direction to tell.
    private mutating func lucasKanadeStep(frame: [UInt8], background: [Float], dx: Double, dy: Double, margin: Int)
        -> GlobalShift?
    {
        let w = width, h = height
        warp(background, dx: dx, dy: dy, margin: margin)
        // Mean levels (an overall brightness change is not a shift) and the typical difference, for the outlier cut.
        let (levelDifference, absoluteSum, n) = residual(frame: frame, margin: margin, cap: .infinity)
        let cut = Swift.max(3 * absoluteSum / n, 6)
        var a: Float = 0, b: Float = 0, c: Float = 0, ex: Float = 0, ey: Float = 0
        warped.withUnsafeBufferPointer { warped in
            for y in margin..<(h - margin) {
                for x in margin..<(w - margin) {
                    let i = y * w + x
                    let e = Float(frame[i]) - warped[i] - levelDifference
                    guard abs(e) <= cut else { continue }
                    let gx = (warped[i + 1] - warped[i - 1]) / 2, gy = (warped[i + w] - warped[i - w]) / 2
                    a += gx * gx
                    b += gx * gy
                    c += gy * gy
                    ex += gx * e
                    ey += gy * e
                }
            }
        }
        // Texture in both directions: the smaller eigenvalue of the gradient matrix, per pixel, above a level step's.
        let trace = a + c, determinant = a * c - b * b
        let smallest = trace / 2 - ((trace * trace / 4 - determinant).squareRoot())
        guard smallest / n > 0.25, determinant > 0 else { return nil }
        // δ = −(Σ g gᵀ)⁻¹ Σ g e.
        return GlobalShift(dx: Double(-(c * ex - b * ey) / determinant), dy: Double(-(a * ey - b * ex) / determinant))
    }

    /// The frame brought into the background's place: aligned(x) = frame(x + d), bilinear, coordinates clamped to
    /// the picture (the rim the shift uncovers repeats the edge).
    public static func align(_ frame: [UInt8], width: Int, height: Int, by shift: GlobalShift, into aligned: inout [UInt8]) {
        let fx = Float(shift.dx).rounded(.down), fy = Float(shift.dy).rounded(.down)
        let ax = Float(shift.dx) - fx, ay = Float(shift.dy) - fy
        let ix = Int(fx), iy = Int(fy)
        frame.withUnsafeBufferPointer { f in
            aligned.withUnsafeMutableBufferPointer { out in
                for y in 0..<height {
                    let y0 = Swift.min(Swift.max(y + iy, 0), height - 1), y1 = Swift.min(Swift.max(y + iy + 1, 0), height - 1)
                    for x in 0..<width {
                        let x0 = Swift.min(Swift.max(x + ix, 0), width - 1), x1 = Swift.min(Swift.max(x + ix + 1, 0), width - 1)
                        let top = Float(f[y0 * width + x0]) * (1 - ax) + Float(f[y0 * width + x1]) * ax
                        let bottom = Float(f[y1 * width + x0]) * (1 - ax) + Float(f[y1 * width + x1]) * ax
                        out[y * width + x] = UInt8(Swift.min(Swift.max((top * (1 - ay) + bottom * ay).rounded(), 0), 255))
                    }
                }
            }
        }
    }
}
