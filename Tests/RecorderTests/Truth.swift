import Foundation

/// `TestMedia/truth.json`: what each bundled file is known to contain (written by Scripts/make-test-media from
/// ffprobe and from the generation parameters).
struct MediaTruth: Decodable {
    struct Stream: Decodable {
        var index: Int
        var type: String
        var codec: String
        var timeBase: String
        var firstPacketPts: Double?
        var duration: Double?
        var frames: Int?
        var packets: Int?
        var sampleRate: Int?
        /// Frames a decoder holds back to reorder B-frames (0 without B-frames).
        var reorderDelay: Int?
    }
    struct Interval: Decodable {
        var start: Double
        var end: Double
        var kind: String
    }
    struct Lighting: Decodable {
        var time: Double
        var delta: Double
    }
    var container: String
    var duration: Double
    var streams: [Stream]
    var videoKeyframes: [Double]
    var videoGop: Double
    var videoFps: Double
    var videoCodec: String
    var motion: [Interval]?
    var lighting: [Lighting]?

    var video: Stream { streams.first { $0.type == "video" }! }
    var audio: Stream? { streams.first { $0.type == "audio" } }

    static let all: [String: MediaTruth] = {
        let url = Fixtures.testMedia.appendingPathComponent("truth.json")
        guard let data = try? Data(contentsOf: url) else { return [:] }
        return (try? JSONDecoder().decode([String: MediaTruth].self, from: data)) ?? [:]
    }()

    static func of(_ file: String) throws -> MediaTruth {
        guard let truth = all[file] else { throw TruthMissing(file: file) }
        return truth
    }

    struct TruthMissing: Error, CustomStringConvertible {
        var file: String
        var description: String { "TestMedia/truth.json has no entry for \(file)" }
    }
}
