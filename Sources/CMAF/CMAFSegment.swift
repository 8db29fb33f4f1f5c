/// `tfhd` contents.
public struct TrackFragmentHeader: Hashable, Sendable {
    public static let baseDataOffsetPresent: UInt32 = 0x00_0001
    public static let sampleDescriptionIndexPresent: UInt32 = 0x00_0002
    public static let defaultSampleDurationPresent: UInt32 = 0x00_0008
    public static let defaultSampleSizePresent: UInt32 = 0x00_0010
    public static let defaultSampleFlagsPresent: UInt32 = 0x00_0020
    public static let durationIsEmpty: UInt32 = 0x01_0000
    public static let defaultBaseIsMoof: UInt32 = 0x02_0000

    public var flags: UInt32
    public var trackID: UInt32
    public var baseDataOffset: UInt64?
    public var sampleDescriptionIndex: UInt32?
    public var defaultSampleDuration: UInt32?
    public var defaultSampleSize: UInt32?
    public var defaultSampleFlags: SampleFlags?

    public var hasBaseDataOffset: Bool { flags & Self.baseDataOffsetPresent != 0 }
    public var isDefaultBaseMoof: Bool { flags & Self.defaultBaseIsMoof != 0 }
}

/// Where a resolved per-sample value came from; CMAF `cmf2` forbids relying on `trex` alone.
public enum SampleFieldSource: String, Hashable, Sendable, Codable {
    case trackRun, trackFragmentHeader, trackExtends, missing
}

/// One `trun` box.
public struct TrackRun: Hashable, Sendable {
    public static let dataOffsetPresent: UInt32 = 0x001
    public static let firstSampleFlagsPresent: UInt32 = 0x004
    public static let sampleDurationPresent: UInt32 = 0x100
    public static let sampleSizePresent: UInt32 = 0x200
    public static let sampleFlagsPresent: UInt32 = 0x400
    public static let sampleCompositionTimeOffsetPresent: UInt32 = 0x800

    public var version: UInt8
    public var flags: UInt32
    public var sampleCount: UInt32
    public var dataOffset: Int32?
    public var firstSampleFlags: SampleFlags?
    public var durationSource: SampleFieldSource
    public var sizeSource: SampleFieldSource
    /// Source of the flags of samples after the first (of the first sample if the run has only one).
    public var flagsSource: SampleFieldSource
}

/// A sample with all defaults applied, its timing and where its bytes are in the file.
public struct Sample: Hashable, Sendable {
    public var decodeTime: UInt64
    public var duration: UInt32
    public var size: UInt32
    public var flags: SampleFlags
    /// Signed for `trun` version 1.
    public var compositionOffset: Int64
    /// Absolute byte range in the segment file (may lie outside it if the file is broken).
    public var byteRange: Range<Int>

    public var presentationTime: Int64 { Int64(bitPattern: decodeTime) &+ compositionOffset }
}

/// `prft` contents and where it sits among the top-level boxes.
public struct ProducerReferenceTime: Hashable, Sendable {
    public var version: UInt8
    public var flags: UInt32
    public var referenceTrackID: UInt32
    public var ntpTimestamp: UInt64
    public var mediaTime: UInt64
    /// Index in ``CMAFSegment/boxes``.
    public var boxIndex: Int
}

/// One CMAF chunk: a `moof` and the box that follows it (which must be its `mdat`).
public struct CMAFChunk: Hashable, Sendable {
    public var moof: Box
    /// The `mdat` immediately following the `moof`, nil if the next box is something else.
    public var mdat: Box?
    public var sequenceNumber: UInt32?
    /// Number of `traf` in the `moof`; the fields below describe the first one.
    public var trackFragmentCount: Int
    public var trackFragmentHeader: TrackFragmentHeader?
    /// `tfdt` baseMediaDecodeTime, nil without `tfdt`.
    public var baseMediaDecodeTime: UInt64?
    public var decodeTimeVersion: UInt8?
    public var runs: [TrackRun]
    public var samples: [Sample]

    public var moofChildTypes: [FourCC] { moof.childTypes }
    public var trafChildTypes: [FourCC] { moof.child("traf")?.childTypes ?? [] }
    /// Σ sample durations in ticks.
    public var duration: UInt64 { samples.reduce(0) { $0 &+ UInt64($1.duration) } }
    /// Decode time just after the last sample.
    public var endDecodeTime: UInt64? { baseMediaDecodeTime.map { $0 &+ duration } }
}

/// A parsed CMAF media segment file (`[styp] [prft] moof mdat …`) of the track described by a header.
public struct CMAFSegment: Hashable, Sendable {
    public var fileName: String
    public var boxes: [Box]
    /// `styp`, if present.
    public var segmentType: FileType?
    public var producerReferenceTimes: [ProducerReferenceTime]
    public var chunks: [CMAFChunk]
    /// Media timescale from the header (0 if the header had none).
    public var timescale: UInt32
    /// What the first sample's NAL units say, nil for audio or when there are no samples.
    public var firstSampleRandomAccess: RandomAccessPicture?
    /// RASL pictures following a CRA or BLA first sample before the next IRAP (these make it SAP 3).
    public var leadingSkippedPictureCount: Int

    public var topLevelTypes: [FourCC] { boxes.map(\.type) }
    public var samples: [Sample] { chunks.flatMap(\.samples) }
    public var firstSample: Sample? { chunks.lazy.compactMap(\.samples.first).first }
    public var sampleCount: Int { chunks.reduce(0) { $0 + $1.samples.count } }
    public var chunkCount: Int { chunks.count }
    public var sequenceNumbers: [UInt32] { chunks.compactMap(\.sequenceNumber) }
    /// tfdt of the first chunk.
    public var startDecodeTime: UInt64? { chunks.first?.baseMediaDecodeTime }
    /// Σ durations of all samples, in ticks.
    public var duration: UInt64 { chunks.reduce(0) { $0 &+ $1.duration } }
    public var durationSeconds: Double { timescale == 0 ? 0 : Double(duration) / Double(timescale) }
    public var startSeconds: Double? {
        guard let start = startDecodeTime, timescale != 0 else { return nil }
        return Double(start) / Double(timescale)
    }
    /// min(decode time + composition offset) over all samples.
    public var earliestPresentationTime: Int64? { samples.map(\.presentationTime).min() }
    public var firstSampleIsSync: Bool? { firstSample?.flags.isSync }
    public var firstSampleIsIDR: Bool { firstSampleRandomAccess == .idr }
    /// Whether the first sample is a stream access point of type 1 or 2, what MSE and CMAF accept as a segment start:
    /// an IDR, or an HEVC CRA/BLA picture without RASL pictures. Nil for audio.
    public var firstSampleIsRandomAccessPoint: Bool? {
        switch firstSampleRandomAccess {
        case nil: nil
        case .idr?: true
        case .cra?, .bla?: leadingSkippedPictureCount == 0
        case .nonRandomAccess?, .unparseable?: false
        }
    }
    public var usesTrackRunVersion1: Bool { chunks.contains { $0.runs.contains { $0.version == 1 } } }

    /// Parses one segment file. `header` supplies timescale, `trex` defaults and the NAL length size.
    /// - Throws: ``CMAFError`` when the box tree or a fragment box is malformed.
    public init(bytes: [UInt8], fileName: String, header: CMAFHeader) throws {
        self.fileName = fileName
        boxes = try BoxReader.parse(bytes)
        timescale = header.mediaTimescale ?? 0
        segmentType = try boxes.first { $0.type == "styp" }.map { try FileType(bytes, box: $0) }
        producerReferenceTimes = try boxes.enumerated().filter { $0.element.type == "prft" }.map { index, box in
            var cursor = ByteCursor(bytes, box: box)
            let (version, flags) = try cursor.versionAndFlags()
            return ProducerReferenceTime(version: version, flags: flags, referenceTrackID: try cursor.u32(),
                                         ntpTimestamp: try cursor.u64(), mediaTime: try cursor.versioned(version), boxIndex: index)
        }
        var chunks: [CMAFChunk] = []
        var nextDecodeTime: UInt64 = 0
        for (index, box) in boxes.enumerated() where box.type == "moof" {
            let following = index + 1 < boxes.count ? boxes[index + 1] : nil
            let chunk = try Self.parseChunk(moof: box, mdat: following?.type == "mdat" ? following : nil,
                                            bytes: bytes, header: header, fallbackDecodeTime: nextDecodeTime)
            nextDecodeTime = chunk.samples.last.map { $0.decodeTime &+ UInt64($0.duration) } ?? chunk.baseMediaDecodeTime ?? nextDecodeTime
            chunks.append(chunk)
        }
        self.chunks = chunks
        firstSampleRandomAccess = nil
        leadingSkippedPictureCount = 0
        if header.isVideo, let first = chunks.lazy.compactMap(\.samples.first).first, let lengthSize = header.nalLengthSize {
            let isHEVC = header.isHEVC
            let types = NALUnits.unitTypes(in: bytes, range: first.byteRange, lengthSize: lengthSize, isHEVC: isHEVC)
            firstSampleRandomAccess = NALUnits.classify(types, isHEVC: isHEVC)
            if firstSampleRandomAccess == .cra || firstSampleRandomAccess == .bla {
                for sample in chunks.flatMap(\.samples).dropFirst() {
                    guard let later = NALUnits.unitTypes(in: bytes, range: sample.byteRange, lengthSize: lengthSize, isHEVC: true),
                          !later.contains(where: NALUnits.isIRAP) else { break }
                    if later.contains(where: NALUnits.isRASL) { leadingSkippedPictureCount += 1 }
                }
            }
        } else if header.isVideo, chunks.contains(where: { !$0.samples.isEmpty }) {
            firstSampleRandomAccess = .unparseable
        }
    }

    static func parseChunk(moof: Box, mdat: Box?, bytes: [UInt8], header: CMAFHeader, fallbackDecodeTime: UInt64) throws -> CMAFChunk {
        var chunk = CMAFChunk(moof: moof, mdat: mdat, sequenceNumber: nil, trackFragmentCount: moof.children("traf").count,
                              trackFragmentHeader: nil, baseMediaDecodeTime: nil, decodeTimeVersion: nil, runs: [], samples: [])
        if let mfhd = moof.child("mfhd") {
            var cursor = ByteCursor(bytes, box: mfhd)
            _ = try cursor.versionAndFlags()
            chunk.sequenceNumber = try cursor.u32()
        }
        guard let traf = moof.child("traf"), let tfhdBox = traf.child("tfhd") else { return chunk }
        var cursor = ByteCursor(bytes, box: tfhdBox)
        let flags = try cursor.versionAndFlags().flags
        var tfhd = TrackFragmentHeader(flags: flags, trackID: try cursor.u32())
        if flags & TrackFragmentHeader.baseDataOffsetPresent != 0 { tfhd.baseDataOffset = try cursor.u64() }
        if flags & TrackFragmentHeader.sampleDescriptionIndexPresent != 0 { tfhd.sampleDescriptionIndex = try cursor.u32() }
        if flags & TrackFragmentHeader.defaultSampleDurationPresent != 0 { tfhd.defaultSampleDuration = try cursor.u32() }
        if flags & TrackFragmentHeader.defaultSampleSizePresent != 0 { tfhd.defaultSampleSize = try cursor.u32() }
        if flags & TrackFragmentHeader.defaultSampleFlagsPresent != 0 { tfhd.defaultSampleFlags = SampleFlags(rawValue: try cursor.u32()) }
        chunk.trackFragmentHeader = tfhd
        if let tfdt = traf.child("tfdt") {
            var cursor = ByteCursor(bytes, box: tfdt)
            let version = try cursor.versionAndFlags().version
            chunk.decodeTimeVersion = version
            chunk.baseMediaDecodeTime = try cursor.versioned(version)
        }
        let trex = header.trackExtends.first { $0.trackID == tfhd.trackID }
        // An explicit base offset wins; otherwise (default-base-is-moof, or the first traf) the moof start.
        // Offsets are bounded to 2^48 so that adding 32-bit sizes and offsets can never overflow `Int`.
        var position = tfhd.baseDataOffset.map { Int(min($0, 1 << 48)) } ?? moof.offset
        let base = position
        var decodeTime = chunk.baseMediaDecodeTime ?? fallbackDecodeTime
        for trunBox in traf.children("trun") {
            var cursor = ByteCursor(bytes, box: trunBox)
            let (version, flags) = try cursor.versionAndFlags()
            let count = try cursor.u32()
            let dataOffset = flags & TrackRun.dataOffsetPresent != 0 ? try cursor.i32() : nil
            let firstFlags = flags & TrackRun.firstSampleFlagsPresent != 0 ? SampleFlags(rawValue: try cursor.u32()) : nil
            let perSampleBytes = [TrackRun.sampleDurationPresent, TrackRun.sampleSizePresent, TrackRun.sampleFlagsPresent,
                                  TrackRun.sampleCompositionTimeOffsetPresent].filter { flags & $0 != 0 }.count * 4
            // A corrupt count must not drive a huge loop: per-sample fields have to fit in the box, and
            // a run can never hold more samples than the file has bytes.
            guard perSampleBytes == 0 ? Int(count) <= bytes.count : Int(count) <= cursor.remaining / perSampleBytes else {
                throw CMAFError.malformed(type: "trun", offset: trunBox.offset, reason: "sample_count \(count) does not fit the box")
            }
            func source(_ bit: UInt32, inFragmentHeader: Bool) -> SampleFieldSource {
                if flags & bit != 0 { return .trackRun }
                if inFragmentHeader { return .trackFragmentHeader }
                return trex != nil ? .trackExtends : .missing
            }
            var flagsSource = source(TrackRun.sampleFlagsPresent, inFragmentHeader: tfhd.defaultSampleFlags != nil)
            if count == 1, firstFlags != nil { flagsSource = .trackRun }
            chunk.runs.append(TrackRun(version: version, flags: flags, sampleCount: count, dataOffset: dataOffset, firstSampleFlags: firstFlags,
                                       durationSource: source(TrackRun.sampleDurationPresent, inFragmentHeader: tfhd.defaultSampleDuration != nil),
                                       sizeSource: source(TrackRun.sampleSizePresent, inFragmentHeader: tfhd.defaultSampleSize != nil),
                                       flagsSource: flagsSource))
            if let dataOffset { position = try offset(base, plus: Int(dataOffset), box: trunBox) }
            for index in 0 ..< Int(count) {
                let duration = flags & TrackRun.sampleDurationPresent != 0 ? try cursor.u32()
                    : tfhd.defaultSampleDuration ?? trex?.defaultSampleDuration ?? 0
                let size = flags & TrackRun.sampleSizePresent != 0 ? try cursor.u32()
                    : tfhd.defaultSampleSize ?? trex?.defaultSampleSize ?? 0
                var sampleFlags = tfhd.defaultSampleFlags ?? trex?.defaultSampleFlags ?? SampleFlags(rawValue: 0)
                if flags & TrackRun.sampleFlagsPresent != 0 {
                    sampleFlags = SampleFlags(rawValue: try cursor.u32())
                } else if index == 0, let firstFlags {
                    sampleFlags = firstFlags
                }
                var compositionOffset: Int64 = 0
                if flags & TrackRun.sampleCompositionTimeOffsetPresent != 0 {
                    compositionOffset = version == 0 ? Int64(try cursor.u32()) : Int64(try cursor.i32())
                }
                let end = try offset(position, plus: Int(size), box: trunBox)
                chunk.samples.append(Sample(decodeTime: decodeTime, duration: duration, size: size, flags: sampleFlags,
                                            compositionOffset: compositionOffset, byteRange: position ..< end))
                position = end
                decodeTime &+= UInt64(duration)
            }
        }
        return chunk
    }

    /// Byte position arithmetic that reports absurd offsets instead of overflowing.
    private static func offset(_ position: Int, plus delta: Int, box: Box) throws -> Int {
        let (sum, overflow) = position.addingReportingOverflow(delta)
        guard !overflow, abs(sum) <= 1 << 50 else {
            throw CMAFError.malformed(type: box.type, offset: box.offset, reason: "sample offset out of range")
        }
        return sum
    }
}
