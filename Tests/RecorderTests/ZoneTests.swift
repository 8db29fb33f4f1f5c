import Foundation
import Testing

/// `--zone` end to end on `a_720p30_h264_main.mp4`: a 160×160 box at (200, 300) moves right 600 px (event 0,
/// 4.0–6.0 s, through the left half and along y 300…460) and later up 300 px (event 1, 12.0–14.5 s, at x 800…960).
/// Clips last 2 s with a 4 s blind window, so each event can start at most one clip.
@Suite("Motion zones")
struct ZoneTests {
    /// (case, zone flags, the truth motion intervals that start a clip, in order)
    static let cases: [(String, [String], [Int])] = [
        ("motion inside the zone triggers, motion outside it does not", ["--zone", "1:0,0,640,720"], [0]),
        ("only the second event reaches the upper right", ["--zone", "2:640,0,1280,250"], [1]),
        ("no motion in the zone, no clip", ["--zone", "3:0,560,1280,720"], []),
        ("the documented example: a zone without and a zone with its own sensitivity",
         ["--zone", "1:0,0,640,720", "--zone", "2:640,0,1280,250:8"], [0, 1]),
        // A strip the box's lower edge (y 450…460) barely enters: seen at sensitivity 10, not at 1.
        ("per-zone sensitivity 10 sees the edge of the box", ["--zone", "4:0,450,1280,720:10"], [0, 1]),
        ("per-zone sensitivity 1 does not", ["--zone", "4:0,450,1280,720:1"], []),
        ("--sensitivity applies to zones without their own", ["--sensitivity", "10", "--zone", "4:0,450,1280,720"], [0, 1]),
        ("--sensitivity 1 on the same zone", ["--sensitivity", "1", "--zone", "4:0,450,1280,720"], []),
        ("a polygon zone", ["--zone", "5:0,0,640,0,640,720"], [0]),
    ]

    @Test(arguments: cases.map(\.0))
    func zoneDecidesWhichMotionStartsAClip(name: String) async throws {
        let (_, flags, expected) = Self.cases.first { $0.0 == name }!
        let truth = try MediaTruth.of("a_720p30_h264_main.mp4")
        let events = try #require(truth.motion)
        let dir = try Fixtures.scratchDirectory(name)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out")
        let result = try await PushAVBinary.run(["record", Fixtures.media("a_720p30_h264_main.mp4").path, "--out", out.path,
                                           "--initial", "2", "--augmentation", "0", "--max-duration", "2", "--blind", "4",
                                           "--no-clip", "--no-audio", "--json"] + flags)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let triggers = ((report?["sessions"] as? [[String: Any]]) ?? []).compactMap { $0["trigger"] as? Double }
        #expect(triggers.count == expected.count, "triggers \(triggers), expected events \(expected)")
        for (trigger, event) in zip(triggers, expected) {
            // Activation comes while the box moves (or within the 2 s it takes a stopped box to stop counting).
            #expect(trigger >= events[event].start && trigger <= events[event].end + 2,
                    "trigger \(trigger) is not in event \(event) \(events[event].start)–\(events[event].end)")
        }
    }
}
