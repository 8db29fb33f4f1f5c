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
