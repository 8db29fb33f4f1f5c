import Foundation
import Testing
import TestSupport

/// `pushav serve` end to end, one real process per test: these tests share the machine's cores with real-time media,
/// so they run one after another (the timing assertions measure the product, not the contention).
@Suite(.serialized, .timeLimit(.minutes(2))) struct ServeEndToEndTests {}

/// A TestMedia file's motion intervals and length (TestMedia/truth.json), to place events on its timeline.
struct MediaTruth {
    struct Motion {
        var start: Double
        var end: Double
    }

    let duration: Double
    let motion: [Motion]

    init(_ name: String) throws {
        let all = try JSONSerialization.jsonObject(with: Data(contentsOf: TestPaths.media("truth.json"))) as? [String: Any]
        let file = try #require(all?[name] as? [String: Any])
        duration = try #require(file["duration"] as? Double)
        motion = try #require(file["motion"] as? [[String: Any]]).map {
            Motion(start: $0["start"] as? Double ?? -1, end: $0["end"] as? Double ?? -1)
        }
    }
}

extension ServeEndToEndTests {
    static let media = "a_720p30_h264_main.mp4"

    /// The first pass (index) in which a motion interval starts at least `margin` seconds after now, with that motion:
    /// a connection set up now sees all of it.
    static func nextMotion(_ truth: MediaTruth, log: ServeLog, margin: Double = 0.5) throws -> (pass: Int, motion: Int) {
        let now = try #require(log.position(of: .now), "no pass started yet")
        if let index = truth.motion.indices.first(where: { truth.motion[$0].start >= now.seconds + margin }) {
            return (now.pass, index)
        }
        return (now.pass + 1, 0)
    }

    /// A clip as `pushav record` cuts it from the whole file offline (same detector, same rules): the oracle for
    /// where the live engine's clips must begin and end on the file's timeline.
    struct OfflineClip {
        var trigger: Double
        var end: Double
        var endReason: String
    }

    static func offlineClips(_ media: String, initial: Int, augmentation: Int, max: Int, blind: Int) async throws -> [OfflineClip] {
        let out = try Fixtures.scratchDirectory("offline")
        defer { try? FileManager.default.removeItem(at: out) }
        let (status, output) = try await Fixtures.run(Fixtures.pushav.path, [
            "record", TestPaths.media(media).path, "--out", out.path, "--initial", "\(initial)", "--augmentation",
            "\(augmentation)", "--max-duration", "\(max)", "--blind", "\(blind)", "--pre-roll", "0",
        ])
        try #require(status == 0, "\(output)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("report.json"))) as? [String: Any]
        return try #require(report?["sessions"] as? [[String: Any]]).map {
            OfflineClip(trigger: $0["trigger"] as? Double ?? -1, end: $0["end"] as? Double ?? -1, endReason: $0["endReason"] as? String ?? "")
        }
    }

    /// Waits until pass `pass` of the file is at least `seconds` in.
    static func waitUntil(pass: Int, at seconds: Double, log: ServeLog, timeout: Duration = .seconds(40)) async throws {
        try await Fixtures.waitUntil("pass \(pass) at \(seconds) s", timeout: timeout) {
            let starts = log.passStarts
            return starts.count > pass && (ContinuousClock.now - starts[pass]).inSeconds >= seconds
                || starts.count > pass + 1
        }
    }

    /// TC-PAVST-2.12/2.13 through the real recorder on a looped file with two known motions (4.03–6.0 s and
    /// 12.03–14.5 s). Three Motion connections on one camera, all Active before the first motion:
    /// - `blind` (I 2, A 1, M 10, B 8): Begin (Motion) within 5 s of the first motion; End where `pushav record` ends
    ///   the same clip offline (t0 + I + k·A: the detector sees the box until its reference catches up, so the clip
    ///   augments more than once); the second motion is detected inside its blind window: no second Begin.
    /// - `open` (same, B 0): a second Begin for the second motion (so the blind window did hide a real motion).
    /// - `capped` (I 2, A 5, M 3): End at t0 + MaxDuration, reported as `maxDuration`.
    /// Each Begin's session number is the session_<N> uploaded for that connection.
    @Test func motionBeginsWithinFiveSecondsEndsOnTimeAndHonoursTheBlindWindow() async throws {
        let truth = try MediaTruth(Self.media)
        let offline = try await Self.offlineClips(Self.media, initial: 2, augmentation: 1, max: 10, blind: 0)
        try #require(offline.count == 2, "\(offline)")
        try await ServeScenario.run { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            var ids: [String: Int] = [:]
            for (name, control) in [("blind", (2, 1, 10, 8)), ("open", (2, 1, 10, 0)), ("capped", (2, 5, 3, 0))] {
                let id = try await serve.allocate(scenario.options(
                    path: "\(name)/", trigger: .motion(initial: control.0, augmentation: control.1, max: control.2, blind: control.3)))
                try await serve.setActive(id)
                ids[name] = id
            }
            let (blind, open, capped) = (ids["blind"]!, ids["open"]!, ids["capped"]!)
            // A pass in which all three were Active before its first motion.
            let next = try Self.nextMotion(truth, log: serve.log)
            let pass = next.motion == 0 ? next.pass : next.pass + 1
            try await Self.waitUntil(pass: pass, at: 0, log: serve.log)
            let passStart = serve.log.passStarts[pass]
            let position = { (event: EventFeed.Event) in (event.time - passStart).inSeconds }
            let (motion1, motion2) = (truth.motion[0], truth.motion[1])

            // `open` records the second motion too: wait for its End, by then `blind`'s window has covered it.
            try await events.wait("open: two Begins and two Ends", timeout: .seconds(40)) { all in
                all.filter { $0.connectionID == open && $0.time > passStart }.count >= 4
            }
            let inPass = { (id: Int) in events.events(of: id).filter { $0.time > passStart } }
            let blindEvents = inPass(blind), openEvents = inPass(open), cappedEvents = inPass(capped)
            let at = { (events: [EventFeed.Event]) in events.map { "\($0) @\(String(format: "%.3f", position($0)))" } }
            let summary = "blind \(at(blindEvents)), open \(at(openEvents)), capped \(at(cappedEvents)); offline \(offline)"

            // Begin within 5 s of the motion's start, as Motion; End where the offline recording ends that clip.
            try #require(blindEvents.count == 2 && blindEvents[0].isBegin && !blindEvents[1].isBegin, "\(summary)")
            let latency1 = position(blindEvents[0]) - motion1.start
            #expect(blindEvents[0].triggerType == 1, "\(blindEvents[0])")
            #expect(latency1 >= 0 && latency1 <= 5, "Begin \(latency1) s after the motion started; \(summary)")
            let endLag = position(blindEvents[1]) - offline[0].end
            #expect(endLag >= -0.1 && endLag <= 1, "End \(endLag) s after the offline clip's end; \(summary)")
            #expect(offline[0].endReason == "motionDetectedDuration", "\(offline)")
            // `open` was activated by the second motion, inside `blind`'s window [End, End + 8 s).
            try #require(openEvents.count == 4 && openEvents[2].isBegin, "\(summary)")
            let latency2 = position(openEvents[2]) - motion2.start
            #expect(latency2 >= 0 && latency2 <= 5, "second Begin \(latency2) s after the second motion; \(summary)")
            #expect(openEvents[2].time > blindEvents[1].time && openEvents[2].time - blindEvents[1].time < .seconds(8), "\(summary)")
            #expect(openEvents.map(\.session) == [1, 1, 2, 2], "\(summary)")
            let endLag2 = position(openEvents[3]) - offline[1].end
            #expect(endLag2 >= -0.1 && endLag2 <= 1, "second End \(endLag2) s after the offline clip's end; \(summary)")
            // MaxDuration: I + A exceeds M = 3, so the clip ends at t0 + 3 s (t0: the offline trigger), reported as such.
            try #require(cappedEvents.count >= 2, "\(summary)")
            let cappedLag = position(cappedEvents[1]) - (offline[0].trigger + 3)
            #expect(cappedLag >= -0.1 && cappedLag <= 1, "capped End \(cappedLag) s after t0 + 3 s; \(summary)")
            let clips = try #require(try await serve.camera()["recentClips"] as? [[String: Any]])
            let reason = { (id: Int, session: Int) in
                clips.first { $0["connectionID"] as? Int == id && $0["cmafSessionNumber"] as? Int == session }?["endReason"] as? String
            }
            #expect(reason(capped, 1) == "maxDuration", "\(clips)")
            #expect(reason(blind, 1) == "motionDetectedDuration", "\(clips)")
            print("serve motion: Begin latency after the motion's start \(String(format: "%.3f", latency1)) s (motion at "
                  + "\(motion1.start) s), \(String(format: "%.3f", latency2)) s (motion at \(motion2.start) s); "
                  + "Begin after the detector's trigger frame \(String(format: "%.3f", position(blindEvents[0]) - offline[0].trigger)) s; "
                  + "End after the clip's end \(String(format: "%.3f", endLag)) s")

            // The uploaded session numbers are the events'.
            try await Fixtures.waitUntil("sessions uploaded", timeout: .seconds(20)) {
                let stored = Set(ingest.endpoint.storedPaths)
                return stored.contains("blind/session_1/video/video.init") && stored.contains("open/session_2/video/video.init")
                    && stored.contains("capped/session_1/video/video.init")
            }
            #expect(!ingest.endpoint.storedPaths.contains { $0.hasPrefix("blind/session_2/") })
        }
    }

    /// TC-PAVST-2.12's Inactive steps: a Motion connection left Inactive records and uploads nothing across a motion
    /// (which the camera did analyse); SetTransportStatus Active → the next motion gives a Begin within 5 s.
    @Test func inactiveRecordsNothingAndActiveRecordsTheNextMotion() async throws {
        let truth = try MediaTruth(Self.media)
        let offline = try await Self.offlineClips(Self.media, initial: 2, augmentation: 1, max: 10, blind: 0)
        try #require(offline.count == truth.motion.count, "\(offline)")
        try await ServeScenario.run { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            let id = try await serve.allocate(scenario.options(trigger: .motion(initial: 2, augmentation: 1, max: 10, blind: 0)))
            let motionBefore = try await serve.camera()["lastMotion"] as? String
            let (pass, index) = try Self.nextMotion(truth, log: serve.log)
            let motion = truth.motion[index]
            // Past the motion and past t0 + D, where the same clip ends offline (rule 8: turning Active before then
            // would record the remainder at once).
            try await Self.waitUntil(pass: pass, at: max(motion.end, offline[index].end) + 0.5, log: serve.log)
            let motionAfter = try await serve.camera()["lastMotion"] as? String
            #expect(motionAfter != nil && motionAfter != motionBefore, "the camera analysed no motion: \(motionAfter ?? "nil")")
            #expect(events.events(of: id).isEmpty, "\(events.events)")
            #expect(ingest.endpoint.arrivals.isEmpty && ingest.endpoint.started.isEmpty, "\(ingest.endpoint.arrivals)")

            try await serve.setActive(id)
            let activated = ContinuousClock.now
            let next = index + 1 < truth.motion.count ? (pass, truth.motion[index + 1]) : (pass + 1, truth.motion[0])
            let all = try await events.wait("Begin after Active", timeout: .seconds(30)) { $0.contains { $0.isBegin } }
            let begin = try #require(all.first { $0.isBegin })
            try await Self.waitUntil(pass: next.0, at: 0, log: serve.log, timeout: .seconds(1))
            let nextStart = serve.log.passStarts[next.0]
            let latency = (begin.time - nextStart).inSeconds - next.1.start
            #expect(begin.time > activated && begin.connectionID == id && begin.triggerType == 1 && begin.session == 1, "\(begin)")
            #expect(latency >= 0 && latency <= 5, "Begin \(latency) s after the motion started")
            print("serve motion: Begin latency after Active + motion \(String(format: "%.3f", latency)) s")
            try await events.wait("End", timeout: .seconds(15)) { $0.contains { !$0.isBegin } }
            try await Fixtures.waitUntil("session_1 uploaded", timeout: .seconds(20)) {
                ingest.endpoint.storedPaths.contains("session_1/video/video.init")
                    && ingest.endpoint.storedPaths.contains { $0.hasPrefix("session_1/video/segment_") }
            }
        }
    }
}
