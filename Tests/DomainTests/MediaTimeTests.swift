import Testing
@testable import Domain

@Suite struct MediaTimeTests {
    @Test(arguments: [
        (MediaTime(value: 15360, timescale: 15360), MediaTime.seconds(1), true),
        (MediaTime(value: 1024, timescale: 48000), MediaTime(value: 2, timescale: 90), false),
        (MediaTime.milliseconds(4000), MediaTime(value: 51200, timescale: 12800), true),
    ])
    func equalityAcrossTimescales(a: MediaTime, b: MediaTime, equal: Bool) {
        #expect((a == b) == equal)
        if equal { #expect(a.hashValue == b.hashValue) }
    }

    @Test func orderingIsExactWhereDoubleWouldRound() {
        // 1/3 s at 3 Hz versus 333333/1000000: Double comparisons are fine here, but the exact path must agree.
        #expect(MediaTime(value: 333_333, timescale: 1_000_000) < MediaTime(value: 1, timescale: 3))
        #expect(MediaTime(value: Int64.max / 2, timescale: 1) > MediaTime(value: Int64.max / 2 - 1, timescale: 1))
    }

    @Test func arithmeticUsesCommonScale() {
        let sum = MediaTime(value: 1, timescale: 30) + MediaTime(value: 1, timescale: 25)
        #expect(sum == MediaTime(value: 11, timescale: 150))
        #expect(MediaTime.seconds(2) - MediaTime.milliseconds(500) == MediaTime.milliseconds(1500))
    }

    @Test func conversionRoundsToNearest() {
        #expect(MediaTime(value: 1, timescale: 3).converted(to: 1000).value == 333)
        #expect(MediaTime(value: 2, timescale: 3).converted(to: 1000).value == 667)
        #expect(MediaTime(value: -2, timescale: 3).converted(to: 1000).value == -667)
    }
}
