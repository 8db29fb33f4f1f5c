import Foundation
import Testing
import TestSupport

/// `--analysis-source` (serve: `cameras[].analysisSource`): motion is analysed on a second, low-resolution stream of
/// the same scene and the recorded stream is only copied.
@Suite struct AnalysisSourceTests {
    /// `media` scaled to 320 pixels wide (B-frames off, like a camera's substream), optionally cut to `seconds`.
    static func substream(of media: String, seconds: Int? = nil, in dir: URL) async throws -> URL {
        let url = dir.appendingPathComponent("sub-\(media).mp4")
        try await SyntheticVideo.ffmpeg(["-i", Fixtures.media(media).path] + (seconds.map { ["-t", "\($0)"] } ?? [])
            + ["-an", "-vf", "scale=320:-2", "-c:v", "libx264", "-preset", "veryfast", "-bf", "0", url.path])
        return url
    }

    struct Recording {
        var triggers: [Double]
        var starts: [Double]
        var analysisPictures: Int?
    }

    static func record(_ media: String, _ flags: [String], in dir: URL) async throws -> Recording {
        try await record(Fixtures.media(media), flags, in: dir)
    }

    static func record(_ input: URL, _ flags: [String], in dir: URL) async throws -> Recording {
        let out = dir.appendingPathComponent(UUID().uuidString)
        let result = try await PushAVBinary.run(["record", input.path, "--out", out.path, "--json", "--no-clip"] + flags)
        try #require(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let sessions = try #require(report["sessions"] as? [[String: Any]])
        let source = report["analysisSource"] as? [String: Any]
        return Recording(triggers: sessions.compactMap { $0["trigger"] as? Double },
                         starts: sessions.compactMap { $0["start"] as? Double },
                         analysisPictures: source?["pictures"] as? Int)
    }

    static let timeControl = ["--initial", "3", "--augmentation", "1", "--max-duration", "4", "--blind", "2"]

    @Test func substreamOfTheSameSceneGivesTheSameClips() async throws {
        let dir = try Fixtures.scratchDirectory("analysis-source")
        defer { try? FileManager.default.removeItem(at: dir) }
        let sub = try await Self.substream(of: "a_720p30_h264_main.mp4", in: dir)
        let main = try await Self.record("a_720p30_h264_main.mp4", Self.timeControl, in: dir)
        let fromSub = try await Self.record("a_720p30_h264_main.mp4", Self.timeControl + ["--analysis-source", sub.path], in: dir)
        try #require(!main.triggers.isEmpty, "analysing the main stream records nothing")
        #expect(fromSub.triggers.count == main.triggers.count, "main \(main.triggers), substream \(fromSub.triggers)")
        for (a, b) in zip(fromSub.triggers, main.triggers) {
            #expect(abs(a - b) <= 1.0 / 30 + 0.001, "main \(main.triggers), substream \(fromSub.triggers)")
        }
        #expect(fromSub.starts == main.starts)
        // Every picture of the substream was decoded, and none of the main stream's (its frames are not counted).
        let frames = try await Shell.run("ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 '\(sub.path)'")
        #expect(fromSub.analysisPictures == Int(frames.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(main.analysisPictures == nil)
    }

    /// A still picture never triggers by itself; with the moving file's substream as its analysis source it records
    /// exactly the clips the moving file does: motion comes from the substream alone.
    @Test func clipsFollowTheAnalysisSourceNotTheRecordedStream() async throws {
        let dir = try Fixtures.scratchDirectory("analysis-source")
        defer { try? FileManager.default.removeItem(at: dir) }
        let sub = try await Self.substream(of: "a_720p30_h264_main.mp4", in: dir)
        let stillFile = dir.appendingPathComponent("still.mp4")
        try await SyntheticVideo.ffmpeg(["-f", "lavfi", "-i", "color=c=0x808080:s=1280x720:r=30:d=20", "-c:v", "libx264",
                                         "-preset", "veryfast", "-g", "60", "-bf", "0", "-pix_fmt", "yuv420p", stillFile.path])
        let still = try await Self.record(stillFile, Self.timeControl, in: dir)
        let moving = try await Self.record("a_720p30_h264_main.mp4", Self.timeControl, in: dir)
        let driven = try await Self.record(stillFile, Self.timeControl + ["--analysis-source", sub.path], in: dir)
        #expect(still.triggers.isEmpty)
        try #require(!moving.triggers.isEmpty)
        #expect(driven.triggers.count == moving.triggers.count, "expected \(moving.triggers), got \(driven.triggers)")
        for (a, b) in zip(driven.triggers, moving.triggers) {
            #expect(abs(a - b) <= 1.0 / 30 + 0.001, "expected \(moving.triggers), got \(driven.triggers)")
        }
    }

    @Test(arguments: [
        ("missing.mp4", "analysis source"),
        ("tone.wav", "has no video stream"),
    ])
    func unusableAnalysisSourceIsOneClearError(name: String, expected: String) async throws {
        let dir = try Fixtures.scratchDirectory("analysis-source")
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent(name)
        if name.hasSuffix(".wav") { try BadInputTests.wav(seconds: 1).write(to: source) }
        let result = try await PushAVBinary.run(["record", Fixtures.media("e_video_only.mp4").path, "--out",
                                                 dir.appendingPathComponent("out").path, "--analysis-source", source.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains(expected) && result.stderr.contains(source.path), "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")
    }
}
