import CMAF
import Foundation
import Recorder
import Testing
import Timeline

/// One way to record a test file, and what the written CMAF must then look like.
struct RecordingCase: CustomTestStringConvertible, Sendable {
    var media: String
    var segmentMs: Int64 = 4000
    var chunkMs: Int64? = nil
    var audio = true
    /// Video sample entry we expect (`hvc1` must stay HEVC).
    var sampleEntry = "avc1"
    var transcoded = false
    var testDescription: String {
        "\(media) seg \(segmentMs) ms" + (chunkMs.map { " chunk \($0) ms" } ?? "") + (audio ? "" : " no audio")
    }
}

/// The written session, parsed back with our own box parser (the report is not trusted here).
struct WrittenTrack {
    var header: CMAFHeader
    var segments: [CMAFSegment]
    var files: [CMAFFile]
    var headerFile: CMAFFile

    init(directory: URL, track: String) throws {
        let initURL = directory.appendingPathComponent("\(track)/\(track).init")
        headerFile = CMAFFile(name: initURL.path, bytes: [UInt8](try Data(contentsOf: initURL)))
        let parsedHeader = try CMAFHeader(bytes: headerFile.bytes, fileName: headerFile.name)
        header = parsedHeader
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent(track).path)
            .filter { $0.hasPrefix("segment_") }.sorted()
        let loaded = try names.map {
            let url = directory.appendingPathComponent("\(track)/\($0)")
            return CMAFFile(name: url.path, bytes: [UInt8](try Data(contentsOf: url)))
        }
        files = loaded
        segments = try loaded.map { try CMAFSegment(bytes: $0.bytes, fileName: $0.name, header: parsedHeader) }
    }

    var timescale: Double { Double(header.mediaTimescale ?? 1) }
    var start: Double { Double(segments.first?.startDecodeTime ?? 0) / timescale }
    var totalDuration: Double { segments.map(\.durationSeconds).reduce(0, +) }
}

@Suite("Continuous recording of every TestMedia file", .serialized)
struct ContinuousRecordingTests {
    static let cases: [RecordingCase] = [
        RecordingCase(media: "a_720p30_h264_main.mp4"),
        RecordingCase(media: "a_720p30_h264_main.mp4", segmentMs: 2000),
        RecordingCase(media: "a_720p30_h264_main.mp4", segmentMs: 4000, chunkMs: 1000),
        RecordingCase(media: "b_1080p25_h264_high_bframes.ts"),
        RecordingCase(media: "b_1080p25_h264_high_bframes.ts", segmentMs: 2000, chunkMs: 500),
        RecordingCase(media: "c_hevc.mp4", sampleEntry: "hvc1"),
        RecordingCase(media: "d_mpeg4_mp3.avi", segmentMs: 2000, transcoded: true),
        RecordingCase(media: "e_video_only.mp4"),
        RecordingCase(media: "f_lighting_switch.mp4", audio: false),
        RecordingCase(media: "g_slow_object.mp4", segmentMs: 2000, chunkMs: 400),
        RecordingCase(media: "h_hevc_open_gop.mp4", sampleEntry: "hvc1"),
    ]

    @Test(arguments: cases)
    func writtenCMAFMatchesTheInput(_ c: RecordingCase) async throws {
        let truth = try MediaTruth.of(c.media)
        let out = try Fixtures.scratchDirectory(c.media)
        defer { try? FileManager.default.removeItem(at: out) }
        var options = RecordingOptions(output: out)
        options.segmentDuration = .milliseconds(c.segmentMs)
        options.chunkDuration = c.chunkMs.map { .milliseconds($0) }
        options.includeAudio = c.audio
        let report = try await Recorder.recordContinuous(input: Fixtures.media(c.media).path, options: options)
        try #require(report.sessions.count == 1)
        // A clean file needs no repair: every packet is passed on with the timestamps it came with.
        #expect(report.input.damage.droppedPackets == 0 && report.input.damage.repairedTimestamps == 0,
                "\(report.input.damage)")
        #expect(report.sessions[0].tracks.allSatisfy { $0.droppedPackets == nil && $0.repairedTimestamps == nil })
        let session = out.appendingPathComponent("session_1")
        let video = try WrittenTrack(directory: session, track: "video")
        let frame = 1 / truth.videoFps
        let segmentSeconds = Double(c.segmentMs) / 1000

        // Every checklist item (1–22) holds for the video track.
        let videoViolations = CMAFConformance(expectations: .init(
            segmentDuration: segmentSeconds, chunks: c.chunkMs != nil, keyFrameInterval: truth.videoGop))
            .check(header: video.headerFile, segments: video.files).filter { $0.severity == .error }
        #expect(videoViolations.isEmpty, "\(videoViolations)")
        #expect(video.header.sampleEntry?.type.description == c.sampleEntry)
        #expect(report.sessions[0].tracks[0].transcoded == c.transcoded)

        // The whole input is there: durations add up to the video's length within one frame, starting at tfdt 0.
        #expect(video.start == 0)
        let inputVideoDuration = truth.video.duration ?? truth.duration
        #expect(abs(video.totalDuration - inputVideoDuration) <= frame + 1e-9,
                "video \(video.totalDuration) s vs input \(inputVideoDuration) s")
        if !c.transcoded, let frames = truth.video.frames {
            #expect(video.segments.map(\.sampleCount).reduce(0, +) == frames)
        }

        // Each segment starts with SAP 1/2 (an IDR, or a CRA without RASL: NAL types, not only the flag) and lasts
        // exactly SegmentDuration but the last.
        for segment in video.segments {
            #expect(segment.firstSampleIsRandomAccessPoint == true, "\(segment.fileName) does not start with a random access point")
            #expect(segment.firstSampleIsSync == true)
        }
        let gopDividesSegment = (segmentSeconds / truth.videoGop).rounded() == segmentSeconds / truth.videoGop
        for segment in video.segments.dropLast() {
            if gopDividesSegment {
                #expect(Int64(segment.duration) == Int64((segmentSeconds * video.timescale).rounded()),
                        "\(segment.fileName) lasts \(segment.durationSeconds) s")
            } else {
                #expect(segment.durationSeconds >= segmentSeconds && segment.durationSeconds < segmentSeconds + truth.videoGop)
            }
        }
        if let chunkMs = c.chunkMs {
            let perSegment = Int((Double(c.segmentMs) / Double(chunkMs)).rounded(.up))
            for segment in video.segments.dropLast() {
                #expect(segment.chunkCount == perSegment, "\(segment.fileName): \(segment.chunkCount) chunks")
            }
        } else {
            #expect(video.segments.allSatisfy { $0.chunkCount == 1 })
        }

        // Audio: conforms, is cut at the video's segment boundaries (to the audio frame), and keeps its offset.
        let audioDirectory = session.appendingPathComponent("audio")
        guard c.audio, let audioTruth = truth.audio else {
            #expect(!FileManager.default.fileExists(atPath: audioDirectory.path))
            return
        }
        let audio = try WrittenTrack(directory: session, track: "audio")
        let audioFrame = 1024 / audio.timescale
        let audioViolations = CMAFConformance(expectations: .init(
            segmentDuration: segmentSeconds, chunks: c.chunkMs != nil, audioDurationTolerance: audioFrame + 1e-6))
            .check(header: audio.headerFile, segments: audio.files).filter { $0.severity == .error }
        #expect(audioViolations.isEmpty, "\(audioViolations)")
        #expect(audio.header.codecString == "mp4a.40.2")
        #expect(audio.segments.count == video.segments.count)
        // Audio before the first video frame is not part of the clip; the first audio frame at or after it starts
        // the audio track, at its exact offset from the video.
        let v0 = truth.video.firstPacketPts ?? 0
        if !c.transcoded, let a0 = audioTruth.firstPacketPts {
            let sourceFrame = 1024 / Double(audioTruth.sampleRate ?? 48000)
            let expectedOffset = a0 + ((v0 - a0) / sourceFrame - 1e-9).rounded(.up) * sourceFrame - v0
            #expect(abs(audio.start - expectedOffset) < 0.001, "audio starts at \(audio.start) s, expected \(expectedOffset) s")
        } else {
            #expect(audio.start >= 0 && audio.start < audioFrame)
        }
        for (a, v) in zip(audio.segments, video.segments) {
            let videoStart = Double(v.startDecodeTime ?? 0) / video.timescale
            let audioStart = Double(a.startDecodeTime ?? 0) / audio.timescale
            #expect(audioStart >= videoStart - 1e-9 && audioStart < videoStart + audioFrame,
                    "\(a.fileName) starts at \(audioStart) s, video segment at \(videoStart) s")
        }
    }
}

@Suite("Our output against our own checker")
struct OwnCheckerTests {
    /// Not even a warning: every sample entry carries a btrt box (DASH-IF ingest SHOULD), whether the track is
    /// copied from a file that declares its bit rate (MP4), from one that does not (MPEG-TS video), or transcoded.
    @Test(arguments: ["a_720p30_h264_main.mp4", "b_1080p25_h264_high_bframes.ts", "c_hevc.mp4", "d_mpeg4_mp3.avi"])
    func recordedTracksPassWithoutWarnings(media: String) async throws {
        let out = try Fixtures.scratchDirectory(media)
        defer { try? FileManager.default.removeItem(at: out) }
        var options = RecordingOptions(output: out)
        options.segmentDuration = .milliseconds(2000)
        _ = try await Recorder.recordContinuous(input: Fixtures.media(media).path, options: options)
        for track in ["video", "audio"] {
            let written = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: track)
            #expect(written.header.sampleEntry?.hasBitRateBox == true, "\(track) sample entry has no btrt")
            let violations = CMAFConformance(expectations: .init()).check(header: written.headerFile, segments: written.files)
            #expect(violations.isEmpty, "\(track): \(violations)")
        }
    }
}
