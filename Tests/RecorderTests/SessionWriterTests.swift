import Foundation
import MediaIO
import Testing
import Timeline
@testable import Recorder

@Suite("Session writer")
struct SessionWriterTests {
    /// A session whose input fails before its first frame reaches the muxer must not stay on disk as headers
    /// without media (an ingest or a player would take it for an empty recording).
    @Test func sessionWithoutAFrameLeavesNothingOnDisk() throws {
        let root = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let input = try MediaInput(url: Fixtures.media("a_720p30_h264_main.mp4").path)
        let video = try input.conditioner(for: try #require(input.video), keyframeInterval: .seconds(4))
        let layout = SessionLayout(root: root, session: 7)
        let writer = try SessionWriter(
            layout: layout, start: .zero, video: video, videoCodec: "h264", frameRate: 30, audio: nil, audioCodec: nil,
            segmentDuration: .seconds(4), chunkDuration: nil, writeClip: true)
        // The CMAF header is written when the session opens (on its output thread).
        try writer.waitForOutput()
        #expect(FileManager.default.fileExists(atPath: layout.url(layout.initPath(.video)).path))

        let record = try writer.finish(at: nil, reason: "endOfInput")
        #expect(record.tracks.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: layout.url(layout.sessionPath).path))
        #expect(!FileManager.default.fileExists(atPath: layout.url(layout.clipPath).path))
    }
}
