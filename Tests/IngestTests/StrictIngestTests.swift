import Foundation
import IngestServer
import Testing
import TestSupport

/// `pushav receive --strict`: the CSA test server's strict-mode rules, as sequences of uploads and the status each
/// one gets (media checks off: these rows are about order and manifests only).
@Suite struct StrictIngestTests {
    static let dynamicMPD = #"<MPD type="dynamic"/>"#
    static let staticMPD = #"<MPD type="static"/>"#

    struct Row: Sendable, CustomStringConvertible {
        var name: String
        var interface: StrictIngestRules.Interface
        /// (path, body, the status expected)
        var uploads: [(String, String, Int)]
        var description: String { name }
    }

    static let rows: [Row] = [
        Row(name: "Interface-1 in order", interface: .cmafIngest, uploads: [
            ("session_1/video/video.init", "x", 201), ("session_1/video/segment_1001.m4s", "x", 201),
            ("session_1/video/video.init", "x", 204),  // Interface-1 may send its header again
        ]),
        Row(name: "Interface-1 has no manifest", interface: .cmafIngest, uploads: [
            ("session_1/index.mpd", dynamicMPD, 400),
        ]),
        Row(name: "DASH in order", interface: .dash, uploads: [
            ("session_2/index.mpd", dynamicMPD, 201), ("session_2/video/video.init", "x", 201),
            ("session_2/audio/audio.init", "x", 201), ("session_2/video/segment_1001.m4s", "x", 201),
            ("session_2/audio/segment_1001.m4s", "x", 201), ("session_2/index.mpd", staticMPD, 204),
        ]),
        Row(name: "DASH header before the dynamic MPD", interface: .dash, uploads: [
            ("session_2/video/video.init", "x", 400), ("session_2/index.mpd", dynamicMPD, 201),
            ("session_2/video/video.init", "x", 201),
        ]),
        Row(name: "DASH duplicate header", interface: .dash, uploads: [
            ("session_2/index.mpd", dynamicMPD, 201), ("session_2/video/video.init", "x", 201),
            ("session_2/video/video.init", "x", 400),
        ]),
        Row(name: "DASH segment before its header", interface: .dash, uploads: [
            ("session_2/index.mpd", dynamicMPD, 201), ("session_2/video/segment_1001.m4s", "x", 400),
        ]),
        Row(name: "DASH static MPD before any segment", interface: .dash, uploads: [
            ("session_2/index.mpd", dynamicMPD, 201), ("session_2/video/video.init", "x", 201),
            ("session_2/index.mpd", staticMPD, 400),
        ]),
        Row(name: "DASH dynamic MPD after segments", interface: .dash, uploads: [
            ("session_2/index.mpd", dynamicMPD, 201), ("session_2/video/video.init", "x", 201),
            ("session_2/video/segment_1001.m4s", "x", 201), ("session_2/index.mpd", dynamicMPD, 400),
        ]),
        Row(name: "DASH sessions are separate, below a publishing point too", interface: .dash, uploads: [
            ("cam/session_2/index.mpd", dynamicMPD, 201), ("cam/session_2/video/video.init", "x", 201),
            ("cam/session_3/video/video.init", "x", 400),
        ]),
    ]

    @Test(arguments: rows)
    func uploadsInSequence(row: Row) throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = IngestStore(root: directory, validatesMedia: false, strict: StrictIngestRules(interface: row.interface))
        for (index, (path, body, status)) in row.uploads.enumerated() {
            let answer = store.accept(path: path, body: Array(body.utf8))
            #expect(answer.status == status, "upload \(index + 1) \(path): \(answer.message)")
            if status == 400 { #expect(answer.message.hasPrefix("strict (\(row.interface.rawValue)): "), "\(answer.message)") }
        }
    }

    /// The expected track names of a stream (what the CSA server's `trackName` sets): per stream prefix, a name outside
    /// the set is refused with that server's words; manifests and other prefixes are not affected.
    @Test(arguments: [
        ("streams/1/session_1/media/media.init", 201), ("streams/1/session_1/media/segment_1001.m4s", 201),
        ("streams/1/session_1/video/video.init", 400), ("streams/1/session_1/audio/segment_1001.m4s", 400),
        ("streams/2/session_1/video/video.init", 201),
    ] as [(String, Int)])
    func expectedTrackNames(path: String, status: Int) throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let rules = StrictIngestRules(interface: .cmafIngest, expectedTrackNames: ["streams/1": ["media"]])
        let store = IngestStore(root: directory, validatesMedia: false, strict: rules)
        if path.hasSuffix(".m4s") {  // its header first
            let header = path.replacingOccurrences(of: "segment_1001.m4s", with: "") + path.split(separator: "/")[3] + ".init"
            _ = store.accept(path: header, body: Array("x".utf8))
        }
        let answer = store.accept(path: path, body: Array("x".utf8))
        #expect(answer.status == status, "\(path): \(answer.message)")
        if status == 400 {
            #expect(answer.message.contains("Track name mismatch: ") && answer.message.contains(" != media, must match TrackName"),
                    "\(answer.message)")
        }
    }

    @Test func strictNeedsTLS() {
        var configuration = IngestServer.Configuration(root: URL(fileURLWithPath: "/tmp/unused"), tls: nil)
        configuration.strict = StrictIngestRules(interface: .dash)
        #expect(throws: IngestServer.ConfigurationError.self) { try IngestServer(configuration: configuration) }
    }
}
