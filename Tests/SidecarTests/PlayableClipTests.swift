import CMAF
import Foundation
import Ingest
import Recorder
@testable import Sidecar
import Testing
import TestSupport

/// The page's clip is one fragmented MP4 of the recording's tracks as the spool keeps them (issue 48): both tracks,
/// its duration in `mvhd` and `mehd` (a player that trusts the header played 2 s of 7), every picture and audio frame
/// of the recording, decodable by FFmpeg front to back — made of the spool's own files and a few patched bytes.
@Suite struct PlayableClipTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var media: String
        var audio: Bool
        var segmentMs: Int64 = 2000
        var chunkMs: Int64? = nil
        var testDescription: String { "\(media)" + (audio ? " with audio" : " video only") + (chunkMs.map { " chunks \($0) ms" } ?? "") }
    }

    static let cases: [Case] = [
        Case(media: "a_720p30_h264_main.mp4", audio: true),
        Case(media: "a_720p30_h264_main.mp4", audio: true, chunkMs: 500),
        Case(media: "b_1080p25_h264_high_bframes.ts", audio: true),
        Case(media: "e_video_only.mp4", audio: false),
    ]

    @Test(arguments: cases)
    func theClipHoldsEveryTrackWholeWithItsDuration(_ c: Case) async throws {
        let out = try TestPaths.scratchDirectory("playable-clip")
        defer { try? FileManager.default.removeItem(at: out) }
        var options = RecordingOptions(output: out)
        options.segmentDuration = .milliseconds(c.segmentMs)
        options.chunkDuration = c.chunkMs.map { .milliseconds($0) }
        options.includeAudio = c.audio
        let report = try await Recorder.recordContinuous(input: TestPaths.media(c.media).path, options: options)
        let session = try #require(report.sessions.first)
        func files(_ track: TrackRecord) throws -> [RecentFile] {
            try ([track.`init`] + track.segments).map { path in
                let url = out.appendingPathComponent(path)
                return RecentFile(file: url, bytes: try FileManager.default.attributesOfItem(atPath: url.path)[.size] as! Int)
            }
        }
        let video = try #require(session.tracks.first { $0.kind == .video })
        let audio = session.tracks.first { $0.kind == .audio }
        #expect((audio != nil) == c.audio)
        let tracks = RecentTracks(video: try files(video), audio: try audio.map(files))

        let parts = try ClipParts(playing: tracks)
        #expect(parts.hasAudio == c.audio)
        // Nothing is copied: every segment file is served whole, once, and only the new moov is made here.
        let served = parts.parts.compactMap(\.file)
        #expect(Set(served) == Set((tracks.video.dropFirst() + (tracks.audio ?? []).dropFirst()).map(\.file)) && served.count == Set(served).count)
        let made = parts.parts.filter { $0.file == nil }.map(\.bytes).reduce(0, +)
        #expect(made < 4096, "only the ftyp and moov are made: \(made) bytes")

        let clip = out.appendingPathComponent("clip.mp4")
        try Data(try Self.bytes(of: parts)).write(to: clip)

        // The header says how long the clip is, and has both tracks with distinct IDs.
        let header = try CMAFHeader(bytes: try Self.bytes(of: parts), fileName: "clip")
        #expect(header.trackCount == (c.audio ? 2 : 1))
        let seconds = Double(header.movieDuration ?? 0) / Double(header.movieTimescale ?? 1)
        let fragmentSeconds = Double(header.fragmentDuration ?? 0) / Double(header.movieTimescale ?? 1)
        #expect(abs(seconds - session.duration) < 0.1 && abs(fragmentSeconds - seconds) < 0.001,
                "mvhd \(seconds) s, mehd \(fragmentSeconds) s, recorded \(session.duration) s")

        // FFmpeg reads it as one file: its streams, its duration, and every frame decoded without a complaint.
        let probe = try await ProcessRun.run(URL(fileURLWithPath: "/usr/bin/ffprobe"), [
            "-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames:format=duration",
            "-of", "json", clip.path,
        ])
        #expect(probe.succeeded && probe.stderr.isEmpty, "\(probe.stderr)")
        struct Probe: Decodable {
            struct Stream: Decodable { var codec_type: String; var nb_read_frames: String? }
            struct Format: Decodable { var duration: String? }
            var streams: [Stream]
            var format: Format
        }
        let facts = try JSONDecoder().decode(Probe.self, from: Data(probe.stdout.utf8))
        #expect(facts.streams.map(\.codec_type) == (c.audio ? ["video", "audio"] : ["video"]))
        let recordedFrames = try Self.sampleCount(of: tracks.video)
        #expect(facts.streams.first?.nb_read_frames == "\(recordedFrames)", "every recorded picture")
        if let audioFiles = tracks.audio {
            #expect(facts.streams.last?.nb_read_frames == "\(try Self.sampleCount(of: audioFiles))", "every recorded audio frame")
        }
        let duration = Double(facts.format.duration ?? "") ?? 0
        #expect(abs(duration - session.duration) < 0.15, "ffprobe says \(duration) s, recorded \(session.duration) s")
        let decode = try await ProcessRun.run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-v", "error", "-xerror", "-i", clip.path, "-f", "null", "-",
        ])
        #expect(decode.succeeded && decode.stderr.isEmpty, "\(decode.stderr)")
    }

    /// The clip's bytes as the route serves them: the parts in order, patches written over the files' bytes.
    static func bytes(of clip: ClipParts) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for part in clip.parts {
            guard let file = part.file else { bytes += part.made; continue }
            var data = [UInt8](try Data(contentsOf: file))
            #expect(data.count == part.bytes)
            for patch in part.patches { data.replaceSubrange(patch.offset ..< patch.offset + patch.bytes.count, with: patch.bytes) }
            bytes += data
        }
        return bytes
    }

    /// Samples in a track's segment files, read with the CMAF parser.
    static func sampleCount(of files: [RecentFile]) throws -> Int {
        let header = try CMAFHeader(bytes: [UInt8](try Data(contentsOf: files[0].file)))
        return try files.dropFirst().map { try CMAFSegment(bytes: [UInt8](try Data(contentsOf: $0.file)), fileName: "s", header: header).sampleCount }
            .reduce(0, +)
    }
}
