/// `avcC` (AVCDecoderConfigurationRecord, ISO/IEC 14496-15 5.3.3.1), the fields the codec string and NAL parsing need.
public struct AVCDecoderConfiguration: Hashable, Sendable, Codable {
    public var profileIndication: UInt8
    public var profileCompatibility: UInt8
    public var levelIndication: UInt8
    /// Bytes of the length prefix in front of every NAL unit in a sample (1, 2 or 4).
    public var nalLengthSize: Int

    public init(profileIndication: UInt8, profileCompatibility: UInt8, levelIndication: UInt8, nalLengthSize: Int) {
        self.profileIndication = profileIndication
        self.profileCompatibility = profileCompatibility
        self.levelIndication = levelIndication
        self.nalLengthSize = nalLengthSize
    }

    init(_ cursor: inout ByteCursor) throws {
        let version = try cursor.u8()
        guard version == 1 else {
            throw CMAFError.malformed(type: cursor.type, offset: cursor.boxOffset, reason: "configurationVersion \(version), expected 1")
        }
        profileIndication = try cursor.u8()
        profileCompatibility = try cursor.u8()
        levelIndication = try cursor.u8()
        nalLengthSize = Int(try cursor.u8() & 0x03) + 1
    }

    /// RFC 6381 `avc1.PPCCLL` (lowercase hex of avcC bytes 1…3), with the sample entry's 4CC as prefix.
    public func codecString(sampleEntry: FourCC) -> String {
        "\(sampleEntry)." + hex2(profileIndication) + hex2(profileCompatibility) + hex2(levelIndication)
    }
}

/// `hvcC` (HEVCDecoderConfigurationRecord, ISO/IEC 14496-15 8.3.3.1).
public struct HEVCDecoderConfiguration: Hashable, Sendable, Codable {
    public var profileSpace: UInt8
    public var tierFlag: Bool
    public var profileIDC: UInt8
    public var profileCompatibilityFlags: UInt32
    /// general_constraint_indicator_flags, six bytes in stream order.
    public var constraintIndicatorFlags: [UInt8]
    public var levelIDC: UInt8
    public var nalLengthSize: Int

    public init(
        profileSpace: UInt8, tierFlag: Bool, profileIDC: UInt8, profileCompatibilityFlags: UInt32,
        constraintIndicatorFlags: [UInt8], levelIDC: UInt8, nalLengthSize: Int
    ) {
        self.profileSpace = profileSpace
        self.tierFlag = tierFlag
        self.profileIDC = profileIDC
        self.profileCompatibilityFlags = profileCompatibilityFlags
        self.constraintIndicatorFlags = constraintIndicatorFlags
        self.levelIDC = levelIDC
        self.nalLengthSize = nalLengthSize
    }

    init(_ cursor: inout ByteCursor) throws {
        let version = try cursor.u8()
        guard version == 1 else {
            throw CMAFError.malformed(type: cursor.type, offset: cursor.boxOffset, reason: "configurationVersion \(version), expected 1")
        }
        let profileByte = try cursor.u8()
        profileSpace = profileByte >> 6
        tierFlag = profileByte & 0x20 != 0
        profileIDC = profileByte & 0x1f
        profileCompatibilityFlags = try cursor.u32()
        constraintIndicatorFlags = Array(try cursor.read(6))
        levelIDC = try cursor.u8()
        // min_spatial_segmentation, parallelismType, chroma, bit depths, avgFrameRate.
        try cursor.skip(8)
        nalLengthSize = Int(try cursor.u8() & 0x03) + 1
    }

    /// ISO/IEC 14496-15 Annex E codec string, e.g. `hvc1.1.6.L93.B0`.
    public func codecString(sampleEntry: FourCC) -> String {
        let space = ["", "A", "B", "C"][Int(profileSpace & 0x03)]
        // The flags are written with general_profile_compatibility_flag[0] as the least significant bit.
        var reversed: UInt32 = 0
        for bit in 0 ..< 32 where profileCompatibilityFlags & (1 << UInt32(bit)) != 0 {
            reversed |= 1 << UInt32(31 - bit)
        }
        var constraints = constraintIndicatorFlags
        while constraints.last == 0 { constraints.removeLast() }
        var parts = ["\(sampleEntry)", "\(space)\(profileIDC)", String(reversed, radix: 16, uppercase: true),
                     "\(tierFlag ? "H" : "L")\(levelIDC)"]
        parts += constraints.map { String($0, radix: 16, uppercase: true) }
        return parts.joined(separator: ".")
    }
}

/// The MPEG-4 audio fields of `esds`: DecoderConfigDescriptor and, for AAC, the AudioSpecificConfig.
public struct MPEG4AudioConfiguration: Hashable, Sendable, Codable {
    /// 0x40 = MPEG-4 Audio (ISO/IEC 14496-3).
    public var objectTypeIndication: UInt8
    /// AudioObjectType from the AudioSpecificConfig (2 = AAC-LC, 5 = SBR, 29 = PS), nil without one.
    public var audioObjectType: Int?
    public var samplingFrequency: Int?
    public var channelConfiguration: Int?

    public init(
        objectTypeIndication: UInt8, audioObjectType: Int? = nil, samplingFrequency: Int? = nil,
        channelConfiguration: Int? = nil
    ) {
        self.objectTypeIndication = objectTypeIndication
        self.audioObjectType = audioObjectType
        self.samplingFrequency = samplingFrequency
        self.channelConfiguration = channelConfiguration
    }

    static let samplingFrequencies = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// Parses the `esds` payload (FullBox header, then ES_Descriptor).
    init(_ cursor: inout ByteCursor) throws {
        _ = try cursor.versionAndFlags()
        let type = cursor.type, offset = cursor.boxOffset
        let malformed = { (reason: String) in CMAFError.malformed(type: type, offset: offset, reason: reason) }
        guard var es = try Self.descriptor(&cursor, expectedTag: 0x03) else { throw malformed("no ES_Descriptor") }
        try es.skip(2)
        let esFlags = try es.u8()
        if esFlags & 0x80 != 0 { try es.skip(2) }
        if esFlags & 0x40 != 0 { try es.skip(Int(try es.u8())) }
        if esFlags & 0x20 != 0 { try es.skip(2) }
        guard var config = try Self.descriptor(&es, expectedTag: 0x04) else { throw malformed("no DecoderConfigDescriptor") }
        objectTypeIndication = try config.u8()
        // streamType/upStream, bufferSizeDB, maxBitrate, avgBitrate.
        try config.skip(12)
        guard objectTypeIndication == 0x40, var info = try Self.descriptor(&config, expectedTag: 0x05) else {
            audioObjectType = nil
            samplingFrequency = nil
            channelConfiguration = nil
            return
        }
        var bits = BitReader(try info.read(info.remaining))
        guard var objectType = bits.read(5) else { throw malformed("empty AudioSpecificConfig") }
        if objectType == 31 {
            guard let escaped = bits.read(6) else { throw malformed("truncated AudioSpecificConfig") }
            objectType = 32 + escaped
        }
        audioObjectType = objectType
        if let index = bits.read(4) {
            samplingFrequency = index == 0x0f ? bits.read(24) : Self.samplingFrequencies.indices.contains(index) ? Self.samplingFrequencies[index] : nil
        } else {
            samplingFrequency = nil
        }
        channelConfiguration = bits.read(4)
    }

    /// Skips descriptors until one with `expectedTag`, returning a cursor over its body.
    private static func descriptor(_ cursor: inout ByteCursor, expectedTag: UInt8) throws -> ByteCursor? {
        while cursor.remaining > 0 {
            let tag = try cursor.u8()
            var length = 0
            // Expandable size: up to four bytes, 7 bits each, high bit = more follows.
            for _ in 0 ..< 4 {
                let byte = try cursor.u8()
                length = length << 7 | Int(byte & 0x7f)
                if byte & 0x80 == 0 { break }
            }
            let start = cursor.position
            try cursor.skip(length)
            if tag == expectedTag {
                return ByteCursor(cursor.bytes, range: start ..< start + length, type: cursor.type, boxOffset: cursor.boxOffset)
            }
        }
        return nil
    }

    /// RFC 6381: `mp4a.40.<AOT>` for MPEG-4 audio, `mp4a.<OTI hex>` for other object types.
    public var codecString: String? {
        if objectTypeIndication == 0x40 {
            guard let audioObjectType else { return nil }
            return "mp4a.40.\(audioObjectType)"
        }
        return "mp4a." + hex2(objectTypeIndication)
    }
}

/// `dOps` (Opus-in-ISOBMFF OpusSpecificBox).
public struct OpusConfiguration: Hashable, Sendable, Codable {
    public var outputChannelCount: UInt8
    public var preSkip: UInt16
    public var inputSampleRate: UInt32

    public init(outputChannelCount: UInt8, preSkip: UInt16, inputSampleRate: UInt32) {
        self.outputChannelCount = outputChannelCount
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
    }

    init(_ cursor: inout ByteCursor) throws {
        let version = try cursor.u8()
        guard version == 0 else {
            throw CMAFError.malformed(type: cursor.type, offset: cursor.boxOffset, reason: "dOps version \(version), expected 0")
        }
        outputChannelCount = try cursor.u8()
        preSkip = try cursor.u16()
        inputSampleRate = try cursor.u32()
    }
}

/// The decoder configuration carried by a sample entry's config box.
public enum DecoderConfiguration: Hashable, Sendable {
    case avc(AVCDecoderConfiguration)
    case hevc(HEVCDecoderConfiguration)
    case mpeg4Audio(MPEG4AudioConfiguration)
    case opus(OpusConfiguration)

    /// The config box each supported sample entry must carry.
    public static let configBoxType: [FourCC: FourCC] = [
        "avc1": "avcC", "avc3": "avcC", "hvc1": "hvcC", "hev1": "hvcC", "mp4a": "esds", "Opus": "dOps",
    ]

    /// Parses the config `box` found inside a sample entry.
    public init?(box: Box, in bytes: [UInt8]) throws {
        var cursor = ByteCursor(bytes, box: box)
        switch box.type {
        case "avcC": self = .avc(try AVCDecoderConfiguration(&cursor))
        case "hvcC": self = .hevc(try HEVCDecoderConfiguration(&cursor))
        case "esds": self = .mpeg4Audio(try MPEG4AudioConfiguration(&cursor))
        case "dOps": self = .opus(try OpusConfiguration(&cursor))
        default: return nil
        }
    }

    /// RFC 6381 codecs parameter for this configuration under `sampleEntry`.
    public func codecString(sampleEntry: FourCC) -> String? {
        switch self {
        case .avc(let config): config.codecString(sampleEntry: sampleEntry)
        case .hevc(let config): config.codecString(sampleEntry: sampleEntry)
        case .mpeg4Audio(let config): config.codecString
        case .opus: "opus"
        }
    }

    /// The audio channel count the decoder configuration states: the AudioSpecificConfig's channelConfiguration
    /// (1…6 are that many channels, 7 is 7.1; 0 defers to a program config element: unknown here) or Opus's
    /// OutputChannelCount. The sample entry's own channelcount is not it: FFmpeg's mov muxer writes 2 for mono AAC.
    public var audioChannelCount: Int? {
        switch self {
        case .mpeg4Audio(let config):
            guard let channels = config.channelConfiguration, channels > 0 else { return nil }
            return channels == 7 ? 8 : channels <= 6 ? channels : nil
        case .opus(let config):
            return Int(config.outputChannelCount)
        case .avc, .hevc:
            return nil
        }
    }

    /// NAL length prefix size for AVC/HEVC, nil for audio.
    public var nalLengthSize: Int? {
        switch self {
        case .avc(let config): config.nalLengthSize
        case .hevc(let config): config.nalLengthSize
        case .mpeg4Audio, .opus: nil
        }
    }
}

/// MSB-first bit reader; returns nil rather than reading past the end.
struct BitReader {
    private let bytes: [UInt8]
    private var bitPosition = 0

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = Array(bytes) }

    mutating func read(_ count: Int) -> Int? {
        guard count > 0, count <= 32, bitPosition + count <= bytes.count * 8 else { return nil }
        var value = 0
        for _ in 0 ..< count {
            let bit = (bytes[bitPosition >> 3] >> (7 - UInt8(bitPosition & 7))) & 1
            value = value << 1 | Int(bit)
            bitPosition += 1
        }
        return value
    }
}
