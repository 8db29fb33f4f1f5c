import Foundation
import TestSupport

/// An MP4 read back with ffprobe (a clip without `moov` fails here: "moov atom not found").
struct ClipProbe {
    var videoDuration: Double
    var videoFrames: Int

    /// Probes `url` with ffprobe, off the cooperative pool.
    static func probe(_ url: URL) async throws -> ClipProbe {
        try await BlockingWork.run { try ClipProbe(url) }
    }

    private init(_ url: URL) throws {
        let result = try ProcessRun.runBlocking(URL(fileURLWithPath: "/usr/bin/ffprobe"), [
            "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries", "stream=duration,nb_read_packets",
            "-of", "json", url.path,
        ])
        guard result.status == 0,
              let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
              let stream = (json["streams"] as? [[String: Any]])?.first,
              let duration = (stream["duration"] as? String).flatMap(Double.init),
              let frames = (stream["nb_read_packets"] as? String).flatMap(Int.init)
        else { throw ClipProbeError(description: "\(url.lastPathComponent) is not a valid MP4: \(result.stderr)") }
        videoDuration = duration
        videoFrames = frames
    }
}

struct ClipProbeError: Error, CustomStringConvertible {
    var description: String
}
