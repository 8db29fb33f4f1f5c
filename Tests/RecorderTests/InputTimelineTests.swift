import Domain
import Logging
import MediaIO
import Testing
@testable import Recorder

/// The recorded video's clock as the pipeline's write stage keeps it: origin, newest, end, and the keyframe spacing
/// that sizes the pre-roll buffer. Pictures are (time ms, keyframe); every picture lasts 100 ms.
@Suite struct InputTimelineTests {
    static let logger = Logger(label: "test")

    static func run(_ pictures: [(Int64, Bool)], preRolls: [Int64] = [0]) throws -> InputTimeline {
        var timeline = InputTimeline(preRolls: preRolls.map(MediaTime.milliseconds))
        for (ms, key) in pictures {
            try timeline.picture(at: .milliseconds(ms), duration: .milliseconds(100), randomAccess: key, logger: logger)
        }
        return timeline
    }

    /// (pictures, origin, newest, end, keyframe interval, retention for a 3 s pre-roll) — times in ms.
    static let cases: [([(Int64, Bool)], Int64, Int64, Int64, Int64, Int64)] = [
        // Before a second keyframe the interval is the 2 s floor.
        ([(500, true), (600, false)], 500, 600, 700, 2000, 7000),
        // A 4 s GOP widens it; the buffer keeps the pre-roll plus two of them.
        ([(0, true), (4000, true), (4100, false)], 0, 4100, 4200, 4000, 11_000),
        // B-frames: presentation order is not read order; the origin is the earliest, the end the latest.
        ([(200, true), (500, false), (300, false), (400, false)], 200, 500, 600, 2000, 7000),
        // A shorter later interval never narrows it.
        ([(0, true), (3000, true), (4000, true)], 0, 4000, 4100, 3000, 9000),
    ]

    @Test(arguments: cases)
    func clock(pictures: [(Int64, Bool)], origin: Int64, newest: Int64, end: Int64, interval: Int64, retention: Int64) throws {
        let timeline = try Self.run(pictures)
        #expect(timeline.origin == .milliseconds(origin))
        #expect(timeline.newest == .milliseconds(newest))
        #expect(timeline.videoEnd == .milliseconds(end))
        #expect(timeline.keyframeInterval == .milliseconds(interval))
        #expect(timeline.retention(maxPreRoll: .milliseconds(3000)) == .milliseconds(retention))
    }

    /// Rule 9: a pre-roll shorter than the stream's own (first) keyframe interval is refused as allocation would
    /// refuse it; a later long gap only lengthens pre-rolls and is counted.
    @Test func aPreRollShorterThanTheFirstIntervalIsRefusedALaterGapIsCounted() throws {
        #expect(throws: MediaError.self) { try Self.run([(0, true), (4000, true)], preRolls: [3000]) }
        let timeline = try Self.run([(0, true), (2000, true), (3000, false), (6000, false), (9000, true)], preRolls: [3000])
        #expect(timeline.keyframeInterval == .milliseconds(7000))
        #expect(timeline.longKeyframeIntervals.count == 1)
        #expect(timeline.longKeyframeIntervals.longest == 7)
    }
}
