import CFFmpeg
import Foundation
import Testing
import TestSupport
@testable import MediaIO

/// The analysis plane from the block average must be the plane swscale's area filter makes of the same picture (the
/// detector's thresholds were set on swscale's planes), on every geometry the block average takes.
@Suite struct LumaSamplerTests {
    @Test(arguments: [
        ("a_720p30_h264_main.mp4", 160, 90),  // 8 × 8 blocks
        ("b_1080p25_h264_high_bframes.ts", 160, 90),  // 12 × 12
        ("c_hevc.mp4", 160, 90),  // 4 × 4, HEVC
    ])
    func blockAverageMatchesSwscale(file: (String, Int, Int)) async throws {
        let worst = try await BlockingWork.runHeavy {
            try Self.compare(TestPaths.media(file.0).path, width: file.1, height: file.2)
        }
        #expect(worst.pictures >= 20)
        #expect(worst.maximum <= 1, "largest difference \(worst.maximum) luma levels")
        #expect(worst.mean < 0.5)
    }

    /// A full-range (yuvj420p) stream is averaged without range expansion, like swscale does.
    @Test func fullRangePictureMatchesSwscale() async throws {
        let folder = try TestPaths.scratchDirectory("fullrange")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("full.mp4").path
        let made = try await ProcessRun.run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "1",
            "-pix_fmt", "yuvj420p", "-c:v", "libx264", "-preset", "ultrafast", file,
        ])
        try #require(made.succeeded, "\(made.output)")
        let worst = try await BlockingWork.runHeavy { try Self.compare(file, width: 160, height: 90, format: AV_PIX_FMT_YUVJ420P) }
        #expect(worst.pictures >= 20)
        #expect(worst.maximum <= 1, "largest difference \(worst.maximum) luma levels")
    }

    /// H.264 pictures are averaged band by band while the decoder writes them (``BandAveragedPlanes``): each such
    /// plane must be the plane of the finished picture, byte for byte, whatever the bands look like — 16-row bands
    /// of a P-only stream, B-frames handed out after later pictures, several slices per picture, 32-row bands of an
    /// MBAFF-interlaced stream. HEVC reports no bands: every plane comes from the finished picture.
    @Test(arguments: [
        ("P-only 640x360", ["-bf", "0"], "h264", true),
        ("B-frames 1280x720, 4 slices", ["-bf", "3", "-x264-params", "slices=4"], "h264", true),
        ("MBAFF interlaced 1280x720", ["-flags", "+ildct+ilme", "-x264-params", "interlaced=1"], "h264", true),
        ("HEVC 640x360", [], "hevc", false),
    ])
    func bandPlanesEqualFinishedPicturePlanes(stream: (String, [String], String, Bool)) async throws {
        let folder = try TestPaths.scratchDirectory("bands")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("in.mp4").path
        let size = stream.0.contains("640x360") ? "640x360" : "1280x720"
        let encoder = stream.2 == "hevc" ? ["-c:v", "libx265", "-x265-params", "log-level=error:bframes=0"] : ["-c:v", "libx264"]
        let made = try await ProcessRun.run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30", "-t", "2",
            "-pix_fmt", "yuv420p", "-preset", "ultrafast", "-g", "30",
        ] + encoder + stream.1 + [file])
        try #require(made.succeeded, "\(made.output)")
        let result = try await BlockingWork.runHeavy { () throws -> (pictures: Int, mismatches: Int, bands: Int, whole: Int) in
            let input = try MediaInput(url: file)
            let sampler = try LumaSampler(input: input, width: 160, height: 90)
            let packet = try Packet()
            var pictures = 0, mismatches = 0
            func check(_ picture: DecodedPicture) throws {
                let plane = try picture.luma().pixels
                if plane != picture.lumaByWholePicture() { mismatches += 1 }
                pictures += 1
            }
            while try input.read(into: packet) {
                guard packet.streamIndex == input.video!.index else { continue }
                try sampler.decode(packet, check)
            }
            try sampler.decode(nil, check)
            return (pictures, mismatches, sampler.planeSources.bands, sampler.planeSources.wholePictures)
        }
        // The analysis decoder skips non-reference pictures: a B-frame stream hands out fewer than its 60.
        #expect(stream.1.contains("-bf") && stream.1.contains("3") ? result.pictures >= 20 : result.pictures == 60)
        #expect(result.mismatches == 0)
        if stream.3 {
            #expect(result.bands == result.pictures, "\(result.whole) pictures averaged whole")
        } else {
            #expect(result.bands == 0 && result.whole == result.pictures)
        }
    }

    private static func compare(_ path: String, width: Int, height: Int, format: AVPixelFormat? = nil) throws
        -> (pictures: Int, maximum: Int, mean: Double)
    {
        let input = try MediaInput(url: path)
        let sampler = try LumaSampler(input: input, width: width, height: height)
        let packet = try Packet()
        var (pictures, maximum, sum, count) = (0, 0, 0, 0)
        func check(_ picture: DecodedPicture) throws {
            if let format { #expect(picture.pixelFormat == format) }
            let fast = try picture.luma(), reference = try picture.lumaBySwscale()
            #expect(fast.width == reference.width && fast.height == reference.height)
            for (a, b) in zip(fast.pixels, reference.pixels) {
                let d = abs(Int(a) - Int(b))
                maximum = max(maximum, d)
                sum += d
                count += 1
            }
            pictures += 1
        }
        while pictures < 40, try input.read(into: packet) {
            guard packet.streamIndex == input.video!.index else { continue }
            try sampler.decode(packet, check)
        }
        return (pictures, maximum, Double(sum) / Double(max(count, 1)))
    }
}
