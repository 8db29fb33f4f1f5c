/// What `pushav inspect` prints: one entry per track, one row per segment. Codable for `--json`.
public struct InspectionSummary: Hashable, Sendable, Codable {
    public var tracks: [Track]

    public init(tracks: [Track]) { self.tracks = tracks }

    public struct Track: Hashable, Sendable, Codable {
        public var initFile: String
        public var trackID: UInt32?
        /// `vide`, `soun` …
        public var handler: String?
        public var codec: String?
        public var timescale: UInt32?
        /// Common Encryption scheme (`cenc`) and key ID (hex) of a protected track; nil when clear.
        public var encryptionScheme: String?
        public var keyID: String?
        public var segments: [Segment]

        public init(
            initFile: String, trackID: UInt32? = nil, handler: String? = nil, codec: String? = nil,
            timescale: UInt32? = nil, encryptionScheme: String? = nil, keyID: String? = nil, segments: [Segment]
        ) {
            self.initFile = initFile
            self.trackID = trackID
            self.handler = handler
            self.codec = codec
            self.timescale = timescale
            self.encryptionScheme = encryptionScheme
            self.keyID = keyID
            self.segments = segments
        }

        /// Summarises a parsed track.
        public init(header: CMAFHeader, segments: [CMAFSegment]) {
            self.init(initFile: header.fileName, trackID: header.trackID, handler: header.handler?.description,
                      codec: header.codecString, timescale: header.mediaTimescale, segments: segments.map(Segment.init))
            if let protection = header.sampleEntry?.protection {
                encryptionScheme = protection.scheme?.description ?? "?"
                keyID = protection.keyID.map { $0.map { String(format: "%02x", $0) }.joined() }
            }
        }
    }

    public struct Segment: Hashable, Sendable, Codable {
        public var file: String
        public var sequenceNumbers: [UInt32]
        public var startTicks: UInt64?
        public var startSeconds: Double?
        public var durationTicks: UInt64
        public var durationSeconds: Double
        public var sampleCount: Int
        public var chunkCount: Int
        public var firstSampleIsSync: Bool?
        /// nil for audio.
        public var firstSampleIsIDR: Bool?
        /// SAP 1 or 2 (an IDR, or a CRA/BLA without RASL pictures): a valid segment start. nil for audio.
        public var firstSampleIsRandomAccessPoint: Bool?
        /// idr, cra, bla, nonRandomAccess, unparseable; nil for audio.
        public var firstSampleRandomAccess: RandomAccessPicture?

        public init(_ segment: CMAFSegment) {
            file = segment.fileName
            sequenceNumbers = segment.sequenceNumbers
            startTicks = segment.startDecodeTime
            startSeconds = segment.startSeconds
            durationTicks = segment.duration
            durationSeconds = segment.durationSeconds
            sampleCount = segment.sampleCount
            chunkCount = segment.chunkCount
            firstSampleIsSync = segment.firstSampleIsSync
            firstSampleRandomAccess = segment.firstSampleRandomAccess
            firstSampleIsIDR = segment.firstSampleRandomAccess.map { $0 == .idr }
            firstSampleIsRandomAccessPoint = segment.firstSampleIsRandomAccessPoint
        }
    }

    /// A concise aligned text table, one block per track.
    public func renderText() -> String {
        var lines: [String] = []
        for track in tracks {
            let id = track.trackID.map(String.init) ?? "?"
            let timescale = track.timescale.map(String.init) ?? "?"
            let encrypted = track.encryptionScheme.map { ", encrypted (\($0), KID \(track.keyID ?? "?"))" } ?? ""
            lines.append("\(track.initFile): track \(id) \(track.handler ?? "?") \(track.codec ?? "?") timescale \(timescale)\(encrypted)")
            var rows = [["segment", "seq", "tfdt", "start s", "duration", "dur s", "samples", "chunks", "sync", "key"]]
            for segment in track.segments {
                rows.append([
                    segment.file,
                    sequenceText(segment.sequenceNumbers),
                    segment.startTicks.map(String.init) ?? "-",
                    segment.startSeconds.map { fixed($0) } ?? "-",
                    String(segment.durationTicks),
                    fixed(segment.durationSeconds),
                    String(segment.sampleCount),
                    String(segment.chunkCount),
                    segment.firstSampleIsSync.map { $0 ? "yes" : "no" } ?? "-",
                    segment.firstSampleRandomAccess?.rawValue ?? "-",
                ])
            }
            let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                let cells = row.enumerated().map { column, cell in
                    // Names left-aligned, numbers right-aligned.
                    let pad = String(repeating: " ", count: widths[column] - cell.count)
                    return column == 0 ? cell + pad : pad + cell
                }
                lines.append("  " + cells.joined(separator: "  "))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func sequenceText(_ numbers: [UInt32]) -> String {
        guard let first = numbers.first, let last = numbers.last else { return "-" }
        return numbers.count == 1 ? String(first) : "\(first)-\(last)"
    }

    /// Three decimals without Foundation's locale-dependent formatting.
    private func fixed(_ value: Double) -> String {
        // Corrupt tfdt values can be near 2^64; keep the Int64 conversion below in range.
        guard value.isFinite, value.magnitude < 1e12 else { return "\(value)" }
        let milliseconds = Int64((value * 1000).rounded())
        let sign = milliseconds < 0 ? "-" : ""
        let magnitude = milliseconds.magnitude
        let fraction = String(magnitude % 1000)
        return "\(sign)\(magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
