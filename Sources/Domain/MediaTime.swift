/// A point or span on a media timeline, held exactly as `value / timescale` seconds.
///
/// Media timestamps come in each stream's own time base (1/15360 for video, 1/48000 for audio, …). Comparing them
/// through `Double` loses frame accuracy over long recordings, so comparisons cross-multiply in 128-bit integers.
public struct MediaTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var value: Int64
    public var timescale: Int32

    public init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "timescale must be positive")
        self.value = value
        self.timescale = timescale
    }

    /// Whole or fractional seconds, rounded to the nearest microsecond.
    public init(seconds: Double) {
        self.init(value: Int64((seconds * 1_000_000).rounded()), timescale: 1_000_000)
    }

    public static func milliseconds(_ ms: Int64) -> MediaTime { MediaTime(value: ms, timescale: 1000) }
    public static func seconds(_ s: Int64) -> MediaTime { MediaTime(value: s, timescale: 1) }
    public static let zero = MediaTime(value: 0, timescale: 1)

    public var seconds: Double { Double(value) / Double(timescale) }

    /// This time in another timescale, rounded to the nearest tick (ties away from zero).
    public func converted(to newScale: Int32) -> MediaTime {
        if newScale == timescale { return self }
        let numerator = Int128(value) * Int128(newScale)
        let denominator = Int128(timescale)
        let half = denominator / 2
        let rounded = numerator >= 0 ? (numerator + half) / denominator : (numerator - half) / denominator
        return MediaTime(value: Int64(rounded), timescale: newScale)
    }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        Int128(lhs.value) * Int128(rhs.timescale) < Int128(rhs.value) * Int128(lhs.timescale)
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        Int128(lhs.value) * Int128(rhs.timescale) == Int128(rhs.value) * Int128(lhs.timescale)
    }

    public func hash(into hasher: inout Hasher) {
        // Equal times in different timescales must hash alike: hash the reduced fraction.
        let g = MediaTime.gcd(Swift.abs(value), Int64(timescale))
        hasher.combine(value / max(g, 1))
        hasher.combine(Int64(timescale) / max(g, 1))
    }

    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        if lhs.timescale == rhs.timescale { return MediaTime(value: lhs.value + rhs.value, timescale: lhs.timescale) }
        let scale = MediaTime.commonScale(lhs.timescale, rhs.timescale)
        return MediaTime(value: lhs.converted(to: scale).value + rhs.converted(to: scale).value, timescale: scale)
    }

    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        if lhs.timescale == rhs.timescale { return MediaTime(value: lhs.value - rhs.value, timescale: lhs.timescale) }
        let scale = MediaTime.commonScale(lhs.timescale, rhs.timescale)
        return MediaTime(value: lhs.converted(to: scale).value - rhs.converted(to: scale).value, timescale: scale)
    }

    public static prefix func - (time: MediaTime) -> MediaTime {
        MediaTime(value: -time.value, timescale: time.timescale)
    }

    public var description: String { "\(value)/\(timescale)s" }

    /// The least common multiple of two timescales when it fits in Int32 (so sums stay exact), else microseconds.
    package static func commonScale(_ a: Int32, _ b: Int32) -> Int32 {
        let l = Int64(a) / gcd(Int64(a), Int64(b)) * Int64(b)
        return l <= Int64(Int32.max) ? Int32(l) : 1_000_000
    }

    package static func gcd(_ a: Int64, _ b: Int64) -> Int64 {
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return x
    }
}
