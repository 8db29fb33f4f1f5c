import Domain
import Foundation
import Metrics
import MetricsTestKit
import Motion
import Recorder
import TestSupport
import Testing
import Timeline

/// ``RecordingMetrics`` counted where things happen, over TestMedia's a_720p30_h264_main.mp4 (20 s, 600 frames,
/// motion at 4–6 s and 12–14.5 s), read through the tests' swift-metrics backend. Each case records under a camera
/// label of its own, so the counts start at zero.
@Suite struct RecordingMetricsTests {
    static let media = "a_720p30_h264_main.mp4"

    struct Case: Sendable, CustomTestStringConvertible {
        var camera: String
        /// The connection's trigger filter.
        var filter: MotionTriggerFilter
        var timeControl: ClipTimeControl
        /// Whether the connection is Active.
        var active: Bool
        var motionTriggers: Int
        var clipsBegun: Int
        /// The one reason of ignored triggers that must have counted; the others stay 0.
        var ignored: IgnoredTriggerReason?
        var testDescription: String { camera }
    }

    static let cases: [Case] = [
        // The 4 s motion begins a 1 s clip (D = M: maxDuration); the 30 s blind window then swallows the rest.
        Case(camera: "metrics-blind", filter: MotionTriggerFilter(sensitivity: 5),
             timeControl: ClipTimeControl(initial: 1, augmentation: 1, max: 1, blind: 30), active: true,
             motionTriggers: 1, clipsBegun: 1, ignored: .blind),
        // Only zone 99 triggers, and no zone 99 is configured: the motion is seen, and ignored for its place.
        Case(camera: "metrics-zone", filter: MotionTriggerFilter(zones: [.init(zone: 99, sensitivity: 10)]),
             timeControl: ClipTimeControl(initial: 1, augmentation: 1, max: 1, blind: 0), active: true,
             motionTriggers: 0, clipsBegun: 0, ignored: .zone),
        // Inactive: the motion activates the timeline, nothing is recorded.
        Case(camera: "metrics-inactive", filter: MotionTriggerFilter(sensitivity: 5),
             timeControl: ClipTimeControl(initial: 1, augmentation: 1, max: 1, blind: 0), active: false,
             motionTriggers: 0, clipsBegun: 0, ignored: .inactive),
    ]

    @Test(arguments: cases)
    func triggersAndClipsAreCountedWhereTheyHappen(_ check: Case) async throws {
        let backend = MetricsProbe.backend  // bootstrapped before the recording's metrics are made
        let output = try Fixtures.scratchDirectory("metrics-\(check.camera)")
        defer { try? FileManager.default.removeItem(at: output) }
        var options = RecordingOptions(output: output, policies: [])
        options.alwaysAnalyseMotion = true
        options.control = RecordingControl()
        options.metrics = RecordingMetrics(camera: check.camera)
        var policy = ClipPolicy(trigger: .motion, timeControl: check.timeControl, maxPreRoll: .seconds(4),
                                motionFilter: check.filter, output: output)
        policy.format = SessionFormat(segmentDuration: .milliseconds(2000), chunkDuration: nil, includeAudio: false)
        options.control!.publish(DesiredRecordings(connections: [
            1: DesiredRecording(policy: policy, generation: 1, active: check.active, includeAudio: false),
        ]))
        let report = try await Recorder.record(input: TestPaths.media(Self.media).path, options: options)

        let camera = [("camera", check.camera)]
        func counter(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
            (try? backend.expectCounter(label, dimensions).totalValue) ?? -1
        }
        #expect(counter("pushav_camera_frames_decoded_total", camera) == 600)
        let analysed = counter("pushav_camera_frames_analysed_total", camera)
        #expect(analysed > 0 && analysed <= 600)
        #expect((try? backend.expectTimer("pushav_camera_analysis_seconds", camera).values.count) == Int(analysed))
        #expect(counter("pushav_motion_triggers_total", camera) == Int64(check.motionTriggers))
        #expect(counter("pushav_clips_begun_total", camera) == Int64(check.clipsBegun))
        let ended = ClipEndReason.allCases.map { counter("pushav_clips_ended_total", camera + [("reason", $0.rawValue)]) }
        #expect(ended.reduce(0, +) == Int64(check.clipsBegun))
        for reason in IgnoredTriggerReason.allCases {
            let ignored = counter("pushav_triggers_ignored_total", camera + [("reason", reason.rawValue)])
            if reason == check.ignored { #expect(ignored > 0, "\(reason)") } else { #expect(ignored == 0, "\(reason)") }
        }

        // What was written is what was counted; a 1 s clip is written 1 s long after a pre-roll of at most 4 s.
        let bytesOnDisk = try report.sessions.flatMap(\.tracks).flatMap { [$0.`init`] + $0.segments }.map { path in
            try #require(try FileManager.default.attributesOfItem(atPath: output.appendingPathComponent(path).path)[.size] as? Int)
        }.reduce(0, +)
        #expect(counter("pushav_recorded_bytes_total", camera) == Int64(bytesOnDisk))
        let preRolls = (try? backend.expectRecorder("pushav_clip_preroll_seconds", camera).values) ?? []
        let errors = (try? backend.expectRecorder("pushav_clip_duration_error_seconds", camera).values) ?? []
        #expect(preRolls.count == check.clipsBegun && errors.count == check.clipsBegun)
        #expect(preRolls.allSatisfy { $0 >= 0 && $0 <= 4 }, "\(preRolls)")
        #expect(errors.allSatisfy { $0 < 0.04 }, "\(errors)")
    }
}
