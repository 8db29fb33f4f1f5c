import Foundation
import Testing

/// `--keyframe-analysis` (serve: `analysis: keyframes`): motion from key pictures only. Every event the full analysis
/// records is still recorded, triggered at a keyframe at most one keyframe interval after the full analysis's t0.
@Suite struct KeyframeAnalysisTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var media: String
        /// Seconds between keyframes (TestMedia/README.md).
        var keyframeInterval: Double
        var testDescription: String { media }
    }

    @Test(arguments: [
        Case(media: "a_720p30_h264_main.mp4", keyframeInterval: 2),
        Case(media: "c_hevc.mp4", keyframeInterval: 2),
        Case(media: "g_slow_object.mp4", keyframeInterval: 2),
        Case(media: "h_hevc_open_gop.mp4", keyframeInterval: 2),
    ])
    func eventsAreSeenAtMostOneKeyframeIntervalLater(_ c: Case) async throws {
        let full = try await Self.triggers(c.media, ["--initial", "10"])
        let keyframes = try await Self.triggers(c.media, ["--initial", "10", "--keyframe-analysis"])
        try #require(!full.isEmpty, "the full analysis records nothing in \(c.media)")
        #expect(keyframes.count == full.count, "full \(full), keyframes only \(keyframes)")
        for (late, early) in zip(keyframes, full) {
            #expect(late >= early - 0.001 && late <= early + c.keyframeInterval + 0.001, "full \(full), keyframes only \(keyframes)")
            let offGrid = abs(late / c.keyframeInterval - (late / c.keyframeInterval).rounded())
            #expect(offGrid < 0.01, "t0 \(late) is not a keyframe time")
        }
    }

    /// The sessions' activation times t0 of a motion recording of `media`.
    static func triggers(_ media: String, _ flags: [String]) async throws -> [Double] {
        let out = try Fixtures.scratchDirectory("keyframe-analysis")
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try await PushAVBinary.run(["record", Fixtures.media(media).path, "--out", out.path, "--json", "--no-clip"] + flags)
        try #require(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let sessions = try #require(report["sessions"] as? [[String: Any]])
        return sessions.compactMap { $0["trigger"] as? Double }
    }
}
