import Foundation
import Testing
import TransportRecording

/// `pushav record`'s transport options as a user gives them: what is refused (and with which Matter status), and
/// that nothing accepted is silently ignored.
@Suite("Transport options on the command line")
struct TransportOptionTests {
    /// A Motion transport document with `cmaf` merged into its CMAFContainerOptions and `extra` into the top level.
    static func document(cmaf: String = "", extra: String = "") -> String {
        """
        {"streamUsage": 1, "tlsEndpointID": 1, "url": "https://ingest.example/streams/1/", "ingestMethod": 0,
         "triggerOptions": {"triggerType": 1, "motionZones": null, "motionSensitivity": 5, "maxPreRollLen": 4000,
                            "motionTimeControl": {"initialDuration": 2, "augmentationDuration": 0, "maxDuration": 2, "blindDuration": 0}},
         "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0\(cmaf)}}\(extra)}
        """
    }

    /// (case, document, the error line must contain)
    static let refused: [(String, String, String)] = [
        ("track name with a slash", document(cmaf: #", "trackName": "a/b""#), #"CONSTRAINT_ERROR (0x87): containerOptions.cmafContainerOptions.trackName: must not contain "/""#),
        ("track name ..", document(cmaf: #", "trackName": "..""#), #"trackName: ".." cannot name a track directory"#),
        ("empty track name", document(cmaf: #", "trackName": """#), "CONSTRAINT_ERROR (0x87): containerOptions.cmafContainerOptions.trackName: length must be 1…16 bytes"),
        ("empty stream name", document(extra: #", "videoStreams": [{"videoStreamName": "", "videoStreamID": 1}]"#), "CONSTRAINT_ERROR (0x87): videoStreams.videoStreamName: length must be 1…16 bytes"),
        ("stream name with a control character", document(extra: #", "videoStreams": [{"videoStreamName": "a\nb", "videoStreamID": 1}]"#), "videoStreams.videoStreamName: must not contain U+000A"),
        ("audio named like video", document(extra: #", "videoStreams": [{"videoStreamName": "main", "videoStreamID": 1}], "audioStreams": [{"audioStreamName": "main", "audioStreamID": 2}]"#), #"cluster InvalidStream (0x03): videoStreams.videoStreamName: audio and video tracks are both named "main""#),
        ("trackName equal to the audio track", document(cmaf: #", "trackName": "audio""#), "cluster InvalidStream (0x03)"),
        ("Interface-2 HLS", document(cmaf: "").replacingOccurrences(of: #""cmafInterface": 0"#, with: #""cmafInterface": 2"#), "FAILURE (0x1): containerOptions.cmafContainerOptions.cmafInterface: Interface2HLS is not supported"),
    ]

    @Test("refused with the cluster's status, nothing recorded", arguments: refused.map { ($0.0, $0.2) })
    func refusedTransport(name: String, expected: String) async throws {
        let dir = try Fixtures.scratchDirectory(name)
        defer { try? FileManager.default.removeItem(at: dir) }
        let document = dir.appendingPathComponent("transport.json")
        try Data(Self.refused.first { $0.0 == name }!.1.utf8).write(to: document)
        let out = dir.appendingPathComponent("out")
        let result = try await PushAVBinary.run(["record", Fixtures.media("e_video_only.mp4").path, "--out", out.path,
                                           "--transport", document.path, "--no-push"])
        #expect(result.status != 0)
        #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "stderr: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1").path))
    }

    /// A transport's url is where it uploads: a document with one is not recorded locally without saying so.
    @Test func transportURLIsNeverSilentlyIgnored() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let document = dir.appendingPathComponent("transport.json")
        try Data(Self.document().utf8).write(to: document)
        let out = dir.appendingPathComponent("out")
        let input = Fixtures.media("e_video_only.mp4").path
        let refused = try await PushAVBinary.run(["record", input, "--out", out.path, "--transport", document.path])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("uploads to https://ingest.example/streams/1/: add --push"), "stderr: \(refused.stderr)")
        let both = try await PushAVBinary.run(["record", input, "--out", out.path, "--transport", document.path, "--no-push",
                                         "--push", "https://ingest.example/streams/1/"])
        #expect(both.status != 0 && both.stderr.contains("--no-push and --push contradict each other"), "stderr: \(both.stderr)")
        let local = try await PushAVBinary.run(["record", input, "--out", out.path, "--transport", document.path, "--no-push"])
        #expect(local.status == 0, "stderr: \(local.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1/video/video.init").path))
    }

    /// A track name that is legal in the cluster but not a plain word (the certification tests allocate " ") is
    /// written as it is and recorded.
    @Test func trackNameWithASpaceIsRecordedUnderThatName() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let document = dir.appendingPathComponent("transport.json")
        try Data(Self.document(cmaf: #", "trackName": "front door""#).utf8).write(to: document)
        let out = dir.appendingPathComponent("out")
        let result = try await PushAVBinary.run(["record", Fixtures.media("a_720p30_h264_main.mp4").path, "--out", out.path,
                                           "--transport", document.path, "--no-push"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1/front door/front door.init").path))
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1/audio/audio.init").path))
    }

    /// Session numbers only ever increase: a second run into the same folder continues after the first run's
    /// sessions instead of starting again at session_1 among the first run's files.
    @Test func secondRunIntoTheSameFolderContinuesTheSessionNumbers() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out")
        let long = ["record", Fixtures.media("a_720p30_h264_main.mp4").path, "--out", out.path, "--trigger", "continuous",
                    "--session-length", "8"]
        let first = try await PushAVBinary.run(long)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let firstSessions = try Self.sessions(in: out)
        #expect(firstSessions == [1, 2, 3])
        let before = try Data(contentsOf: out.appendingPathComponent("session_1/video/segment_1002.m4s"))
        let second = try await PushAVBinary.run(["record", Fixtures.media("e_video_only.mp4").path, "--out", out.path,
                                           "--trigger", "continuous"])
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(try Self.sessions(in: out) == [1, 2, 3, 4])
        #expect(try Data(contentsOf: out.appendingPathComponent("session_1/video/segment_1002.m4s")) == before)
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("report.json"))) as? [String: Any]
        let reported = (report?["sessions"] as? [[String: Any]])?.compactMap { $0["session"] as? Int }
        #expect(reported == [4])
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("clips/session_4.mp4").path))
    }

    static func sessions(in directory: URL) throws -> [Int] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .compactMap { $0.hasPrefix("session_") ? Int($0.dropFirst("session_".count)) : nil }.sorted()
    }
}
