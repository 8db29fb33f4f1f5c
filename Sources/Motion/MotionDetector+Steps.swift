import CLumaKernels
import Domain
import Foundation  // exp() for time constants; nothing in the per-pixel loops

// The steps of `analyseNow`, in the order it runs them (see `MotionDetector`).
extension MotionDetector {
    func quietResult(time: Double, isKeyframe: Bool, gain: Double, offset: Double, recalibrated: Bool = true) -> MotionFrameResult {
        var zones: [ZoneID: RegionMotion] = [:]
        for id in zoneIDs { zones[id] = .still }
        return MotionFrameResult(
            time: time, isKeyframe: isKeyframe, anywhere: .still, outsideZones: .still, zones: zones, movedZones: [],
            movedOutsideZones: false, hasMotion: false, recalibrated: recalibrated, noiseSigma: noiseSigma, gain: gain, offset: offset)
    }

    /// Gain and offset mapping the background onto the frame, from the median difference in the darker and the
    /// brighter half of the background (gain 1 when the background has too little contrast to tell). Medians ignore whatever a moving object covers (up to half of each half).
    mutating func photometricFit(_ pixels: [UInt8]) -> (gain: Double, offset: Double) {
        var backgroundHistogram = [Int](repeating: 0, count: 256)
        // Differences f − b + 255 of the dark half in 0..<511, of the bright half in 511..<1022; bin 1022 collects
        // the clipped pixels, which are left out.
        var differences = [Int](repeating: 0, count: 1023)
        var darkSum = 0, brightSum = 0
        // The background rounded to whole levels (it stays within 0…255), once for both histograms.
        background.withUnsafeBufferPointer { model in
            roundedBackground.withUnsafeMutableBufferPointer { rounded in
                for i in 0..<model.count { rounded[i] = Self.truncatedLevel(model[i] + 0.5) }
            }
        }
        roundedBackground.withUnsafeBufferPointer { Self.count($0, into: &backgroundHistogram) { Int($0) } }
        let split = Self.median(backgroundHistogram)
        pixels.withUnsafeBufferPointer { frame in
            roundedBackground.withUnsafeBufferPointer { model in
                Self.count(pairs: frame, model, into: &differences) { f, b in
                    let f = Int(f), b = Int(b)
                    // Clipped pixels cannot follow a gain change; leave them out of the fit.
                    guard f > 3, f < 252, b > 3, b < 252 else { return 1022 }
                    return b < split ? f &- b &+ 255 : f &- b &+ 766
                }
                // The sums of each half's background levels, in a loop of their own (it vectorises).
                for i in 0..<frame.count {
                    let f = frame[i], b = model[i]
                    let used = f > 3 && f < 252 && b > 3 && b < 252
                    let level = used ? Int(b) : 0
                    if b < split { darkSum &+= level } else { brightSum &+= level }
                }
            }
        }
        differences.removeLast()
        let darkDifferences = Array(differences[0..<511]), brightDifferences = Array(differences[511...])
        let darkCount = darkDifferences.reduce(0, +), brightCount = brightDifferences.reduce(0, +)
        let minimum = pixels.count / 20
        if darkCount < minimum || brightCount < minimum {
            let all = zip(darkDifferences, brightDifferences).map { $0 + $1 }
            return (1, all.reduce(0, +) > 0 ? Double(Self.median(all) - 255) : 0)
        }
        let darkMean = Double(darkSum) / Double(darkCount), brightMean = Double(brightSum) / Double(brightCount)
        let darkOffset = Double(Self.median(darkDifferences) - 255), brightOffset = Double(Self.median(brightDifferences) - 255)
        guard brightMean - darkMean >= 16 else { return (1, (darkOffset + brightOffset) / 2) }
        let gain = 1 + (brightOffset - darkOffset) / (brightMean - darkMean)
        return (gain, darkOffset - (gain - 1) * darkMean)
    }

    /// |frame − (gain × background + offset)| per pixel into `residual`; returns the frame's robust noise sigma.
    /// Median of `a[i] − b[i]` over all pixels.
    static func medianDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var histogram = [Int](repeating: 0, count: 511)
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in count(pairs: a, b, into: &histogram) { Int($0) &- Int($1) &+ 255 } }
        }
        var seen = 0
        for (index, count) in histogram.enumerated() {
            seen += count
            if seen * 2 >= a.count { return index - 255 }
        }
        return 0
    }

    /// The newest remembered picture at least `motionWindow` old (or the oldest one early on).
    func shortTermReference(before time: Double) -> [UInt8]? {
        recent.last { time - $0.time >= configuration.motionWindow - 0.001 }?.pixels ?? recent.first?.pixels
    }

    mutating func remember(_ pixels: [UInt8], at time: Double) {
        if let last = recent.last, time < last.time { recent.removeAll() }  // time went backwards: a new stream
        recent.append((time, pixels))
        // Keep exactly one picture older than the window, the reference of the next frames.
        while recent.count > 2 && time - recent[1].time >= configuration.motionWindow { recent.removeFirst() }
    }

    mutating func computeResidual(_ pixels: [UInt8], gain: Double, offset: Double, reference: [UInt8]?,
                                          shift: GlobalShift) -> Double {
        let shifted = shift != .zero
        if shifted { shiftTolerantBackground(shift) }
        var counts = [Int](repeating: 0, count: 256)
        let g = Float(gain), o = Float(offset)
        let reference = reference ?? pixels
        let gated = recent.count > 1
        // The background follows a lamp switch within a frame; the reference picture does not. Level it with its
        // own robust offset (median of frame − reference) so a switch inside the window does not hide motion.
        let referenceOffset = gated ? Float(Self.medianDifference(pixels, reference)) : 0
        pixels.withUnsafeBufferPointer { frame in
            background.withUnsafeBufferPointer { model in
                reference.withUnsafeBufferPointer { previous in
                    residual.withUnsafeMutableBufferPointer { out in
                        rawResidual.withUnsafeMutableBufferPointer { raw in
                            for i in 0..<frame.count {
                                let value: Float
                                if shifted {
                                    // The frame against the range of the background cell its pixel came from.
                                    let a = Swift.min(Swift.max(lowBackground[i] * g + o, 0), 255)
                                    let b = Swift.min(Swift.max(highBackground[i] * g + o, 0), 255)
                                    let f = Float(frame[i])
                                    value = Swift.min(Swift.max(Swift.max(f - Swift.max(a, b), Swift.min(a, b) - f), 0), 255)
                                } else {
                                    let predicted = Swift.min(Swift.max(model[i] * g + o, 0), 255)
                                    value = Swift.min(abs(Float(frame[i]) - predicted), 255)
                                }
                                raw[i] = Self.truncatedLevel(value)
                                // Moving now, not merely different from the background. The reference is compensated
                                // like the background: both predate a lamp switch the fit has just measured.
                                let recent = Swift.min(Swift.max(Float(previous[i]) + referenceOffset, 0), 255)
                                out[i] = Self.truncatedLevel(gated ? Swift.min(value, abs(Float(frame[i]) - recent)) : value)
                            }
                            // A loop of its own: the scattered increments would keep the arithmetic above from
                            // being vectorised.
                            Self.count(UnsafeBufferPointer(raw), into: &counts) { Int($0) }
                        }
                    }
                }
            }
        }
        // MAD: for Gaussian noise the median of |r| is 0.674 σ. The +0.5 undoes the truncation to whole levels.
        return (Double(Self.median(counts)) + 0.5) * 1.4826
    }

    /// `lowBackground` and `highBackground` = the darkest and brightest of the four background pixels around where
    /// each frame pixel was before the shake moved it (x − shift). Why a range and not the resampled level: the
    /// background is sharp and a shake of a fraction of a pixel makes a frame pixel any mix of the pixels around it;
    /// a level inside their range is the shake, one outside it is the scene changing.
    mutating func shiftTolerantBackground(_ shift: GlobalShift) {
        let w = width, h = height
        let ix = Int(Float(shift.dx).rounded(.down)), iy = Int(Float(shift.dy).rounded(.down))
        background.withUnsafeBufferPointer { model in
            lowBackground.withUnsafeMutableBufferPointer { low in
                highBackground.withUnsafeMutableBufferPointer { high in
                    for y in 0..<h {
                        let y0 = Swift.min(Swift.max(y - iy - 1, 0), h - 1), y1 = Swift.min(Swift.max(y - iy, 0), h - 1)
                        for x in 0..<w {
                            let x0 = Swift.min(Swift.max(x - ix - 1, 0), w - 1), x1 = Swift.min(Swift.max(x - ix, 0), w - 1)
                            let a = model[y0 * w + x0], b = model[y0 * w + x1], c = model[y1 * w + x0], d = model[y1 * w + x1]
                            let lowest = Swift.min(Swift.min(a, b), Swift.min(c, d))
                            let highest = Swift.max(Swift.max(a, b), Swift.max(c, d))
                            // Scaling and compression do not mix the neighbours exactly: a fifth of the cell's
                            // contrast either side covers what they add at an edge.
                            let slack = (highest - lowest) * Self.shiftSlack
                            low[y * w + x] = lowest - slack
                            high[y * w + x] = highest + slack
                        }
                    }
                }
            }
        }
    }

    /// Grey-level opening with a 2×2 square: erosion (min of the 2×2 block to the lower right) then dilation
    /// (max of the block to the upper left). A pixel survives only as part of a changed 2×2 block.
    mutating func openResidual() {
        let w = width, h = height
        // Row pointers and whole-row loops without per-pixel edge tests or overflow checks: the compiler vectorises
        // them.
        residual.withUnsafeBufferPointer { r in
            eroded.withUnsafeMutableBufferPointer { e in
                let r = r.baseAddress!, e = e.baseAddress!
                for y in 0..<(h - 1) {
                    let top = r + y * w, below = top + w, out = e + y * w
                    for x in 0..<(w - 1) {
                        out[x] = Swift.min(Swift.min(top[x], top[x &+ 1]), Swift.min(below[x], below[x &+ 1]))
                    }
                    out[w - 1] = 0
                }
                (e + (h - 1) * w).update(repeating: 0, count: w)
            }
        }
        eroded.withUnsafeBufferPointer { e in
            opened.withUnsafeMutableBufferPointer { o in
                let e = e.baseAddress!, o = o.baseAddress!
                o[0] = e[0]
                for x in 1..<w { o[x] = Swift.max(e[x], e[x &- 1]) }
                for y in 1..<h {
                    let row = e + y * w, above = row - w, out = o + y * w
                    out[0] = Swift.max(row[0], above[0])
                    for x in 1..<w {
                        out[x] = Swift.max(Swift.max(row[x], row[x &- 1]), Swift.max(above[x], above[x &- 1]))
                    }
                }
            }
        }
    }

    /// How far beyond the range of a shaken pixel's background cell (a fraction of its contrast) still counts as
    /// the shake.
    static let shiftSlack: Float = 0.2

    /// Keeps each pixel's largest opened residual while warming up.
    mutating func notePeaks() {
        opened.withUnsafeBufferPointer { o in
            warmUpPeak.withUnsafeMutableBufferPointer { p in
                for i in 0..<o.count { p[i] = Swift.max(p[i], o[i]) }
            }
        }
    }

    /// The warm-up ends: each pixel's activity covers at least the largest change it showed while warming up, so a
    /// change the warm-up already saw (a shaken edge, a tree in wind, a light that flickers) cannot count as motion
    /// on the first report — the warm-up never ends in a trigger by construction. The activity then relaxes as
    /// usual (`activityFallTime`), so a pixel a person happened to cross during the warm-up is back in seconds.
    mutating func foldWarmUpPeaks() {
        warmUpFolded = true
        let factor = Float(configuration.activityFactor)
        warmUpPeak.withUnsafeBufferPointer { p in
            activity.withUnsafeMutableBufferPointer { a in
                for i in 0..<p.count { a[i] = Swift.max(a[i], Float(p[i]) / factor) }
            }
        }
    }

    /// Moves each pixel's activity towards its flicker, the change since the previous analysed picture: up with
    /// `activityRiseTime`, down with `activityFallTime`. Swaying leaves, rain and a shaken edge flicker from picture to
    /// picture and raise it within seconds; a person passes a pixel in a fraction of a second and barely raises it;
    /// a slow mover changes a pixel a little at a time (its difference from the background is large, its flicker is
    /// not), so creeping into view never teaches the detector to ignore it.
    mutating func updateActivity(_ pixels: [UInt8], previous: [UInt8]?, elapsed: Double, learning: Bool) {
        guard let previous, previous.count == pixels.count else { return }
        // While warming up every pixel takes the mean of its flicker so far: what sways keeps being ignored from the
        // first report on.
        if learning { learnedPictures += 1 }
        let rise = learning ? 1 / Float(learnedPictures) : Float(1 - exp(-elapsed / configuration.activityRiseTime))
        let fall = learning ? rise : Float(1 - exp(-elapsed / configuration.activityFallTime))
        // A lamp or exposure step between the two pictures is not flicker.
        let offset = Float(Self.medianDifference(pixels, previous))
        pixels.withUnsafeBufferPointer { f in
            previous.withUnsafeBufferPointer { p in
                activity.withUnsafeMutableBufferPointer { a in
                    pushav_motion_follow_flicker(f.baseAddress!, p.baseAddress!, offset, rise, fall, Int32(f.count), a.baseAddress!)
                }
            }
        }
    }

    /// A change that covers more than `globalChangeFraction` of the frame, or a third of it spread over at least
    /// 12 of the 16 cells of a 4×4 grid (an IR switch changes everything a little; an object near the lens
    /// changes one area a lot).
    func isGlobalChange(threshold: Double) -> Bool {
        let w = width, h = height
        let limit = UInt8(Swift.min(threshold.rounded(.down), 255))  // value > threshold ⇔ value > ⌊threshold⌋
        var cellChanged = [Int](repeating: 0, count: 16)
        var changed = 0
        // Column x lies in cell column x · 4 / w: cell column c spans the columns from ⌈c · w / 4⌉ on.
        let columnStarts = (0...4).map { ($0 * w + 3) / 4 }
        rawResidual.withUnsafeBufferPointer { o in
            for y in 0..<h {
                let cellRow = (y * 4 / h) * 4
                let row = o.baseAddress! + y * w
                for c in 0..<4 {
                    // A count of comparisons over a run of columns: it vectorises, a branch per pixel does not.
                    var count = 0
                    for x in columnStarts[c]..<columnStarts[c + 1] { count &+= row[x] > limit ? 1 : 0 }
                    cellChanged[cellRow + c] &+= count
                    changed &+= count
                }
            }
        }
        let total = Double(w * h)
        if Double(changed) > configuration.globalChangeFraction * total { return true }
        guard Double(changed) > total / 3 else { return false }
        let cellArea = total / 16
        return cellChanged.filter { Double($0) > 0.15 * cellArea }.count >= 12
    }

    /// Moves the background towards the frame after applying the global correction, per pixel at the unchanged or
    /// the changed rate.
    mutating func updateBackground(
        _ pixels: [UInt8], gain: Double, offset: Double, changeThreshold: Double, elapsed: Double, time: Double, isKeyframe: Bool
    ) {
        // Right after a reset the background is one noisy frame and may hold ghosts: converge four times faster.
        let recalibrating = time < recalibratingUntil
        let unchangedConstant = configuration.backgroundTimeConstant / (recalibrating ? 4 : 1)
        let foregroundConstant = recalibrating ? configuration.backgroundTimeConstant : configuration.foregroundTimeConstant
        // A keyframe among analysed non-keyframes may carry the encoder's quality pulse: let it count less.
        let weight = isKeyframe && !lastAnalysedWasKeyframe ? 0.25 : 1.0
        let unchangedRate = Float(weight * (1 - exp(-elapsed / unchangedConstant)))
        let changedRate = Float(weight * (1 - exp(-elapsed / foregroundConstant)))
        let g = Float(gain), o = Float(offset), threshold = Float(changeThreshold)
        pixels.withUnsafeBufferPointer { frame in
            background.withUnsafeMutableBufferPointer { model in
                for i in 0..<frame.count {
                    let predicted = Swift.min(Swift.max(model[i] * g + o, 0), 255)
                    let difference = Float(frame[i]) - predicted
                    let rate = abs(difference) > threshold ? changedRate : unchangedRate
                    model[i] = predicted + rate * difference
                }
            }
        }
    }

    /// Adds one to `histogram[bin(value)]` for every value (``count(pairs:_:into:bin:)`` over the values alone).
    @inline(__always)
    static func count(_ values: UnsafeBufferPointer<UInt8>, into histogram: inout [Int], bin: (UInt8) -> Int) {
        count(pairs: values, values, into: &histogram) { value, _ in bin(value) }
    }

    /// Adds one to `histogram[bin(a[i], b[i])]` for every index of `a` and `b` (same length). Four partial histograms,
    /// one per position modulo 4: most values of a residual fall into a few bins, and consecutive increments of one
    /// counter wait on each other (store-to-load forwarding) where four independent ones do not.
    @inline(__always)
    static func count(
        pairs a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, into histogram: inout [Int],
        bin: (UInt8, UInt8) -> Int
    ) {
        let bins = histogram.count
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 4 * bins) { partial in
            let p = partial.baseAddress!
            p.initialize(repeating: 0, count: 4 * bins)
            let (p0, p1, p2, p3) = (p, p + bins, p + 2 * bins, p + 3 * bins)
            let n = Swift.min(a.count, b.count), x = a.baseAddress!, y = b.baseAddress!
            var i = 0
            while i &+ 4 <= n {
                p0[bin(x[i], y[i])] &+= 1
                p1[bin(x[i &+ 1], y[i &+ 1])] &+= 1
                p2[bin(x[i &+ 2], y[i &+ 2])] &+= 1
                p3[bin(x[i &+ 3], y[i &+ 3])] &+= 1
                i &+= 4
            }
            while i < n {
                p0[bin(x[i], y[i])] &+= 1
                i &+= 1
            }
            for k in 0..<bins { histogram[k] &+= Int(p0[k] &+ p1[k] &+ p2[k] &+ p3[k]) }
        }
    }

    /// `UInt8(value)` for a value in 0…255.5 (truncation toward zero; 255.5 gives 255), without the trapping
    /// conversion: the loops that use it are vectorised. Adding 2²³ leaves round-to-nearest(value) in the low bits
    /// of the sum; one less where that rounded up.
    @inline(__always)
    static func truncatedLevel(_ value: Float) -> UInt8 {
        let shifted = value + 8_388_608
        return UInt8(truncatingIfNeeded: shifted.bitPattern) &- (shifted - 8_388_608 > value ? 1 : 0)
    }

    /// The median bin of a histogram.
    static func median(_ histogram: [Int]) -> Int {
        let total = histogram.reduce(0, +)
        var seen = 0
        for (bin, count) in histogram.enumerated() {
            seen += count
            if seen * 2 >= total { return bin }
        }
        return histogram.count - 1
    }
}
