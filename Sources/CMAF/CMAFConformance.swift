/// One failed check of the conformance checklist (reference §6, items 1–22).
public struct Violation: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Severity: String, Hashable, Sendable, Codable {
        /// A SHALL of CMAF / DASH-IF ingest or a requirement of this project.
        case error
        /// A SHOULD, or something legal that deserves attention (e.g. no btrt in the sample entry).
        case warning
    }

    /// Checklist item number, 1…22.
    public var item: Int
    public var file: String
    public var message: String
    public var severity: Severity = .error

    public init(item: Int, file: String, message: String, severity: Severity = .error) {
        self.item = item
        self.file = file
        self.message = message
        self.severity = severity
    }

    public var description: String { "[\(item)] \(severity == .warning ? "warning: " : "")\(file): \(message)" }
}

/// A file's name and contents, for checking files that may not even parse.
public struct CMAFFile: Hashable, Sendable {
    public var name: String
    public var bytes: [UInt8]

    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }
}

/// Checks one CMAF track (header + its segments in order) against checklist items 1–22.
public struct CMAFConformance: Sendable {
    /// What the session was configured to produce.
    public struct Expectations: Hashable, Sendable {
        /// Matter SegmentDuration in seconds (item 20); nil skips item 20.
        public var segmentDuration: Double?
        /// Whether the last segment may be shorter than the target (a clip ends whenever the trigger ends).
        public var lastSegmentMayBeShort: Bool = true
        /// Matter ChunkDuration ≠ 0: segments consist of several moof+mdat chunks (item 22).
        public var chunks: Bool = false
        /// Keyframe interval in seconds; nil derives it from the sync samples (capped at the segment duration).
        public var keyFrameInterval: Double?
        /// Allowed |duration − target| for audio segments in seconds; nil = one audio frame.
        public var audioDurationTolerance: Double?
        /// The media timescale the muxer was configured with (item 9); nil accepts any non-zero video timescale.
        public var timescale: UInt32?
        /// The codecs string the MPD/app advertises (item 8); nil only checks the syntax.
        public var advertisedCodecString: String?

        public init(
            segmentDuration: Double? = nil, lastSegmentMayBeShort: Bool = true, chunks: Bool = false,
            keyFrameInterval: Double? = nil, audioDurationTolerance: Double? = nil, timescale: UInt32? = nil,
            advertisedCodecString: String? = nil
        ) {
            self.segmentDuration = segmentDuration
            self.lastSegmentMayBeShort = lastSegmentMayBeShort
            self.chunks = chunks
            self.keyFrameInterval = keyFrameInterval
            self.audioDurationTolerance = audioDurationTolerance
            self.timescale = timescale
            self.advertisedCodecString = advertisedCodecString
        }
    }

    public static let supportedSampleEntries: Set<FourCC> = ["avc1", "avc3", "hvc1", "hev1", "mp4a", "Opus"]
    public static let allowedSegmentTopLevelBoxes: Set<FourCC> = ["styp", "prft", "emsg", "moof", "mdat"]
    public static let allowedSegmentBrands: Set<FourCC> = ["cmfs", "cmff", "cmfl", "cmfc", "cmf2", "lmsg", "slat", "msdh", "msix", "dash"]

    public var expectations: Expectations = Expectations()

    public init(expectations: Expectations = Expectations()) {
        self.expectations = expectations
    }

    /// Parses and checks raw files; a file that does not parse is reported (item 1 for the header, 10 for a
    /// segment) instead of aborting the whole check.
    public func check(header headerFile: CMAFFile, segments segmentFiles: [CMAFFile]) -> [Violation] {
        let header: CMAFHeader
        do {
            header = try CMAFHeader(bytes: headerFile.bytes, fileName: headerFile.name)
        } catch {
            return [Violation(item: 1, file: headerFile.name, message: "header does not parse: \(error)")]
        }
        var violations: [Violation] = []
        var segments: [CMAFSegment] = []
        for file in segmentFiles {
            do {
                segments.append(try CMAFSegment(bytes: file.bytes, fileName: file.name, header: header))
            } catch {
                violations.append(Violation(item: 10, file: file.name, message: "segment does not parse: \(error)"))
            }
        }
        return check(header: header, segments: segments) + violations
    }

    /// Checks a parsed header and its segments in upload order.
    public func check(header: CMAFHeader, segments: [CMAFSegment]) -> [Violation] {
        var report = Report()
        checkHeader(header, segments: segments, into: &report)
        checkSegments(segments, header: header, into: &report)
        return report.violations.sorted { ($0.item, $0.file) < ($1.item, $1.file) }
    }

    struct Report {
        var violations: [Violation] = []

        mutating func fail(_ item: Int, _ file: String, _ message: String, severity: Violation.Severity = .error) {
            violations.append(Violation(item: item, file: file, message: message, severity: severity))
        }

        mutating func require(_ condition: Bool, _ item: Int, _ file: String, _ message: @autoclosure () -> String) {
            if !condition { fail(item, file, message()) }
        }
    }

    // MARK: - Header, items 1–9

    func checkHeader(_ header: CMAFHeader, segments: [CMAFSegment], into report: inout Report) {
        let file = header.fileName
        report.require(header.topLevelTypes == ["ftyp", "moov"], 1, file,
                       "top-level boxes must be exactly ftyp, moov; found \(list(header.topLevelTypes))")

        if let ftyp = header.fileType {
            let brands = Set(ftyp.compatibleBrands)
            report.require(brands.contains("cmfc") || brands.contains("cmf2"), 2, file,
                           "compatible_brands \(list(ftyp.compatibleBrands)) contain neither cmfc nor cmf2")
            report.require(brands.contains(ftyp.majorBrand), 2, file, "major brand \(ftyp.majorBrand) not in compatible_brands")
            if ftyp.majorBrand == "cmfc" || ftyp.majorBrand == "cmf2" {
                report.require(ftyp.minorVersion == 0, 2, file, "minor_version \(ftyp.minorVersion) must be 0 with major brand \(ftyp.majorBrand)")
            }
        } else {
            report.fail(2, file, "no ftyp")
        }

        if let moov = header.moov {
            report.require(moov.children.first?.type == "mvhd", 3, file, "moov must start with mvhd; starts with \(list(moov.childTypes.prefix(1)))")
            report.require(header.trackCount == 1, 3, file, "moov must contain exactly one trak, found \(header.trackCount)")
            let mvexCount = moov.children("mvex").count
            report.require(mvexCount == 1, 3, file, "moov must contain exactly one mvex, found \(mvexCount)")
            if let trackID = header.trackID {
                report.require(header.trackExtendsForTrack != nil, 3, file,
                               "no trex for track_ID \(trackID); trex track_IDs \(header.trackExtends.map(\.trackID))")
            } else if header.trackCount > 0 {
                report.fail(3, file, "trak has no tkhd")
            }
        } else {
            report.fail(3, file, "no moov")
        }

        if header.trak != nil {
            let counts = header.sampleTableCounts
            for (name, value) in [("stts entry_count", counts.timeToSample), ("stsc entry_count", counts.sampleToChunk),
                                  ("stco entry_count", counts.chunkOffset), ("stsz sample_count", counts.sampleSize)] {
                if let value {
                    report.require(value == 0, 4, file, "\(name) is \(value), must be 0 (no samples in moov)")
                } else {
                    report.fail(4, file, "missing \(name.prefix(4))")
                }
            }
        }

        checkDurations(header, segments: segments, into: &report)

        if let edits = header.editList {
            if edits.count != 1 {
                report.fail(6, file, "elst has \(edits.count) entries, CMAF allows exactly one")
            } else if edits[0].mediaRateInteger != 1 || edits[0].mediaRateFraction != 0 {
                report.fail(6, file, "elst media_rate is \(edits[0].mediaRateInteger).\(edits[0].mediaRateFraction), must be 1")
            }
            if header.isVideo, header.fileType?.allBrands.contains("cmf2") == true {
                report.fail(6, file, "cmf2 video tracks must not have an edit list")
            }
        }

        if let entry = header.sampleEntry {
            report.require(header.sampleEntryCount == 1, 7, file, "stsd has \(header.sampleEntryCount) sample entries, expected 1")
            if Self.supportedSampleEntries.contains(entry.type) {
                report.require(entry.hasRequiredConfiguration, 7, file,
                               "sample entry \(entry.type) lacks its \(DecoderConfiguration.configBoxType[entry.type] ?? "config") box")
            } else {
                report.fail(7, file, "sample entry \(entry.type) is not one of \(list(Self.supportedSampleEntries.sorted()))")
            }
            if !entry.hasBitRateBox {
                report.fail(7, file, "sample entry \(entry.type) has no btrt (DASH-IF ingest SHOULD)", severity: .warning)
            }
        } else if header.trak != nil {
            report.fail(7, file, "no sample entry in stsd")
        }

        if let codec = header.codecString {
            report.require(CodecString.isWellFormed(codec), 8, file, "derived codecs string '\(codec)' is malformed")
            if let advertised = expectations.advertisedCodecString {
                report.require(advertised.lowercased() == codec.lowercased(), 8, file,
                               "advertised codecs string '\(advertised)' differs from the derived '\(codec)'")
            }
        } else if header.sampleEntry != nil {
            report.fail(8, file, "no codecs string can be derived from sample entry \(header.sampleEntry.map { "\($0.type)" } ?? "")")
        }

        checkTimescale(header, into: &report)
    }

    private func checkDurations(_ header: CMAFHeader, segments: [CMAFSegment], into report: inout Report) {
        let file = header.fileName
        let durations: [(String, UInt64?)] = [("mvhd", header.movieDuration), ("tkhd", header.trackDuration), ("mdhd", header.mediaDuration)]
        let nonZero = durations.filter { ($0.1 ?? 0) != 0 }
        guard let mehd = header.fragmentDuration else {
            for (box, value) in nonZero {
                report.fail(5, file, "\(box) duration is \(value ?? 0) without mehd; must be 0")
            }
            return
        }
        // mehd is only checkable against the whole session, in the movie timescale.
        guard !segments.isEmpty, let movieScale = header.movieTimescale, let mediaScale = header.mediaTimescale, mediaScale > 0 else { return }
        let total = segments.reduce(UInt64(0)) { $0 &+ $1.duration }
        let expected = (Double(total) * Double(movieScale) / Double(mediaScale)).rounded()
        report.require(abs(Double(mehd) - expected) <= 1, 5, file,
                       "mehd fragment_duration \(mehd) differs from the total duration \(Int(expected)) (movie timescale \(movieScale))")
        for (box, value) in nonZero {
            let wanted = box == "mdhd" ? Double(total) : expected
            report.require(abs(Double(value ?? 0) - wanted) <= 1, 5, file, "\(box) duration \(value ?? 0) is neither 0 nor the total \(Int(wanted))")
        }
    }

    private func checkTimescale(_ header: CMAFHeader, into report: inout Report) {
        let file = header.fileName
        guard let timescale = header.mediaTimescale, timescale > 0 else {
            report.fail(9, file, "missing mdhd or zero timescale")
            return
        }
        if let expected = expectations.timescale {
            report.require(timescale == expected, 9, file, "mdhd timescale \(timescale), configured \(expected)")
        }
        if header.isAudio, let entry = header.sampleEntry {
            var rate = entry.sampleRate.flatMap { $0 == 0 ? nil : $0 }
            if case .mpeg4Audio(let config)? = entry.configuration, let frequency = config.samplingFrequency { rate = UInt32(frequency) }
            // Opus in ISOBMFF always runs at 48 kHz whatever the input rate was.
            if case .opus? = entry.configuration { rate = 48000 }
            if let rate {
                report.require(timescale == rate, 9, file, "audio mdhd timescale \(timescale) differs from the sample rate \(rate)")
            }
        }
    }

    /// Seconds from the caller's expectations to ticks; nil for values no real configuration has
    /// (negative, NaN, beyond 2^53 ticks) so they cannot trap the integer conversion.
    static func ticks(_ seconds: Double, timescale: UInt32) -> Int64? {
        let value = (seconds * Double(timescale)).rounded()
        guard timescale > 0, value.isFinite, value >= 0, value < 0x1p53 else { return nil }
        return Int64(value)
    }

    func list<S: Sequence>(_ types: S) -> String where S.Element == FourCC {
        "[" + types.map(\.description).joined(separator: ", ") + "]"
    }
}
