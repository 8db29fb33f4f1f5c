/// `ftyp` / `styp` contents.
public struct FileType: Hashable, Sendable, Codable {
    public var majorBrand: FourCC
    public var minorVersion: UInt32
    public var compatibleBrands: [FourCC]

    public init(majorBrand: FourCC, minorVersion: UInt32, compatibleBrands: [FourCC]) {
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }

    init(_ bytes: [UInt8], box: Box) throws {
        var cursor = ByteCursor(bytes, box: box)
        majorBrand = try cursor.fourCC()
        minorVersion = try cursor.u32()
        var brands: [FourCC] = []
        while cursor.remaining >= 4 { brands.append(try cursor.fourCC()) }
        compatibleBrands = brands
    }

    /// Major and compatible brands together.
    public var allBrands: Set<FourCC> { Set(compatibleBrands + [majorBrand]) }
}

/// One `elst` entry.
public struct EditListEntry: Hashable, Sendable, Codable {
    public var segmentDuration: UInt64
    public var mediaTime: Int64
    public var mediaRateInteger: Int16
    public var mediaRateFraction: Int16
}

/// `trex` defaults for one track.
public struct TrackExtendsDefaults: Hashable, Sendable, Codable {
    public var trackID: UInt32
    public var defaultSampleDescriptionIndex: UInt32 = 1
    public var defaultSampleDuration: UInt32 = 0
    public var defaultSampleSize: UInt32 = 0
    public var defaultSampleFlags: SampleFlags = SampleFlags(rawValue: 0)

    public init(
        trackID: UInt32, defaultSampleDescriptionIndex: UInt32 = 1, defaultSampleDuration: UInt32 = 0,
        defaultSampleSize: UInt32 = 0, defaultSampleFlags: SampleFlags = SampleFlags(rawValue: 0)
    ) {
        self.trackID = trackID
        self.defaultSampleDescriptionIndex = defaultSampleDescriptionIndex
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
    }
}

/// Entry counts of the sample tables; nil where the table is absent. CMAF headers must have all zero.
public struct SampleTableCounts: Hashable, Sendable, Codable {
    public var timeToSample: UInt32?
    public var sampleToChunk: UInt32?
    /// `stco` or `co64` entry_count.
    public var chunkOffset: UInt32?
    /// `stsz` or `stz2` sample_count.
    public var sampleSize: UInt32?
}

/// The first sample entry of `stsd`.
public struct SampleEntry: Hashable, Sendable {
    /// The coding format: for a protected entry (`encv`, `enca`) the original one its `sinf/frma` names.
    public var type: FourCC
    /// Common Encryption of the track, when the entry is protected.
    public var protection: Protection?
    /// Children of the sample entry (config box, btrt, pasp …).
    public var childTypes: [FourCC]
    public var configuration: DecoderConfiguration?
    /// Visual entries only.
    public var width: UInt16?
    public var height: UInt16?
    /// Audio entries only.
    public var channelCount: UInt16?
    /// Audio entries only: the integer part of the 16.16 samplerate field.
    public var sampleRate: UInt32?

    public var hasBitRateBox: Bool { childTypes.contains("btrt") }

    /// What a protected sample entry's `sinf` says.
    public struct Protection: Hashable, Sendable {
        /// `encv` or `enca`.
        public var entryType: FourCC
        /// `schm` scheme type, e.g. `cenc`.
        public var scheme: FourCC?
        /// `tenc` default key ID (16 bytes).
        public var keyID: [UInt8]?
        public var perSampleIVSize: UInt8?
    }

    /// Whether the config box the 4CC requires (avcC, hvcC, esds, dOps) is present and parsed.
    public var hasRequiredConfiguration: Bool {
        guard let required = DecoderConfiguration.configBoxType[type] else { return false }
        return childTypes.contains(required) && configuration != nil
    }
}

/// A parsed CMAF header (`ftyp` + `moov`). Absent boxes become nil so ``CMAFConformance`` can report them;
/// only an unparseable box tree or a truncated field throws.
public struct CMAFHeader: Hashable, Sendable {
    public var fileName: String
    public var boxes: [Box]
    public var fileType: FileType?
    public var movieTimescale: UInt32?
    public var movieDuration: UInt64?
    /// Number of `trak` boxes in `moov`; fields below describe the first one.
    public var trackCount: Int
    public var trackID: UInt32?
    public var trackDuration: UInt64?
    /// `tkhd` width/height, integer part of 16.16.
    public var trackWidth: UInt32?
    public var trackHeight: UInt32?
    public var handler: FourCC?
    public var mediaTimescale: UInt32?
    public var mediaDuration: UInt64?
    /// ISO 639-2/T code from `mdhd`, e.g. "und".
    public var language: String?
    /// `mvex/mehd` fragment_duration (movie timescale).
    public var fragmentDuration: UInt64?
    /// nil when there is no `edts/elst`.
    public var editList: [EditListEntry]?
    public var sampleEntryCount: Int
    public var sampleEntry: SampleEntry?
    public var sampleTableCounts: SampleTableCounts
    public var trackExtends: [TrackExtendsDefaults]

    public var topLevelTypes: [FourCC] { boxes.map(\.type) }
    public var moov: Box? { boxes.first { $0.type == "moov" } }
    public var trak: Box? { moov?.child("trak") }
    public var isVideo: Bool { handler == "vide" }
    public var isAudio: Bool { handler == "soun" }
    /// RFC 6381 codecs parameter derived from the config box, nil if it cannot be derived.
    public var codecString: String? {
        guard let entry = sampleEntry else { return nil }
        return entry.configuration?.codecString(sampleEntry: entry.type)
    }
    /// NAL length prefix size from avcC/hvcC.
    public var nalLengthSize: Int? { sampleEntry?.configuration?.nalLengthSize }
    public var isHEVC: Bool { sampleEntry.map { ["hvc1", "hev1"].contains($0.type) } ?? false }
    public var isAVC: Bool { sampleEntry.map { ["avc1", "avc3"].contains($0.type) } ?? false }

    /// The `trex` whose track_ID is this track's, if any.
    public var trackExtendsForTrack: TrackExtendsDefaults? {
        trackExtends.first { $0.trackID == trackID }
    }

    /// Parses a CMAF header file.
    /// - Throws: ``CMAFError`` when the box tree or a needed box payload is malformed.
    public init(bytes: [UInt8], fileName: String = "init") throws {
        self.fileName = fileName
        boxes = try BoxReader.parse(bytes)
        fileType = try boxes.first { $0.type == "ftyp" }.map { try FileType(bytes, box: $0) }
        let moov = boxes.first { $0.type == "moov" }
        if let mvhd = moov?.child("mvhd") {
            var cursor = ByteCursor(bytes, box: mvhd)
            let version = try cursor.skipVersionAndTimes()
            movieTimescale = try cursor.u32()
            movieDuration = try cursor.versioned(version)
        }
        trackCount = moov?.children("trak").count ?? 0
        let trak = moov?.child("trak")
        if let tkhd = trak?.child("tkhd") {
            var cursor = ByteCursor(bytes, box: tkhd)
            let version = try cursor.skipVersionAndTimes()
            trackID = try cursor.u32()
            try cursor.skip(4)
            trackDuration = try cursor.versioned(version)
            // reserved, layer, alternate_group, volume, reserved, matrix.
            try cursor.skip(8 + 8 + 36)
            trackWidth = try cursor.u32() >> 16
            trackHeight = try cursor.u32() >> 16
        }
        let mdia = trak?.child("mdia")
        if let mdhd = mdia?.child("mdhd") {
            var cursor = ByteCursor(bytes, box: mdhd)
            let version = try cursor.skipVersionAndTimes()
            mediaTimescale = try cursor.u32()
            mediaDuration = try cursor.versioned(version)
            let packed = try cursor.u16()
            language = String([10, 5, 0].map { Character(Unicode.Scalar(UInt8((packed >> $0) & 0x1f) &+ 0x60)) })
        }
        if let hdlr = mdia?.child("hdlr") {
            var cursor = ByteCursor(bytes, box: hdlr)
            try cursor.skip(8)
            handler = try cursor.fourCC()
        }
        if let mehd = moov?.descendant("mvex", "mehd") {
            var cursor = ByteCursor(bytes, box: mehd)
            fragmentDuration = try cursor.versioned(try cursor.versionAndFlags().version)
        }
        if let elst = trak?.descendant("edts", "elst") {
            var cursor = ByteCursor(bytes, box: elst)
            let version = try cursor.versionAndFlags().version
            let count = try cursor.u32()
            var entries: [EditListEntry] = []
            // Bounded by the box size, so a corrupt count cannot make us loop for long.
            for _ in 0 ..< count {
                let duration = try cursor.versioned(version)
                let mediaTime = version == 1 ? try cursor.i64() : Int64(try cursor.i32())
                entries.append(EditListEntry(segmentDuration: duration, mediaTime: mediaTime,
                                             mediaRateInteger: try cursor.i16(), mediaRateFraction: try cursor.i16()))
            }
            editList = entries
        }
        let stbl = mdia?.descendant("minf", "stbl")
        var counts = SampleTableCounts()
        func count(_ type: FourCC, skipping: Int) throws -> UInt32? {
            guard let box = stbl?.child(type) else { return nil }
            var cursor = ByteCursor(bytes, box: box)
            try cursor.skip(4 + skipping)
            return try cursor.u32()
        }
        counts.timeToSample = try count("stts", skipping: 0)
        counts.sampleToChunk = try count("stsc", skipping: 0)
        counts.chunkOffset = try count("stco", skipping: 0) ?? count("co64", skipping: 0)
        counts.sampleSize = try count("stsz", skipping: 4) ?? count("stz2", skipping: 4)
        sampleTableCounts = counts
        let stsd = stbl?.child("stsd")
        sampleEntryCount = stsd?.children.count ?? 0
        sampleEntry = try stsd?.children.first.map { try Self.parseSampleEntry($0, bytes: bytes) }
        trackExtends = try (moov?.child("mvex")?.children("trex") ?? []).map { trex in
            var cursor = ByteCursor(bytes, box: trex)
            _ = try cursor.versionAndFlags()
            return TrackExtendsDefaults(trackID: try cursor.u32(), defaultSampleDescriptionIndex: try cursor.u32(),
                                        defaultSampleDuration: try cursor.u32(), defaultSampleSize: try cursor.u32(),
                                        defaultSampleFlags: SampleFlags(rawValue: try cursor.u32()))
        }
    }

    static func parseSampleEntry(_ box: Box, bytes: [UInt8]) throws -> SampleEntry {
        var entry = SampleEntry(type: box.type, childTypes: box.childTypes)
        if ["encv", "enca"].contains(box.type), let sinf = box.child("sinf") {
            var protection = SampleEntry.Protection(entryType: box.type)
            if let frma = sinf.child("frma") {
                var cursor = ByteCursor(bytes, box: frma)
                entry.type = FourCC(rawValue: try cursor.u32())
            }
            if let schm = sinf.child("schm") {
                var cursor = ByteCursor(bytes, box: schm)
                try cursor.skip(4)
                protection.scheme = FourCC(rawValue: try cursor.u32())
            }
            if let tenc = sinf.descendant("schi", "tenc") {
                var cursor = ByteCursor(bytes, box: tenc)
                try cursor.skip(4 + 2 + 1)  // version and flags, reserved, isProtected
                protection.perSampleIVSize = try cursor.u8()
                protection.keyID = Array(try cursor.read(16))
            }
            entry.protection = protection
        }
        var cursor = ByteCursor(bytes, box: box)
        // reserved(6) + data_reference_index(2).
        try cursor.skip(8)
        if BoxReader.visualSampleEntries.contains(box.type) {
            try cursor.skip(16)
            entry.width = try cursor.u16()
            entry.height = try cursor.u16()
        } else if BoxReader.audioSampleEntries.contains(box.type) {
            try cursor.skip(8)
            entry.channelCount = try cursor.u16()
            try cursor.skip(6)
            entry.sampleRate = try cursor.u32() >> 16
        }
        if let required = DecoderConfiguration.configBoxType[entry.type], let configBox = box.child(required) {
            entry.configuration = try DecoderConfiguration(box: configBox, in: bytes)
        }
        return entry
    }
}
