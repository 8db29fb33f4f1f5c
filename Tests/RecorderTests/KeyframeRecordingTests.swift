import CMAF
import Foundation
import Recorder
import Testing
import Timeline

/// Streams whose keyframes are not the tidy closed GOPs of most test files.
@Suite("Keyframes: open GOPs, long gaps, losses", .serialized)
struct KeyframeRecordingTests {
    /// x265 with open GOPs writes a CRA every 2 s and an IDR only first: continuous recording still cuts 4 s
    /// segments, each starting on a CRA, and both our checker and `pushav inspect` accept them.
    @Test func hevcOpenGOPSegmentsStartOnCRAPictures() throws {
        let media = "h_hevc_open_gop.mp4"
        let truth = try MediaTruth.of(media)
        let out = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try PushAVBinary.run(["record", Fixtures.media(media).path, "--out", out.path, "--trigger", "continuous", "--json"])
        try #require(result.status == 0, "pushav failed: \(result.stderr)")
        let report = try JSONDecoder().decode(RecordingReport.self, from: Data(result.stdout.utf8))
        #expect(report.sessions.count == 1)

        let video = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: "video")
        let expectedSegments = Int(((truth.video.duration ?? truth.duration) / 4).rounded(.up))
        #expect(video.segments.count == expectedSegments, "\(video.segments.map(\.durationSeconds))")
        #expect(video.segments.first?.firstSampleRandomAccess == .idr)
        for segment in video.segments.dropFirst() {
            #expect(segment.firstSampleRandomAccess == .cra, "\(segment.fileName)")
            #expect(segment.leadingSkippedPictureCount == 0)
            #expect(segment.firstSampleIsSync == true, "a CRA we start on is written as a sync sample")
        }
        for segment in video.segments.dropLast() {
            #expect(abs(segment.durationSeconds - 4) < 1e-6, "\(segment.fileName) lasts \(segment.durationSeconds) s")
        }

        let inspect = try PushAVBinary.run(["inspect", out.appendingPathComponent("session_1").path, "--segment-duration", "4000", "--summary"])
        #expect(inspect.status == 0, "\(inspect.stdout)")
        #expect(inspect.stdout.contains("video.init: vide hvc1") && inspect.stdout.contains("every segment starts with a random access point"),
                "\(inspect.stdout)")
        #expect(!inspect.stdout.contains("19:"), "no item-19 finding, not even a warning: \(inspect.stdout)")
    }
}
