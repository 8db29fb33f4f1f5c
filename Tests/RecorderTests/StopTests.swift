import CMAF
import Foundation
import Recorder
import Synchronization
import Testing
import Timeline

/// `RecordingStop`: a requested stop is a normal end. Open clips end at the last frame read as `interrupted`, their
/// segments and clip MP4 are finished, and the report comes back (no error).
@Suite struct StopTests {
    /// Continuous: stopped right after segment 1002 is written; the session ends where reading stopped, the segment
    /// that was open then is on disk too, and every file is valid CMAF.
    @Test func stopEndsTheOpenSessionAtTheLastFrameRead() async throws {
        let out = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let stop = RecordingStop()
        var options = RecordingOptions(output: out)
        options.segmentDuration = .milliseconds(2000)
        options.events = { event in
            if case .segmentFinished(_, "video", 1002, _, _) = event { stop.request() }
        }
        let report = try await Recorder.recordContinuous(input: Fixtures.media("a_720p30_h264_main.mp4").path,
                                                         options: options, stop: stop)
        let stoppedAt = try #require(report.stoppedAt)
        // Segment 1002 ends at the keyframe at 4 s; reading stops within the packets that were already demuxed.
        #expect(stoppedAt > 4 && stoppedAt < 5, "stopped at \(stoppedAt) s")
        try #require(report.sessions.count == 1)
        let session = report.sessions[0]
        #expect(session.endReason == "interrupted")
        #expect(session.end == stoppedAt && report.error == nil)

        let video = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: "video")
        #expect(video.files.count == 3, "segments \(video.files.map(\.name))")
        #expect(abs(video.totalDuration - session.duration) < 1e-6, "video \(video.totalDuration) s, session \(session.duration) s")
        let violations = CMAFConformance(expectations: .init(segmentDuration: 2, keyFrameInterval: 2))
            .check(header: video.headerFile, segments: video.files).filter { $0.severity == .error }
        #expect(violations.isEmpty, "\(violations)")
        let clip = try await ClipProbe.probe(out.appendingPathComponent("clips/session_1.mp4"))
        #expect(abs(clip.videoDuration - session.duration) < 0.05, "clip \(clip.videoDuration) s, session \(session.duration) s")
    }

    /// Motion: a clip open when the stop comes ends there as `interrupted`, not at t0 + D.
    @Test func stopEndsAnOpenMotionClip() async throws {
        let out = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let stop = RecordingStop()
        let policy = ClipPolicy(trigger: .motion, timeControl: .matterDefaults, maxPreRoll: .milliseconds(2000),
                                motionFilter: MotionTriggerFilter(sensitivity: 5), output: out)
        var options = RecordingOptions(output: out, policies: [policy])
        options.segmentDuration = .milliseconds(2000)
        options.events = { event in
            if case .sessionStarted = event { stop.request() }
        }
        let report = try await Recorder.record(input: Fixtures.media("a_720p30_h264_main.mp4").path, options: options, stop: stop)
        try #require(report.sessions.count == 1, "\(report.sessions.map(\.endReason))")
        let clip = report.sessions[0]
        let stoppedAt = try #require(report.stoppedAt)
        #expect(clip.endReason == "interrupted")
        #expect(clip.end == stoppedAt && clip.end < clip.trigger! + 10)
        #expect(clip.duration > 0)
        let video = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: "video")
        #expect(abs(video.totalDuration - clip.duration) < 1e-6)
        #expect(video.segments.first?.firstSampleIsIDR == true)
    }

    /// A stop that comes before the input is open records nothing and says so (no report, no failure to read).
    @Test func stopBeforeTheInputOpensRecordsNothing() async throws {
        let out = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let stop = RecordingStop()
        #expect(stop.request())
        #expect(!stop.request(), "a second request reports that it is not the first")
        await #expect(throws: RecordingStoppedBeforeStart.self) {
            try await Recorder.recordContinuous(input: Fixtures.media("a_720p30_h264_main.mp4").path,
                                                options: RecordingOptions(output: out), stop: stop)
        }
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1").path))
    }

    /// Actions registered with `whenRequested` run once: on request, or at once when it was already requested.
    @Test func whenRequestedRunsOnce() {
        let stop = RecordingStop()
        let runs = Mutex(0)
        stop.whenRequested { runs.withLock { $0 += 1 } }
        #expect(runs.withLock { $0 } == 0)
        stop.request()
        stop.request()
        #expect(runs.withLock { $0 } == 1)
        stop.whenRequested { runs.withLock { $0 += 1 } }
        #expect(runs.withLock { $0 } == 2)
    }
}
