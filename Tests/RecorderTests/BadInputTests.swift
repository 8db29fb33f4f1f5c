import CMAF
import Foundation
import Testing

/// Bad input gets one clear line on stderr and a non-zero exit, and loses nothing already written.
@Suite("Bad input", .serialized)
struct BadInputTests {
    /// (what the input is, how to make it, text the error line must contain)
    static let cases: [(String, @Sendable (URL) throws -> String, String)] = [
        ("missing file", { dir in dir.appendingPathComponent("missing.mp4").path }, "No such file or directory"),
        ("not a media file", { dir in
            let url = dir.appendingPathComponent("notes.mp4")
            try Data("meeting notes, not a video\n".utf8).write(to: url)
            return url.path
        }, "not a media file"),
        ("audio only (no stream we can record)", { dir in
            let url = dir.appendingPathComponent("tone.wav")
            try BadInputTests.wav(seconds: 1).write(to: url)
            return url.path
        }, "has no video stream"),
        ("MP4 cut off before its index (still being written)", { dir in
            let source = try Data(contentsOf: Fixtures.media("a_720p30_h264_main.mp4"))
            let url = dir.appendingPathComponent("cut.mp4")
            try source.prefix(source.count / 2).write(to: url)
            return url.path
        }, "truncated or still being written"),
    ]

    @Test(arguments: cases.map { ($0.0, $0.2) })
    func clearErrorAndNonZeroExit(name: String, expected: String) async throws {
        let dir = try Fixtures.scratchDirectory(name)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.cases.first { $0.0 == name }!.1(dir)
        let result = try await PushAVBinary.run(["record", input, "--out", dir.appendingPathComponent("out").path])
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    /// An MPEG-TS file cut mid-write: the error says so, and every segment written before it is complete, valid
    /// CMAF and listed in report.json.
    @Test func truncatedTransportStreamKeepsEverySegmentWrittenBeforeTheFault() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Data(contentsOf: Fixtures.media("b_1080p25_h264_high_bframes.ts"))
        let input = dir.appendingPathComponent("cut.ts")
        try source.prefix(source.count * 6 / 10 + 100).write(to: input)  // not a multiple of 188: cut mid-packet
        let out = dir.appendingPathComponent("out")
        let result = try await PushAVBinary.run(["record", input.path, "--out", out.path, "--segment-duration", "2000"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("is truncated"), "stderr: \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)

        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("report.json"))) as? [String: Any]
        #expect((report?["error"] as? String)?.contains("truncated") == true)
        for track in ["video", "audio"] {
            let written = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: track)
            #expect(written.segments.count >= 2, "\(track): \(written.segments.count) segments")
            let violations = CMAFConformance(expectations: .init(segmentDuration: 2, audioDurationTolerance: 0.03))
                .check(header: written.headerFile, segments: written.files).filter { $0.severity == .error }
            #expect(violations.isEmpty, "\(violations)")
            // No half-written file is left under a final name or as a temporary.
            let names = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("session_1/\(track)").path)
            #expect(!names.contains { $0.hasSuffix(".partial") })
        }
    }

    /// Invalid options are answered with the status the Push AV cluster gives for the same TransportOptions.
    @Test(arguments: [
        (["--segment-duration", "50"], "CONSTRAINT_ERROR (0x87): --segment-duration must be 500…65500 ms, got 50"),
        (["--chunk-duration", "3000"], "CONSTRAINT_ERROR (0x87): containerOptions.cmafContainerOptions.chunkDuration"),
        (["--sensitivity", "11"], "CONSTRAINT_ERROR (0x87): --sensitivity must be 1…10, got 11"),
        (["--initial", "20", "--max-duration", "10"], "CONSTRAINT_ERROR (0x87): triggerOptions.motionTimeControl.maxDuration"),
        (["--zone", "1:0,0,100,100:12"], "CONSTRAINT_ERROR (0x87): triggerOptions.motionZones"),
        (["--pre-roll", "1000"], "cluster InvalidPreRollLength (0x0C): maxPreRollLen 1000 ms is shorter than the input's keyframe interval 2000 ms"),
        (["--transport", "/nonexistent/transport.json"], "cannot read --transport"),
    ])
    func invalidOptionsAnswerWithTheMatterStatus(flags: [String], expected: String) async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out")
        let result = try await PushAVBinary.run(["record", Fixtures.media("a_720p30_h264_main.mp4").path, "--out", out.path] + flags)
        #expect(result.status != 0)
        #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        // Nothing recorded: the refusal comes before the first clip.
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1").path))
    }

    @Test func transportDocumentThatIsNotTransportOptionsIsInvalidCommand() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let document = dir.appendingPathComponent("transport.json")
        try Data(#"{"url": 42}"#.utf8).write(to: document)
        let result = try await PushAVBinary.run(["record", Fixtures.media("a_720p30_h264_main.mp4").path, "--out",
                                           dir.appendingPathComponent("out").path, "--transport", document.path])
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("Error: INVALID_COMMAND (0x85): "), "stderr: \(result.stderr)")
    }

    /// A minimal 16-bit mono PCM WAV file.
    static func wav(seconds: Int) -> Data {
        let rate = 8000, samples = rate * seconds
        var d = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(36 + samples * 2); d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1); u32(rate); u32(rate * 2); u16(2); u16(16)
        d.append(contentsOf: Array("data".utf8)); u32(samples * 2)
        for i in 0..<samples { u16(Int(Int16(sin(Double(i) / 8) * 8000)) & 0xffff) }
        return d
    }
}
