import Foundation
@testable import MediaIO
import Testing
import TestSupport

/// A thumbnail made from a recording on disk: the header and segments FFmpeg's own DASH muxer wrote, read as one
/// stream, give the picture at the asked moment.
@Suite struct RecordedPictureTests {
    /// A ramp whose picture n has luma 16 + 3n (30 fps, a keyframe every 12 pictures, B-pictures), split into a header
    /// and 0.4 s segments. The JPEG at each moment has the mean luma of the picture shown then — the first one at or
    /// after it, from the segment that holds it, whatever the reordering — and an offset past the end gives the last.
    @Test(arguments: [(0.0, 0), (0.2, 6), (0.5, 15), (1.0, 30), (1.21, 37), (9.0, 47)])
    func thePictureAtTheMomentAsked(offset: Double, picture: Int) async throws {
        let folder = try TestPaths.scratchDirectory("recorded-picture")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await Shell.run("""
            ffmpeg -nostdin -v error -f lavfi -i "color=black:s=320x240:r=30:d=1.6,format=yuv420p,geq=lum='16+3*N':cb=128:cr=128" \
              -c:v libx264 -preset ultrafast -g 12 -bf 2 -x264-params scenecut=0 \
              -f dash -seg_duration 0.4 -use_template 1 -use_timeline 0 \
              -init_seg_name header.mp4 -media_seg_name 'segment_$Number$.m4s' out.mpd
            """, in: folder)
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasPrefix("segment_") }
            .sorted { Int($0.dropFirst(8).dropLast(4))! < Int($1.dropFirst(8).dropLast(4))! }
        #expect(segments.count >= 4, "\(segments)")
        let files = [folder.appendingPathComponent("header.mp4")] + segments.map { folder.appendingPathComponent($0) }
        let jpeg = try await BlockingWork.run { try RecordedPicture.jpeg(of: files, at: offset, maxWidth: 160) }
        #expect(jpeg.width == 160 && jpeg.height == 120)

        let file = folder.appendingPathComponent("picture.jpg")
        try Data(jpeg.bytes).write(to: file)
        let mean = try await BlockingWork.run { () throws -> Double in
            let input = try MediaInput(url: file.path)
            let sampler = try LumaSampler(input: input, width: 16, height: 12)
            let packet = try Packet()
            var mean = -1.0
            while try input.read(into: packet) {
                try sampler.decode(packet) { picture in
                    let pixels = try picture.luma().pixels
                    mean = Double(pixels.reduce(0) { $0 + Int($1) }) / Double(pixels.count)
                }
            }
            try sampler.decode(nil) { picture in
                let pixels = try picture.luma().pixels
                mean = Double(pixels.reduce(0) { $0 + Int($1) }) / Double(pixels.count)
            }
            return mean
        }
        // A JPEG is full range: the video's limited-range luma y shows as (y - 16) · 255/219, and neighbouring
        // pictures differ by 3.5.
        let expected = Double(3 * picture) * 255 / 219
        #expect(abs(mean - expected) < 1.5, "offset \(offset): mean luma \(mean), picture \(picture) would be \(expected)")
    }

    /// No files, a path the concat protocol cannot name, and a file that is not media: one clear error each.
    @Test func badInputIsOneClearError() async throws {
        #expect(throws: MediaError.self) { try RecordedPicture.jpeg(of: [], at: 0, maxWidth: 160) }
        let odd = URL(fileURLWithPath: "/tmp/a|b/header.mp4")
        #expect(throws: MediaError("cannot read /tmp/a|b/header.mp4 through the concat protocol: its path contains '|'")) {
            try RecordedPicture.jpeg(of: [odd], at: 0, maxWidth: 160)
        }
        let folder = try TestPaths.scratchDirectory("recorded-picture-bad")
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = folder.appendingPathComponent("header.mp4")
        try Data("not media".utf8).write(to: text)
        #expect(throws: (any Error).self) { try RecordedPicture.jpeg(of: [text], at: 0, maxWidth: 160) }
    }
}
