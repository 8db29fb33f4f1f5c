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
    public var severity: Severity

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
        public var lastSegmentMayBeShort: Bool
        /// Matter ChunkDuration ≠ 0: segments consist of several moof+mdat chunks (item 22).
        public var chunks: Bool
        /// Keyframe interval in seconds; nil derives it from the sync samples (capped at the segment duration).
        public var keyFrameInterval: Double?
        /// Allowed |duration − target| for audio segments in seconds; nil = one audio frame.
        public var audioDurationTolerance: Double?
        /// The media timescale the muxer was configured with (item 9); nil accepts any non-zero video timescale.
        public var timescale: UInt32?
        /// The codecs string the MPD/app advertises (item 8); nil only checks the syntax.
        public var advertisedCodecString: String?

        public init(segmentDuration: Double? = nil, lastSegmentMayBeShort: Bool = true, chunks: Bool = false,
                    keyFrameInterval: Double? = nil, audioDurationTolerance: Double? = nil, timescale: UInt32? = nil,
                    advertisedCodecString: String? = nil) {
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

    public var expectations: Expectations

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

    // MARK: - Segments, items 10–22

    func checkSegments(_ segments: [CMAFSegment], header: CMAFHeader, into report: inout Report) {
        var previousSequence: UInt32?
        var previousEnd: UInt64?
        let gop = header.isVideo ? keyFrameIntervalTicks(segments, header: header) : nil
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            checkLayout(segment, isLast: isLast, into: &report)
            for chunk in segment.chunks {
                checkChunk(chunk, in: segment, header: header, into: &report)
                if let sequence = chunk.sequenceNumber {
                    if let previous = previousSequence, sequence <= previous {
                        report.fail(16, segment.fileName, "mfhd sequence_number \(sequence) does not increase (previous \(previous))")
                    }
                    previousSequence = sequence
                }
            }
            if let start = segment.startDecodeTime, let previous = previousEnd, start != previous {
                let kind = start > previous ? "gap" : "overlap"
                report.fail(17, segment.fileName, "tfdt \(start) ≠ previous segment end \(previous) (\(kind) of \(start > previous ? start - previous : previous - start) ticks)")
            }
            // Samples carry decode times even where a tfdt is missing (that is item 12's business).
            if let last = segment.samples.last { previousEnd = last.decodeTime &+ UInt64(last.duration) }
            if segment.usesTrackRunVersion1, let start = segment.startDecodeTime, let earliest = segment.earliestPresentationTime,
               earliest != Int64(bitPattern: start) {
                report.fail(18, segment.fileName, "earliest presentation time \(earliest) ≠ tfdt \(start) (trun v1)")
            }
            if header.isVideo { checkRandomAccess(segment, into: &report) }
            checkDuration(segment, isLast: isLast, header: header, gop: gop, into: &report)
            if header.isVideo || header.isAudio { checkProducerReferenceTime(segment, header: header, into: &report) }
            checkChunking(segment, header: header, into: &report)
        }
    }

    private func checkLayout(_ segment: CMAFSegment, isLast: Bool, into report: inout Report) {
        let file = segment.fileName
        let types = segment.topLevelTypes
        let unexpected = types.filter { !Self.allowedSegmentTopLevelBoxes.contains($0) }
        report.require(unexpected.isEmpty, 10, file, "unexpected top-level boxes \(list(unexpected))")
        report.require(types.contains("moof"), 10, file, "no moof")
        for (index, type) in types.enumerated() {
            if type == "moof", index + 1 >= types.count || types[index + 1] != "mdat" {
                report.fail(10, file, "moof at box \(index) is not immediately followed by mdat")
            }
            if type == "mdat", index == 0 || types[index - 1] != "moof" {
                report.fail(10, file, "mdat at box \(index) does not follow a moof")
            }
        }
        if let firstMoof = types.firstIndex(of: "moof"), let lastEmsg = types.lastIndex(of: "emsg") {
            report.require(lastEmsg < firstMoof, 10, file, "emsg must precede the first moof")
        }
        if types.contains("moof") {
            report.require(segment.sampleCount > 0, 10, file, "segment contains no samples")
        }

        if let styp = segment.segmentType {
            let brands = styp.allBrands
            let unknown = brands.filter { !Self.allowedSegmentBrands.contains($0) && !$0.description.hasPrefix("iso") }
            report.require(unknown.isEmpty, 11, file, "unexpected styp brands \(list(unknown.sorted()))")
            report.require(isLast || !brands.contains("lmsg"), 11, file, "lmsg brand on a segment that is not the last")
        }
    }

    private func checkChunk(_ chunk: CMAFChunk, in segment: CMAFSegment, header: CMAFHeader, into report: inout Report) {
        let file = segment.fileName
        let at = "moof@\(chunk.moof.offset)"
        report.require(chunk.moofChildTypes == ["mfhd", "traf"], 12, file, "\(at) children must be mfhd, traf; found \(list(chunk.moofChildTypes))")
        report.require(Array(chunk.trafChildTypes.prefix(3)) == ["tfhd", "tfdt", "trun"], 12, file,
                       "\(at) traf must start with tfhd, tfdt, trun; found \(list(chunk.trafChildTypes))")

        if let tfhd = chunk.trackFragmentHeader {
            report.require(tfhd.trackID == header.trackID, 13, file,
                           "\(at) tfhd track_ID \(tfhd.trackID) ≠ header track_ID \(header.trackID.map(String.init) ?? "none")")
            report.require(tfhd.isDefaultBaseMoof, 13, file, "\(at) tfhd default-base-is-moof is not set (flags 0x\(String(tfhd.flags, radix: 16)))")
            report.require(!tfhd.hasBaseDataOffset, 13, file, "\(at) tfhd has base-data-offset-present")
        }

        for run in chunk.runs where run.dataOffset == nil {
            report.fail(14, file, "\(at) trun (flags 0x\(String(run.flags, radix: 16))) has no data_offset")
        }
        if let mdat = chunk.mdat, let outside = chunk.samples.firstIndex(where: { !$0.byteRange.isEmpty && !mdat.payloadRange.contains($0.byteRange) }) {
            let range = chunk.samples[outside].byteRange
            report.fail(14, file, "\(at) sample \(outside) bytes \(range.lowerBound)..<\(range.upperBound) outside mdat payload \(mdat.payloadRange.lowerBound)..<\(mdat.payloadRange.upperBound)")
        }

        if let zero = chunk.samples.firstIndex(where: { $0.duration == 0 }) {
            report.fail(15, file, "\(at) sample \(zero) has zero or no duration")
        }
        if header.fileType?.allBrands.contains("cmf2") == true {
            for run in chunk.runs where run.sampleCount > 0 {
                for (field, source) in [("duration", run.durationSource), ("size", run.sizeSource), ("flags", run.flagsSource)]
                where source == .trackExtends || source == .missing {
                    report.fail(15, file, "\(at) sample \(field) comes from \(source == .missing ? "nowhere" : "trex only"); cmf2 requires tfhd/trun")
                }
            }
        }
    }

    private func checkRandomAccess(_ segment: CMAFSegment, into report: inout Report) {
        let file = segment.fileName
        guard let first = segment.firstSample else { return }
        report.require(first.flags.isSync && first.flags.dependsOn == 2, 19, file,
                       "first sample flags \(first.flags): expected sample_is_non_sync_sample=0 and sample_depends_on=2")
        switch segment.firstSampleRandomAccess {
        case .idr?:
            break
        case .cra?, .bla?:
            let kind = segment.firstSampleRandomAccess == .cra ? "CRA" : "BLA"
            // Without RASL pictures a CRA/BLA is SAP 1 or 2, a random access point like an IDR (x265's open GOPs).
            if segment.leadingSkippedPictureCount > 0 {
                report.fail(19, file, "first sample is a \(kind) followed by \(segment.leadingSkippedPictureCount) RASL picture(s) (SAP 3, not a random access point for MSE)")
            }
        case .nonRandomAccess?:
            report.fail(19, file, "first sample contains no IDR, CRA or BLA NAL unit (not a random access point)")
        case .unparseable?:
            report.fail(19, file, "first sample NAL units cannot be parsed (length prefixes do not tile the sample, or it lies outside the file)")
        case nil:
            report.fail(19, file, "cannot look for an IDR: no NAL length size (no avcC/hvcC)")
        }
    }

    /// Item 20's "one GOP": the configured keyframe interval, else the shortest sync-to-sync distance seen,
    /// capped at the target (Matter requires SegmentDuration to be a multiple of the keyframe interval).
    private func keyFrameIntervalTicks(_ segments: [CMAFSegment], header: CMAFHeader) -> UInt64? {
        guard let timescale = header.mediaTimescale, let target = expectations.segmentDuration,
              let targetTicks = Self.ticks(target, timescale: timescale).map(UInt64.init) else { return nil }
        if let interval = expectations.keyFrameInterval { return Self.ticks(interval, timescale: timescale).map(UInt64.init) }
        let syncTimes = segments.flatMap(\.samples).filter(\.flags.isSync).map(\.decodeTime)
        let shortest = zip(syncTimes, syncTimes.dropFirst()).map { $1 &- $0 }.filter { $0 > 0 }.min()
        return min(shortest ?? targetTicks, targetTicks)
    }

    private func checkDuration(_ segment: CMAFSegment, isLast: Bool, header: CMAFHeader, gop: UInt64?, into report: inout Report) {
        guard let timescale = header.mediaTimescale, let target = expectations.segmentDuration,
              let targetTicks = Self.ticks(target, timescale: timescale) else { return }
        let file = segment.fileName
        let duration = Int64(clamping: segment.duration)
        let seconds = { (ticks: Int64) in String(Double(ticks) / Double(timescale)) }
        let mayBeShort = isLast && expectations.lastSegmentMayBeShort
        if header.isVideo {
            let upper = targetTicks + Int64(clamping: gop ?? UInt64(targetTicks))
            if duration >= upper {
                report.fail(20, file, "duration \(seconds(duration)) s ≥ target \(target) s + one GOP (\(seconds(upper - targetTicks)) s)")
            } else if duration < targetTicks && !mayBeShort {
                report.fail(20, file, "duration \(seconds(duration)) s is shorter than the target \(target) s")
            }
        } else {
            let frame = Int64(segment.samples.map(\.duration).max() ?? 0)
            let tolerance = expectations.audioDurationTolerance.flatMap { Self.ticks($0, timescale: timescale) } ?? frame
            let tooLong = duration - targetTicks > tolerance
            let tooShort = targetTicks - duration > tolerance && !mayBeShort
            if tooLong || tooShort {
                report.fail(20, file, "duration \(seconds(duration)) s differs from the target \(target) s by more than \(seconds(tolerance)) s")
            }
        }
    }

    private func checkProducerReferenceTime(_ segment: CMAFSegment, header: CMAFHeader, into report: inout Report) {
        let file = segment.fileName
        guard let prft = segment.producerReferenceTimes.first else {
            report.fail(21, file, "no prft")
            return
        }
        if let firstMoof = segment.topLevelTypes.firstIndex(of: "moof") {
            report.require(prft.boxIndex < firstMoof, 21, file, "prft must precede the first moof")
        }
        report.require(prft.referenceTrackID == header.trackID, 21, file,
                       "prft reference_track_ID \(prft.referenceTrackID) ≠ track_ID \(header.trackID.map(String.init) ?? "none")")
    }

    /// Only a segment's first chunk must start with a sync sample (item 19 checks it); a later chunk may start
    /// with one too, e.g. where the GOP is shorter than the segment and a keyframe falls on a chunk boundary.
    private func checkChunking(_ segment: CMAFSegment, header: CMAFHeader, into report: inout Report) {
        let file = segment.fileName
        guard expectations.chunks else {
            report.require(segment.chunkCount <= 1, 22, file, "\(segment.chunkCount) chunks, but chunks are not configured")
            return
        }
        for (previous, chunk) in zip(segment.chunks, segment.chunks.dropFirst()) {
            if let end = previous.endDecodeTime, let start = chunk.baseMediaDecodeTime, end != start {
                report.fail(22, file, "chunk moof@\(chunk.moof.offset) tfdt \(start) ≠ previous chunk end \(end)")
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

    private func list<S: Sequence>(_ types: S) -> String where S.Element == FourCC {
        "[" + types.map(\.description).joined(separator: ", ") + "]"
    }
}
