import CMAF
import Domain
import Foundation
import Recorder
import Testing
import Timeline

/// One demux, one analysis, several transport connections: each gets its own sessions from the same packets.
@Suite struct MultiConnectionTests {
    @Test func oneInputFeedsEveryConnectionItsOwnClips() async throws {
        let out = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let motion = ClipPolicy(
            trigger: .motion, timeControl: ClipTimeControl(initial: 3, augmentation: 1, max: 4, blind: 2),
            maxPreRoll: .milliseconds(2000), motionFilter: MotionTriggerFilter(sensitivity: 5),
            output: out.appendingPathComponent("connection-1"), firstSession: 7)
        let continuous = ClipPolicy(trigger: .continuous, maxPreRoll: .zero, continuousSessionLength: .seconds(8),
                                    output: out.appendingPathComponent("connection-2"))
        var options = RecordingOptions(output: out, policies: [motion, continuous])
        options.segmentDuration = .milliseconds(2000)
        let report = try await Recorder.record(input: Fixtures.media("a_720p30_h264_main.mp4").path, options: options)

        let motionClips = report.sessions.filter { $0.triggerType == "motion" }
        let continuousSessions = report.sessions.filter { $0.triggerType == "continuous" }
        // Motion: one 4 s clip per motion interval, numbered from the connection's next session number.
        #expect(motionClips.map(\.session) == [7, 8])
        #expect(motionClips.allSatisfy { $0.endReason == "maxDuration" })
        // Continuous: new session at the first keyframe 8 s after the previous one's start, no gap: 0–8, 8–16, 16–20.
        #expect(continuousSessions.map(\.session) == [1, 2, 3])
        #expect(continuousSessions.map(\.start) == [0, 8, 16])
        #expect(continuousSessions.map(\.end) == [8, 16, 20])
        #expect(continuousSessions.dropLast().allSatisfy { $0.endReason == "sessionLength" })
        for (directory, sessions) in [("connection-1", [7, 8]), ("connection-2", [1, 2, 3])] {
            for session in sessions {
                let video = try WrittenTrack(directory: out.appendingPathComponent("\(directory)/session_\(session)"), track: "video")
                #expect(video.segments.first?.firstSampleIsIDR == true)
                let violations = CMAFConformance(expectations: .init(segmentDuration: 2, keyFrameInterval: 2))
                    .check(header: video.headerFile, segments: video.files).filter { $0.severity == .error }
                #expect(violations.isEmpty, "\(directory)/session_\(session): \(violations)")
            }
        }
        // Continuous sessions tile the input: their video adds up to its whole length.
        let total = try [1, 2, 3].map {
            try WrittenTrack(directory: out.appendingPathComponent("connection-2/session_\($0)"), track: "video").totalDuration
        }.reduce(0, +)
        #expect(abs(total - 20) < 1e-9)
    }
}
