import CMAF
import Domain
import Foundation
import Recorder
import TestSupport
import Testing
import Timeline

/// Streams whose keyframes are not the tidy closed GOPs of most test files: HEVC open GOPs (CRA pictures), a keyframe
/// gap far longer than the stream's interval, no usable keyframe at all, and a pre-roll buffer too small for a clip.
/// Nothing may vanish silently: what cannot be recorded is logged, counted in report.json and fails the CLI run.
@Suite("Keyframes: open GOPs, long gaps, losses", .serialized)
struct KeyframeRecordingTests {
    /// x265 with open GOPs writes a CRA every 2 s and an IDR only first: continuous recording still cuts 4 s
    /// segments, each starting on a CRA, and both our checker and `pushav inspect` accept them.
    @Test func hevcOpenGOPSegmentsStartOnCRAPictures() async throws {
        let media = "h_hevc_open_gop.mp4"
        let truth = try MediaTruth.of(media)
        let out = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try await PushAVBinary.run(["record", Fixtures.media(media).path, "--out", out.path, "--trigger", "continuous", "--json"])
        try #require(result.status == 0, "pushav failed: \(result.stderr)")
        let report = try JSONDecoder().decode(RecordingReport.self, from: Data(result.stdout.utf8))
        #expect(report.sessions.count == 1)
        #expect(report.droppedClips.isEmpty)

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

        let inspect = try await PushAVBinary.run(["inspect", out.appendingPathComponent("session_1").path, "--segment-duration", "4000", "--summary"])
        #expect(inspect.status == 0, "\(inspect.stdout)")
        #expect(inspect.stdout.contains("video.init: vide hvc1") && inspect.stdout.contains("every segment starts with a random access point"),
                "\(inspect.stdout)")
        #expect(!inspect.stdout.contains("19:"), "no item-19 finding, not even a warning: \(inspect.stdout)")
    }

    /// A stream whose only IDR was cut off (H.264 open GOPs: the later I pictures are recovery points, not IDRs): motion
    /// is seen, but the clip has no picture to start on. It is reported, never silently lost.
    @Test func clipWithoutUsableKeyframeIsReportedAndFailsTheRun() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let full = dir.appendingPathComponent("open_gop.ts")
        try await SyntheticVideo.encode(to: full, seconds: 10, motion: (start: 4, end: 6), videoArguments: [
            "-c:v", "libx264", "-bf", "2", "-x264-params", "keyint=10:min-keyint=10:scenecut=0:open-gop=1",
        ])
        let cut = dir.appendingPathComponent("cut.ts")
        try await SyntheticVideo.ffmpeg(["-ss", "2", "-i", full.path, "-c", "copy", "-f", "mpegts", cut.path])

        let out = dir.appendingPathComponent("out")
        let result = try await PushAVBinary.run(["record", cut.path, "--out", out.path, "--initial", "3", "--augmentation", "1",
                                           "--max-duration", "4", "--blind", "10", "--pre-roll", "2000"])
        #expect(result.status == 3, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        #expect(result.stdout.contains("motion: "), "the motion itself was seen: \(result.stdout)")
        #expect(result.stderr.contains("warning: motion clip triggered at") && result.stderr.contains("was not recorded"),
                "stderr: \(result.stderr)")
        let report = try JSONDecoder().decode(RecordingReport.self, from: Data(contentsOf: out.appendingPathComponent("report.json")))
        #expect(report.sessions.isEmpty)
        let dropped = try #require(report.droppedClips.first)
        #expect(report.droppedClips.count == 1)
        #expect(dropped.triggerType == "motion")
        #expect(dropped.reason.contains("no random access picture"))
        let motion = try #require(report.motion.first)
        #expect(abs(dropped.trigger - motion.start) < 0.5, "t0 \(dropped.trigger) vs motion \(motion.start)")
    }

    /// Regular 1 s GOPs, then 9 s without a keyframe (5 s → 14 s), with motion at 13.5 s: MaxPreRollLen 4 s is fine
    /// for the stream's interval, so the gap is logged and counted, and the clip starts on the keyframe before its
    /// trigger with a longer pre-roll, instead of the recording ending with InvalidPreRollLength.
    @Test func longKeyframeGapLengthensThePreRollInsteadOfEndingTheRecording() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("long_gap.mp4")
        try await SyntheticVideo.encode(to: input, seconds: 20, motion: (start: 13.5, end: 15.5), videoArguments: [
            "-c:v", "libx264", "-bf", "0", "-x264-params", "keyint=1000:min-keyint=1000:scenecut=0",
            "-force_key_frames", "0,1,2,3,4,5,14,15,16,17,18,19",
        ])
        let out = dir.appendingPathComponent("out")
        let policy = ClipPolicy(trigger: .motion, timeControl: ClipTimeControl(initial: 3, augmentation: 1, max: 4, blind: 10),
                                maxPreRoll: .milliseconds(4000), output: out)
        let report = try await Recorder.record(input: input.path, options: RecordingOptions(output: out, policies: [policy]))

        #expect(report.error == nil)
        #expect(report.longKeyframeIntervals.count == 1)
        #expect(abs((report.longKeyframeIntervals.longest ?? 0) - 9) < 1e-6, "\(report.longKeyframeIntervals)")
        #expect(report.longKeyframeIntervals.limit == 4)
        let session = try #require(report.sessions.first)
        #expect(report.sessions.count == 1)
        let t0 = try #require(session.trigger)
        #expect(t0 > 13.5 && t0 < 14, "t0 \(t0)")
        #expect(abs(session.start - 5) < 1e-6, "the clip starts on the last keyframe before t0, at 5 s: \(session.start)")
        #expect(abs((session.preRoll ?? 0) - (t0 - 5)) < 1e-6)
        #expect(session.endReason == "maxDuration")
        let video = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: "video")
        #expect(video.segments.first?.firstSampleIsIDR == true)
        #expect(abs(video.totalDuration - (t0 + 4 - 5)) < 0.1 + 1e-6, "the whole clip is there: \(video.totalDuration) s")
        let violations = CMAFConformance().check(header: video.headerFile, segments: video.files).filter { $0.severity == .error }
        #expect(violations.isEmpty, "\(violations)")
    }

    /// A transcoded stream (MPEG-2 video becomes H.264): the encoder hands its pictures out late, so when motion is seen
    /// at 4.3 s the keyframe it forced at 4 s is not in the pre-roll buffer yet. The clip must still start on that
    /// keyframe, before its trigger; it used to start on the next one (8 s), after the trigger, with a negative
    /// pre-roll and 3.7 s of the event missing.
    @Test func transcodedClipStartsOnTheKeyframeBeforeItsTrigger() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("mpeg2.ts")
        try await SyntheticVideo.encode(to: input, seconds: 12, motion: (start: 4.3, end: 6),
                                        videoArguments: ["-c:v", "mpeg2video", "-b:v", "2M", "-f", "mpegts"])
        let out = dir.appendingPathComponent("out")
        let policy = ClipPolicy(trigger: .motion, timeControl: ClipTimeControl(initial: 3, augmentation: 1, max: 4, blind: 10),
                                maxPreRoll: .milliseconds(4000), output: out)
        let report = try await Recorder.record(input: input.path, options: RecordingOptions(output: out, policies: [policy]))

        #expect(report.droppedClips.isEmpty)
        let session = try #require(report.sessions.first)
        #expect(report.sessions.count == 1)
        let t0 = try #require(session.trigger)
        #expect(t0 > 4.2 && t0 < 4.6, "t0 \(t0)")
        #expect(session.tracks.first?.transcoded == true)
        // Rule 9: the first keyframe at or after t0 − 4 s, here the one the transcoder forced at 4 s (its segment grid).
        #expect(abs(session.start - 4) < 1e-6, "the clip starts on the keyframe before t0: \(session.start)")
        #expect(abs((session.preRoll ?? -1) - (t0 - 4)) < 1e-6, "pre-roll \(session.preRoll ?? .nan)")
        let video = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: "video")
        #expect(video.segments.first?.firstSampleIsIDR == true)
    }

    /// A pre-roll buffer too small for what an open clip still has to write: every packet it pushes out is counted,
    /// with the session that lost it, and the recording still finishes.
    @Test func preRollBufferOverflowIsCountedWithTheSessionsThatLostPackets() async throws {
        let out = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let policy = ClipPolicy(trigger: .motion, timeControl: ClipTimeControl(initial: 3, augmentation: 1, max: 4, blind: 2),
                                maxPreRoll: .milliseconds(2000), output: out)
        var options = RecordingOptions(output: out, policies: [policy])
        options.preRollByteLimit = 4096
        let report = try await Recorder.record(input: Fixtures.media("a_720p30_h264_main.mp4").path, options: options)

        let buffer = try #require(report.preRollBuffer)
        #expect(buffer.droppedPackets > 0)
        #expect(buffer.droppedBytes > buffer.droppedPackets)
        #expect(!buffer.affectedSessions.isEmpty)
        // Every session that lost packets is in the report: recorded (with fewer frames), or dropped whole.
        let listed = Set(report.sessions.map(\.session) + report.droppedClips.compactMap(\.session))
        #expect(Set(buffer.affectedSessions).isSubset(of: listed), "\(buffer.affectedSessions), listed \(listed)")

        // With the default limit the same recording loses nothing.
        let again = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: again) }
        let unlimited = try await Recorder.record(
            input: Fixtures.media("a_720p30_h264_main.mp4").path,
            options: RecordingOptions(output: again, policies: [ClipPolicy(trigger: .motion, timeControl: policy.timeControl,
                                                                           maxPreRoll: policy.maxPreRoll, output: again)]))
        #expect(unlimited.preRollBuffer?.droppedPackets == 0)
        #expect(unlimited.preRollBuffer?.affectedSessions == [])
    }
}

/// Small synthetic test videos made with the ffmpeg CLI: a grey 320x240 scene at 10 fps with a 64 px white box that
/// moves 100 px/s (10 px per frame) during `motion`, encoded with the given arguments.
enum SyntheticVideo {
    static func encode(to url: URL, seconds: Int, motion: (start: Double, end: Double), videoArguments: [String]) async throws {
        let x = "20+round(100*clip(t-\(motion.start),0,\(motion.end - motion.start)))"
        try await ffmpeg([
            "-f", "lavfi", "-i", "color=c=0x808080:s=320x240:r=10:d=\(seconds)",
            "-f", "lavfi", "-i", "color=c=white:s=64x64:r=10",
            "-filter_complex", "[0:v][1:v]overlay=x='\(x)':y=88:eval=frame:shortest=1,format=yuv420p[v]",
            "-map", "[v]", "-frames:v", "\(seconds * 10)",
        ] + videoArguments + [url.path])
    }

    /// Runs `ffmpeg -y …` (off the cooperative pool) and throws with its stderr if it fails.
    static func ffmpeg(_ arguments: [String]) async throws {
        try await BlockingWork.runHeavy { try ffmpegBlocking(arguments) }
    }

    private static func ffmpegBlocking(_ arguments: [String]) throws {
        let result = try ProcessRun.runBlocking(URL(fileURLWithPath: "/usr/bin/env"),
                                                ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y"] + arguments)
        guard result.status == 0 else {
            throw FFmpegFailed(message: "ffmpeg \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }

    struct FFmpegFailed: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
