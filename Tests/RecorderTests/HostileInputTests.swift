import CMAF
import Foundation
import Testing

/// Damaged input: never a crash or a hang; timestamp glitches are dropped or repaired (and counted), and whatever is
/// on disk afterwards is valid CMAF.
@Suite("Hostile input", .serialized)
struct HostileInputTests {
    /// An AVI whose video stream header claims 10⁹ frames per second (strh rate 1 000 000 000, scale 1). Computing
    /// the transcoder's GOP length from it used to trap (`Int32(gop)`, signal 4).
    @Test func aviWithAnAbsurdFrameRateIsRecordedWithoutATrap() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var avi = [UInt8](try Data(contentsOf: Fixtures.media("d_mpeg4_mp3.avi")))
        let strh = try #require(Self.find(Array("strh".utf8), in: avi))
        #expect(Array(avi[strh + 8..<strh + 12]) == Array("vids".utf8))
        Self.putLittleEndian(1, at: strh + 8 + 20, in: &avi)  // dwScale
        Self.putLittleEndian(1_000_000_000, at: strh + 8 + 24, in: &avi)  // dwRate
        let input = dir.appendingPathComponent("absurd-rate.avi")
        try Data(avi).write(to: input)
        let out = dir.appendingPathComponent("out")

        let result = try await PushAVBinary.run(["record", input.path, "--out", out.path, "--trigger", "continuous"])
        #expect(result.terminatedBySignal == nil, "pushav crashed: \(result.stderr)")
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try Self.report(out)
        // The header's rate is not believed: the report does not echo it.
        #expect(report.input?["video"]?["frameRate"] == nil)
        try Self.expectValidSessions(out)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1/video/segment_1001.m4s").path))
    }

    /// MPEG-TS with damaged PES timestamps: a DTS going backwards, a duplicate, a PTS before its DTS, an absurd jump
    /// and an outlier far back. It used to end the recording at the first one (`write video sample: Invalid
    /// argument`), leaving session_1 with init segments only; now every glitch is dropped or repaired and counted.
    @Test func transportStreamWithDamagedTimestampsKeepsRecording() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var ts = [UInt8](try Data(contentsOf: Fixtures.media("b_1080p25_h264_high_bframes.ts")))
        let damaged = Self.damageTimestamps(&ts)
        #expect(damaged == 7)
        let input = dir.appendingPathComponent("damaged.ts")
        try Data(ts).write(to: input)
        let out = dir.appendingPathComponent("out")

        let result = try await PushAVBinary.run(["record", input.path, "--out", out.path, "--trigger", "continuous",
                                           "--segment-duration", "2000"])
        #expect(result.terminatedBySignal == nil)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(!result.stderr.contains("Error"), "stderr: \(result.stderr)")
        #expect(result.stdout.contains("input damaged:"), "stdout: \(result.stdout)")

        let report = try Self.report(out)
        let damage = try #require(report.input?["damage"])
        let dropped = damage["dropped"] as? [String: Int] ?? [:]
        let repaired = damage["repaired"] as? [String: Int] ?? [:]
        // Video: the two packets whose DTS repeats an earlier one are dropped; the packet an hour ahead and the one
        // 100 s back get a DTS between their neighbours; the PTS before its DTS is moved to it.
        #expect(dropped["video.decodeTimeNotIncreasing"] == 2, "\(damage)")
        #expect(repaired["video.outlier"] == 2, "\(damage)")
        #expect(repaired["video.presentationTime"] == 1, "\(damage)")
        // Audio: the frames of the PES sent back in time are dropped; the PES 600 s ahead is a confirmed jump and
        // its return another: both are closed up.
        #expect((dropped["audio.decodeTimeNotIncreasing"] ?? 0) > 0, "\(damage)")
        #expect(repaired["audio.discontinuity"] == 2, "\(damage)")
        #expect(damage["droppedPackets"] as? Int == dropped.values.reduce(0, +))
        #expect(damage["repairedTimestamps"] as? Int == repaired.values.reduce(0, +))
        #expect(report.error == nil)

        try Self.expectValidSessions(out)
        // The whole 10 s are there, in 2 s segments, on both tracks, and the playable clip has samples.
        for track in ["video", "audio"] {
            let written = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: track)
            #expect(written.segments.count == 5, "\(track): \(written.segments.count) segments")
            #expect(abs(written.totalDuration - 10) < 0.1, "\(track): \(written.totalDuration) s")
        }
        let clip = try Data(contentsOf: out.appendingPathComponent("clips/session_1.mp4"))
        #expect(clip.count > ts.count / 2, "clip has \(clip.count) bytes")
    }

    /// 4 KiB of an MPEG-TS zeroed (a lost network buffer) damage one ADTS audio frame, which `aac_adtstoasc` rejects
    /// as invalid data. That used to end the recording before its first session was finished; now the frame is
    /// dropped and counted, and the recording goes on.
    @Test func transportStreamWithAZeroedBlockKeepsRecording() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var ts = [UInt8](try Data(contentsOf: Fixtures.media("b_1080p25_h264_high_bframes.ts")))
        ts.replaceSubrange(509_422..<509_422 + 4096, with: [UInt8](repeating: 0, count: 4096))
        let input = dir.appendingPathComponent("zeroed.ts")
        try Data(ts).write(to: input)
        let out = dir.appendingPathComponent("out")

        let result = try await PushAVBinary.run(["record", input.path, "--out", out.path, "--trigger", "continuous",
                                           "--segment-duration", "2000"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let damage = try #require(try Self.report(out).input?["damage"])
        #expect((damage["dropped"] as? [String: Int])?["audio.unusable"] == 1, "\(damage)")
        try Self.expectValidSessions(out)
        let audio = try WrittenTrack(directory: out.appendingPathComponent("session_1"), track: "audio")
        #expect(audio.segments.count == 5)
    }

    /// An MP4 whose `esds` lost its AudioSpecificConfig (one bit of the ES_Descriptor's length cleared): the AAC
    /// frames cannot be described, so an audio track of them would fail the checker (no codecs string). The audio is
    /// dropped and counted, and the video recorded.
    @Test func aacWithoutItsConfigurationIsDroppedAndCounted() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var mp4 = [UInt8](try Data(contentsOf: Fixtures.media("a_720p30_h264_main.mp4")))
        let esds = try #require(Self.find(Array("esds".utf8), in: mp4))
        #expect(Array(mp4[esds + 8..<esds + 11]) == [0x03, 0x80, 0x80])  // ES_Descriptor, 4-byte length
        mp4[esds + 10] = 0x00  // the length now ends after its second byte: 0
        let input = dir.appendingPathComponent("no-asc.mp4")
        try Data(mp4).write(to: input)
        let out = dir.appendingPathComponent("out")

        let result = try await PushAVBinary.run(["record", input.path, "--out", out.path, "--trigger", "continuous"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("input damaged:"), "stdout: \(result.stdout)")
        let damage = try #require(try Self.report(out).input?["damage"])
        #expect(((damage["dropped"] as? [String: Int])?["audio.unusable"] ?? 0) > 900, "\(damage)")  // 20 s of AAC
        try Self.expectValidSessions(out)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("session_1/audio").path))
    }

    // MARK: - Checks

    /// Every session on disk has, per track, its init segment and at least one media segment, and passes our CMAF
    /// checker.
    static func expectValidSessions(_ out: URL) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasPrefix("session_") }
        #expect(!names.isEmpty, "no session in \(out.path)")
        for name in names {
            let session = out.appendingPathComponent(name)
            let tracks = try FileManager.default.contentsOfDirectory(atPath: session.path)
            #expect(tracks.contains("video"))
            for track in tracks {
                let written = try WrittenTrack(directory: session, track: track)
                #expect(!written.segments.isEmpty, "\(name)/\(track) has an init segment and no media segment")
                let violations = CMAFConformance(expectations: .init())
                    .check(header: written.headerFile, segments: written.files).filter { $0.severity == .error }
                #expect(violations.isEmpty, "\(name)/\(track): \(violations)")
            }
        }
    }

    struct Report {
        var input: [String: [String: Any]]?
        var error: String?
    }

    static func report(_ out: URL) throws -> Report {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("report.json")))
        let object = try #require(json as? [String: Any])
        let input = object["input"] as? [String: Any]
        var facts: [String: [String: Any]] = [:]
        for (key, value) in input ?? [:] { if let v = value as? [String: Any] { facts[key] = v } }
        return Report(input: facts, error: object["error"] as? String)
    }

    // MARK: - Making damaged files

    static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    static func putLittleEndian(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for i in 0..<4 { bytes[offset + i] = UInt8((value >> (8 * UInt32(i))) & 0xFF) }
    }

    /// Where a PES header's PTS (and DTS, if present) sit in a transport stream: one entry per PES start.
    struct PESTimestamps {
        var pid: Int
        var pts: Int
        var dts: Int?
    }

    static func pesTimestamps(_ ts: [UInt8]) -> [PESTimestamps] {
        var found: [PESTimestamps] = []
        for packet in stride(from: 0, to: ts.count - 187, by: 188) where ts[packet] == 0x47 && ts[packet + 1] & 0x40 != 0 {
            let pid = Int(ts[packet + 1] & 0x1F) << 8 | Int(ts[packet + 2])
            var payload = packet + 4
            if ts[packet + 3] & 0x20 != 0 { payload += 1 + Int(ts[packet + 4]) }  // adaptation field
            guard payload + 19 <= packet + 188, ts[payload] == 0, ts[payload + 1] == 0, ts[payload + 2] == 1 else { continue }
            let flags = ts[payload + 7] >> 6
            guard flags & 2 != 0 else { continue }
            found.append(PESTimestamps(pid: pid, pts: payload + 9, dts: flags == 3 ? payload + 14 : nil))
        }
        return found
    }

    static func readTimestamp(_ ts: [UInt8], at i: Int) -> Int64 {
        Int64(ts[i] >> 1 & 7) << 30 | Int64(ts[i + 1]) << 22 | Int64(ts[i + 2] >> 1) << 15 | Int64(ts[i + 3]) << 7
            | Int64(ts[i + 4] >> 1)
    }

    static func writeTimestamp(_ value: Int64, to ts: inout [UInt8], at i: Int) {
        let v = value & 0x1_FFFF_FFFF
        ts[i] = ts[i] & 0xF0 | UInt8(v >> 30 & 7) << 1 | 1
        ts[i + 1] = UInt8(v >> 22 & 0xFF)
        ts[i + 2] = UInt8(v >> 15 & 0x7F) << 1 | 1
        ts[i + 3] = UInt8(v >> 7 & 0xFF)
        ts[i + 4] = UInt8(v & 0x7F) << 1 | 1
    }

    /// Rewrites seven PES timestamps of the video (the PID whose PES headers carry a DTS) and audio streams; returns
    /// how many packets it damaged.
    static func damageTimestamps(_ ts: inout [UInt8]) -> Int {
        let all = pesTimestamps(ts)
        guard let videoPID = all.first(where: { $0.dts != nil })?.pid else { return 0 }
        let video = all.filter { $0.pid == videoPID && $0.dts != nil }
        let audio = all.filter { $0.pid != videoPID && $0.dts == nil }
        guard video.count > 200, audio.count > 40 else { return 0 }
        let second: Int64 = 90000
        func dts(_ k: Int) -> Int64 { readTimestamp(ts, at: video[k].dts!) }
        func pts(_ k: Int) -> Int64 { readTimestamp(ts, at: video[k].pts) }
        // 1. A DTS going back two frames (and its PTS with it).
        let back = dts(30) - dts(28)
        writeTimestamp(dts(28), to: &ts, at: video[30].dts!)
        writeTimestamp(pts(30) - back, to: &ts, at: video[30].pts)
        // 2. A PTS before its DTS.
        writeTimestamp(dts(60) - 3600, to: &ts, at: video[60].pts)
        // 3. An absurd jump: one packet an hour ahead.
        writeTimestamp(dts(90) + 3600 * second, to: &ts, at: video[90].dts!)
        writeTimestamp(pts(90) + 3600 * second, to: &ts, at: video[90].pts)
        // 4. A packet with the same timestamps as its predecessor.
        writeTimestamp(dts(119), to: &ts, at: video[120].dts!)
        writeTimestamp(pts(119), to: &ts, at: video[120].pts)
        // 5. An outlier far back (a cleared high bit).
        writeTimestamp(dts(150) - 100 * second, to: &ts, at: video[150].dts!)
        writeTimestamp(pts(150) - 100 * second, to: &ts, at: video[150].pts)
        // 6./7. Audio (a PES holds several AAC frames): one PES back in time, one far ahead.
        let (audio18, audio30) = (readTimestamp(ts, at: audio[18].pts), readTimestamp(ts, at: audio[30].pts))
        writeTimestamp(audio18, to: &ts, at: audio[20].pts)
        writeTimestamp(audio30 + 600 * second, to: &ts, at: audio[30].pts)
        return 7
    }
}
