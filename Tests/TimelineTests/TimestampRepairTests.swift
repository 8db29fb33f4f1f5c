import Testing
import TestSupport
@testable import Timeline

/// Timestamps of one stream at 100 ticks per second (maxGap 10 s = 1000 ticks), 25 fps: a frame every 4 ticks.
@Suite struct TimestampRepairTests {
    typealias Problem = TimestampRepair<Int>.Problem

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        /// (pts, dts) in decode order; nil = missing.
        var input: [(Int64?, Int64?)]
        /// (index of the input packet, pts, dts) of every packet passed on, in order.
        var output: [(Int, Int64, Int64)]
        var dropped: [Problem: Int] = [:]
        var repaired: [Problem: Int] = [:]
        var testDescription: String { name }
    }

    static func frames(_ dts: [Int64]) -> [(Int64?, Int64?)] { dts.map { ($0, $0) } }
    static func expected(_ pairs: [(Int, Int64)]) -> [(Int, Int64, Int64)] { pairs.map { ($0.0, $0.1, $0.1) } }

    static let cases: [Case] = [
        Case(name: "clean stream passes unchanged", input: frames([0, 4, 8, 12]),
             output: expected([(0, 0), (1, 4), (2, 8), (3, 12)])),
        Case(name: "B-frames (PTS ≠ DTS) pass unchanged",
             input: [(8, 0), (16, 4), (12, 8), (24, 12), (20, 16)],
             output: [(0, 8, 0), (1, 16, 4), (2, 12, 8), (3, 24, 12), (4, 20, 16)]),
        Case(name: "a duplicated packet (equal DTS) is dropped", input: frames([0, 4, 8, 8, 12]),
             output: expected([(0, 0), (1, 4), (2, 8), (4, 12)]), dropped: [.decodeTimeNotIncreasing: 1]),
        Case(name: "a duplicated run going back a little is dropped", input: frames([0, 4, 8, 12, 4, 8, 16]),
             output: expected([(0, 0), (1, 4), (2, 8), (3, 12), (6, 16)]), dropped: [.decodeTimeNotIncreasing: 2]),
        Case(name: "a forward outlier gets a DTS between its neighbours", input: frames([0, 4, 8, 5000, 12, 16]),
             output: expected([(0, 0), (1, 4), (2, 8), (3, 10), (4, 12), (5, 16)]), repaired: [.outlier: 1]),
        Case(name: "an outlier far back gets a DTS between its neighbours",
             input: frames([20000, 20004, 20008, 8, 20012, 20016]),
             output: expected([(0, 20000), (1, 20004), (2, 20008), (3, 20010), (4, 20012), (5, 20016)]),
             repaired: [.outlier: 1]),
        Case(name: "an outlier without room between its neighbours is dropped", input: frames([0, 4, 8, 5000, 9, 13]),
             output: expected([(0, 0), (1, 4), (2, 8), (4, 9), (5, 13)]), dropped: [.outlier: 1]),
        Case(name: "a timestamp reset continues after the last packet", input: frames([3000, 3004, 3008, 0, 4, 8]),
             output: expected([(0, 3000), (1, 3004), (2, 3008), (3, 3012), (4, 3016), (5, 3020)]),
             repaired: [.discontinuity: 1]),
        Case(name: "a hole longer than maxGap is closed", input: frames([0, 4, 8, 50000, 50004, 50008]),
             output: expected([(0, 0), (1, 4), (2, 8), (3, 12), (4, 16), (5, 20)]), repaired: [.discontinuity: 1]),
        Case(name: "a gap shorter than maxGap stays", input: frames([0, 4, 8, 500, 504]),
             output: expected([(0, 0), (1, 4), (2, 8), (3, 500), (4, 504)])),
        Case(name: "a packet without timestamps is placed one step on", input: [(0, 0), (4, 4), (nil, nil), (12, 12)],
             output: expected([(0, 0), (1, 4), (2, 8), (3, 12)]), repaired: [.missingTimestamp: 1]),
        Case(name: "a first packet without timestamps is dropped", input: [(nil, nil), (0, 0), (4, 4)],
             output: expected([(1, 0), (2, 4)]), dropped: [.missingTimestamp: 1]),
        Case(name: "a missing DTS is the PTS, a missing PTS the DTS", input: [(0, nil), (nil, 4), (8, 8)],
             output: expected([(0, 0), (1, 4), (2, 8)])),
        Case(name: "a PTS before its DTS becomes the DTS", input: [(0, 0), (2, 4), (8, 8)],
             output: [(0, 0, 0), (1, 4, 4), (2, 8, 8)], repaired: [.presentationTime: 1]),
        Case(name: "a PTS absurdly after its DTS becomes the DTS", input: [(0, 0), (900_000, 4), (8, 8)],
             output: [(0, 0, 0), (1, 4, 4), (2, 8, 8)], repaired: [.presentationTime: 1]),
        Case(name: "a first packet off the timeline is dropped", input: frames([90000, 0, 4, 8]),
             output: expected([(1, 0), (2, 4), (3, 8)]), dropped: [.decodeTimeNotIncreasing: 1]),
        Case(name: "an absurd first timestamp is moved to zero",
             input: frames([Int64.max / 2, Int64.max / 2 + 4, Int64.max / 2 + 8]),
             output: expected([(0, 0), (1, 4), (2, 8)]), repaired: [.discontinuity: 1]),
        Case(name: "an outlier as the last packet is put one step on", input: frames([0, 4, 8, 9000]),
             output: expected([(0, 0), (1, 4), (2, 8), (3, 12)]), repaired: [.outlier: 1]),
    ]

    @Test(arguments: cases)
    func repairs(_ c: Case) {
        var repair = TimestampRepair<Int>(ticksPerSecond: 100)
        var outputs: [TimestampRepair<Int>.Output] = []
        for (index, (pts, dts)) in c.input.enumerated() {
            if let o = repair.admit(index, pts: pts, dts: dts, duration: 4).output { outputs.append(o) }
        }
        if let o = repair.flush() { outputs.append(o) }
        #expect(outputs.map(\.payload) == c.output.map(\.0))
        #expect(outputs.map(\.pts) == c.output.map(\.1))
        #expect(outputs.map(\.dts) == c.output.map(\.2))
        #expect(repair.dropped == c.dropped)
        #expect(repair.repaired == c.repaired)
    }

    @Test func durationIsTheDistanceToTheNextDecodeTime() {
        var repair = TimestampRepair<Int>(ticksPerSecond: 100)
        var durations: [Int64] = []
        for (i, dts) in [0, 4, 9, 500, 504].enumerated() {
            if let o = repair.admit(i, pts: Int64(dts), dts: Int64(dts), duration: 4).output { durations.append(o.duration) }
        }
        if let o = repair.flush() { durations.append(o.duration) }
        #expect(durations == [4, 5, 491, 4, 4])
    }

    /// Whatever arrives, what leaves has strictly increasing DTS, PTS ≥ DTS, a duration in [0, maxGap], timestamps
    /// within the limit, and every packet is either passed on or counted as dropped — and nothing traps.
    @Test(arguments: [1, 2, 3, 4, 5])
    func garbageInValidOut(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let extremes: [Int64?] = [nil, Int64.min, Int64.max, 0, -1, Int64.max / 2, Int64.min / 2]
        var repair = TimestampRepair<Int>(ticksPerSecond: 90000)
        var outputs: [TimestampRepair<Int>.Output] = []
        var clock: Int64 = 0
        let count = 2000
        func value() -> Int64? {
            switch rng.next() % 10 {
            case 0: return extremes[Int(rng.next() % UInt64(extremes.count))]
            case 1: return clock &- Int64(rng.next() % 2_000_000)
            case 2: return clock &+ Int64(rng.next() % 20_000_000)
            default: return clock
            }
        }
        for i in 0..<count {
            clock += 3600
            let dts = value(), pts = rng.next() % 4 == 0 ? value() : dts.map { $0 &+ 7200 }
            let duration = rng.next() % 8 == 0 ? Int64(bitPattern: rng.next()) : 3600
            if let o = repair.admit(i, pts: pts, dts: dts, duration: duration).output { outputs.append(o) }
        }
        if let o = repair.flush() { outputs.append(o) }
        #expect(outputs.count + repair.droppedCount == count)
        #expect(outputs.count > count / 2)
        for (a, b) in zip(outputs, outputs.dropFirst()) { #expect(a.dts < b.dts) }
        for o in outputs {
            #expect(o.pts >= o.dts && o.pts - o.dts <= repair.maxGap)
            #expect(o.duration >= 0 && o.duration <= repair.maxGap)
            #expect(abs(o.dts) <= repair.limit)
        }
    }
}

