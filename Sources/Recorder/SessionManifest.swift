import CMAF
import Foundation

extension DASHManifest {
    /// The MPD of a session written in `layout`, read back from its files: each track's header and its segments in
    /// number order (a track folder that does not exist is left out).
    public init(session layout: SessionLayout, kind: Kind, segmentDuration: Double) throws {
        var tracks: [Track] = []
        for role in MediaTrackRole.allCases {
            let name = layout.trackName(role)
            let headerURL = layout.url(layout.initPath(role))
            guard FileManager.default.fileExists(atPath: headerURL.path) else { continue }
            let header = try CMAFHeader(bytes: [UInt8](try Data(contentsOf: headerURL)), fileName: headerURL.lastPathComponent)
            var segments: [(segment: CMAFSegment, byteCount: Int)] = []
            if case .static = kind {
                var number = 1
                while case let url = layout.url(layout.segmentPath(role, number: number)),
                      let data = FileManager.default.contents(atPath: url.path) {
                    segments.append((try CMAFSegment(bytes: [UInt8](data), fileName: url.lastPathComponent, header: header), data.count))
                    number += 1
                }
            }
            tracks.append(try Track(name: name, header: header, segments: segments))
        }
        self.init(kind: kind, tracks: tracks, segmentDuration: segmentDuration)
    }
}
