import CMAF
import Foundation
import Recorder
import Testing
import TestSupport

/// The MPDs of a session recorded with `--dash`: the static one read by FFmpeg's own `dash` demuxer (every track plays to its full
/// length), both parsed by a third-party DASH library (mpegdash) with the templates and timeline we wrote.
@Suite struct DASHPlaybackTests {
    @Test(arguments: ["a_720p30_h264_main.mp4", "c_hevc.mp4"])
    func staticManifestPlaysEveryFrameThroughFFmpegsDashDemuxer(_ media: String) async throws {
        let out = try Fixtures.scratchDirectory("dash")
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try await PushAVBinary.run(["record", Fixtures.media(media).path, "--out", out.path, "--trigger",
                                                 "continuous", "--segment-duration", "2000", "--dash", "--json"])
        try #require(result.status == 0, "\(result.stderr)")
        // What the files hold, read with our box parser: the expectations for what the MPD must describe.
        var tracks: [(name: String, header: CMAFHeader, segments: [CMAFSegment])] = []
        for name in ["video", "audio"] {
            let folder = out.appendingPathComponent("session_1/\(name)")
            let header = try CMAFHeader(bytes: [UInt8](try Data(contentsOf: folder.appendingPathComponent("\(name).init"))))
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".m4s") }.sorted()
            let segments = try files.map {
                try CMAFSegment(bytes: [UInt8](try Data(contentsOf: folder.appendingPathComponent($0))), fileName: $0, header: header)
            }
            #expect(segments.count >= 4, "\(name): \(segments.count) segments")
            tracks.append((name, header, segments))
        }
        let mpd = out.appendingPathComponent("session_1/index.mpd")

        /// Frames decoded from the first stream of each type (ffprobe lists a DASH stream again under its program).
        func frames(_ url: URL, options: String = "") async throws -> [String: Int] {
            var counts: [String: Int] = [:]
            for type in ["v", "a"] {
                let text = try await Shell.run("ffprobe -v error \(options) -count_frames -select_streams \(type):0 "
                    + "-show_entries stream=nb_read_frames -of csv=p=0 '\(url.path)'")
                counts[type] = text.split(separator: "\n").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            }
            return counts
        }
        // `.init` (the Matter layout's header name) is not on the dash demuxer's list of media extensions for files.
        let dash = try await frames(mpd, options: "-allowed_extensions ALL")
        let reference = try await frames(out.appendingPathComponent("clips/session_1.mp4"))
        #expect((reference["v"] ?? 0) > 100 && (reference["a"] ?? 0) > 100, "\(reference)")
        #expect(dash == reference, "through the MPD \(dash), the clip \(reference)")
        // A third-party DASH parser (mpegdash, PyPI, in .venv) reads both manifests the way we wrote them.
        // (The recorder replaced its dynamic MPD with the static one; this one is made the way it made that.)
        let dynamicURL = out.appendingPathComponent("session_1/index-dynamic.mpd")
        try DASHManifest(kind: .dynamic(availabilityStart: Date()),
                         tracks: try tracks.map { try DASHManifest.Track(name: $0.name, header: $0.header) },
                         segmentDuration: 2).xml.write(to: dynamicURL, atomically: true, encoding: .utf8)
        let summary = try await Shell.run("""
            '\(TestPaths.packageRoot.appendingPathComponent(".venv/bin/python").path)' - '\(mpd.path)' '\(dynamicURL.path)' <<'PY'
            import sys
            from mpegdash.parser import MPEGDASHParser
            for path in sys.argv[1:]:
                mpd = MPEGDASHParser.parse(path)
                for a in mpd.periods[0].adaptation_sets:
                    t = a.representations[0].segment_templates[0]
                    count = sum((s.r or 0) + 1 for s in t.segment_timelines[0].Ss) if t.segment_timelines else 0
                    print(mpd.type, a.content_type, t.start_number, t.initialization, t.media, t.timescale, count)
            PY
            """)
        var parsed: [String] = []
        for kind in ["static", "dynamic"] {
            for track in tracks {
                parsed.append("\(kind) \(track.header.isAudio ? "audio" : "video") 1001 \(track.name)/\(track.name).init "
                    + "\(track.name)/segment_$Number$.m4s \(track.header.mediaTimescale ?? 0) \(kind == "static" ? track.segments.count : 0)")
            }
        }
        #expect(summary.split(separator: "\n").map(String.init) == parsed, "\(summary)")
        let duration = try await Shell.run("ffprobe -v error -allowed_extensions ALL -show_entries format=duration -of csv=p=0 '\(mpd.path)'")
        let expected = tracks.map { $0.segments.reduce(0) { $0 + $1.durationSeconds } }.max() ?? 0
        #expect(abs((Double(duration.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - expected) < 0.1, "\(duration) vs \(expected)")
    }
}
