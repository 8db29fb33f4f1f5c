import Domain
import Testing
import Timeline

@Suite struct SegmentPlannerTests {
    /// Frames at `fps`, a keyframe every `gop` frames; returns the indices where segments and chunks start.
    static func cuts(frames: Int, fps: Int32, gop: Int, segmentMs: Int64, chunkMs: Int64? = nil)
        -> (segments: [Int], chunks: [Int])
    {
        var planner = SegmentPlanner(segmentDuration: .milliseconds(segmentMs), chunkDuration: chunkMs.map { .milliseconds($0) })
        var segments = [0], chunks: [Int] = []
        for i in 0..<frames {
            switch planner.place(presentationTime: MediaTime(value: Int64(i), timescale: fps), isRandomAccess: i % gop == 0) {
            case .segment: segments.append(i)
            case .chunk: chunks.append(i)
            case .none: break
            }
        }
        return (segments, chunks)
    }

    @Test(arguments: [
        // (fps, gop frames, segment ms, expected segment starts for 12 s of frames)
        (30, 60, 4000, [0, 120, 240]),  // GOP 2 s divides 4 s
        (25, 25, 4000, [0, 100, 200]),  // GOP 1 s
        (30, 60, 2000, [0, 60, 120, 180, 240, 300]),
        (30, 90, 4000, [0, 180]),  // GOP 3 s does not divide 4 s: cut at the first keyframe at or after 4 s (6 s)
        (25, 25, 3500, [0, 100, 200]),  // 3.5 s target, 1 s GOP: cuts at 4 s, 8 s
    ] as [(Int32, Int, Int64, [Int])])
    func segmentStartsAtFirstKeyframeAtOrAfterTarget(fps: Int32, gop: Int, segmentMs: Int64, expected: [Int]) {
        let frames = Int(fps) * 12
        #expect(Self.cuts(frames: frames, fps: fps, gop: gop, segmentMs: segmentMs).segments == expected)
    }

    @Test func chunksStartAtFirstFrameAtOrAfterEachBoundary() {
        let (segments, chunks) = Self.cuts(frames: 240, fps: 30, gop: 60, segmentMs: 4000, chunkMs: 1000)
        #expect(segments == [0, 120])
        // 4 chunks per 4 s segment: boundaries at 1, 2, 3 s inside each segment.
        #expect(chunks == [30, 60, 90, 150, 180, 210])
    }

    @Test func chunkShorterThanAFrameSkipsPassedBoundaries() {
        // 10 fps, 30 ms chunks: every frame starts a chunk, no boundary is reported twice.
        let (_, chunks) = Self.cuts(frames: 20, fps: 10, gop: 10, segmentMs: 1000, chunkMs: 30)
        #expect(chunks == Array(1..<10) + Array(11..<20))
    }

    @Test func chunkDurationNotBelowSegmentDurationMeansNoChunks() {
        #expect(SegmentPlanner(segmentDuration: .seconds(2), chunkDuration: .seconds(2)).chunkDuration == nil)
        #expect(SegmentPlanner(segmentDuration: .seconds(2), chunkDuration: .zero).chunkDuration == nil)
    }
}
