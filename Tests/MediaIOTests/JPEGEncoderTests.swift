import Foundation
@testable import MediaIO
import Testing
import TestSupport

/// Thumbnails and snapshots: a JPEG of the picture the analysis decoded, kept by reference and encoded with mjpeg.
@Suite struct JPEGEncoderTests {
    /// The first picture of the 720p test file, kept beyond the decode callback, as a 320 px and a 640 px JPEG:
    /// baseline JFIF of the video's aspect ratio, and the 640 px one larger than the 320 px one.
    @Test func keptPictureBecomesJPEGsOfTheVideosAspectRatio() async throws {
        let (small, large) = try await BlockingWork.run { () throws -> (JPEGPicture, JPEGPicture) in
            let input = try MediaInput(url: TestPaths.media("a_720p30_h264_main.mp4").path)
            let sampler = try LumaSampler(input: input, width: 160, height: 90)
            let held = try HeldPicture()
            let packet = try Packet()
            var kept = false
            while !kept, try input.read(into: packet) {
                guard packet.streamIndex == input.video!.index else { continue }
                try sampler.decode(packet) { picture in
                    try picture.keep(in: held)
                    kept = true
                }
            }
            // Decoding goes on (the sampler reuses its frame): the kept picture is a reference of its own.
            while try input.read(into: packet), packet.streamIndex != input.video!.index {}
            try sampler.decode(packet) { _ in }
            let thumbnails = try JPEGEncoder(maxWidth: 320)
            let small = try #require(try thumbnails.encode(held))
            // One encoder makes every thumbnail of a recording: the second and third come out the same.
            #expect(try thumbnails.encode(held) == small)
            #expect(try thumbnails.encode(held) == small)
            let large = try #require(try JPEGEncoder(maxWidth: 640).encode(held))
            return (small, large)
        }
        for (jpeg, width, height) in [(small, 320, 180), (large, 640, 360)] {
            #expect(jpeg.width == width && jpeg.height == height)
            #expect(jpeg.bytes.starts(with: [0xFF, 0xD8, 0xFF]) && jpeg.bytes.suffix(2) == [0xFF, 0xD9])
            // Baseline start of frame (FF C0): precision 8, height, width.
            let sof = try #require(jpeg.bytes.indices.dropLast(9).first { jpeg.bytes[$0] == 0xFF && jpeg.bytes[$0 + 1] == 0xC0 })
            #expect(Int(jpeg.bytes[sof + 5]) << 8 | Int(jpeg.bytes[sof + 6]) == height)
            #expect(Int(jpeg.bytes[sof + 7]) << 8 | Int(jpeg.bytes[sof + 8]) == width)
        }
        #expect(small.bytes.count > 2_000 && small.bytes.count < 40_000, "\(small.bytes.count) bytes")
        #expect(large.bytes.count > small.bytes.count)
    }

    /// Nothing held yet: no JPEG, and no error.
    @Test func nothingHeldGivesNoJPEG() throws {
        #expect(try JPEGEncoder(maxWidth: 320).encode(try HeldPicture()) == nil)
    }

    /// The display aspect ratio decides the height (anamorphic PAL 720×576 at 16:11 shows 1047 px wide); a picture
    /// narrower than the maximum is not enlarged; both sides stay even.
    @Test func outputSizeKeepsTheDisplayAspectRatio() {
        #expect(JPEGEncoder.outputSize(width: 1920, height: 1080, sampleAspect: (1, 1), maxWidth: 320) == (320, 180))
        #expect(JPEGEncoder.outputSize(width: 1920, height: 1080, sampleAspect: (0, 1), maxWidth: 320) == (320, 180))
        #expect(JPEGEncoder.outputSize(width: 720, height: 576, sampleAspect: (16, 11), maxWidth: 320) == (320, 176))
        #expect(JPEGEncoder.outputSize(width: 640, height: 360, sampleAspect: (1, 1), maxWidth: 1280) == (640, 360))
        #expect(JPEGEncoder.outputSize(width: 2560, height: 1920, sampleAspect: (1, 1), maxWidth: 320) == (320, 240))
    }
}
