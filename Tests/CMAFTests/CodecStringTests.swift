import Testing
@testable import CMAF

/// Parses the config box out of a one-entry header built with `entry` and `configBox`.
func headerWith(entry: String, configBox: [UInt8], handler: String) throws -> CMAFHeader {
    var spec = handler == "soun" ? HeaderSpec.audio : HeaderSpec.video
    spec.sampleEntryType = entry
    spec.configBox = configBox
    return try CMAFHeader(bytes: spec.bytes())
}

@Suite struct CodecStringTests {
    @Test(arguments: [
        ("avc1", UInt8(0x64), UInt8(0x00), UInt8(0x1f), "avc1.64001f"),
        ("avc3", 0x42, 0xe0, 0x1e, "avc3.42e01e"),
        ("avc1", 0x4d, 0x40, 0x28, "avc1.4d4028"),
    ])
    func avcUsesLowercaseHexOfAVCCBytes1To3(entry: String, profile: UInt8, compatibility: UInt8, level: UInt8, expected: String) throws {
        let header = try headerWith(entry: entry, configBox: ConfigBox.avcC(profile: profile, compatibility: compatibility, level: level), handler: "vide")
        #expect(header.codecString == expected)
        #expect(CodecString.isWellFormed(expected))
    }

    struct HEVCCase: Sendable, CustomTestStringConvertible {
        let profileByte: UInt8
        let compatibility: UInt32
        let constraints: [UInt8]
        let level: UInt8
        let expected: String
        var testDescription: String { expected }
    }

    @Test(arguments: [
        // Main: compatibility flags 1 and 2 set → reversed 0x6.
        HEVCCase(profileByte: 0x01, compatibility: 0x6000_0000, constraints: [0xb0, 0, 0, 0, 0, 0], level: 93, expected: "hvc1.1.6.L93.B0"),
        // Main 10: only flag 2 → 0x4; FFmpeg/x265 progressive + frame-only constraint byte.
        HEVCCase(profileByte: 0x02, compatibility: 0x2000_0000, constraints: [0x90, 0, 0, 0, 0, 0], level: 120, expected: "hvc1.2.4.L120.90"),
        // Profile space 1 ("A"), high tier, flag 4 → 0x10, a non-zero last byte keeps the zeros before it.
        HEVCCase(profileByte: 0x64, compatibility: 0x0800_0000, constraints: [0xb0, 0, 0, 0, 0, 1], level: 153, expected: "hvc1.A4.10.H153.B0.0.0.0.0.1"),
        // No constraint flags: all six bytes are trailing zeros and dropped.
        HEVCCase(profileByte: 0x01, compatibility: 0x6000_0000, constraints: [0, 0, 0, 0, 0, 0], level: 63, expected: "hvc1.1.6.L63"),
        // Flag 31 alone reverses to bit 31.
        HEVCCase(profileByte: 0x81, compatibility: 0x0000_0001, constraints: [0, 0x80, 0, 0, 0, 0], level: 30, expected: "hvc1.B1.80000000.L30.0.80"),
    ])
    func hevcFollowsAnnexE(_ testCase: HEVCCase) throws {
        let header = try headerWith(entry: "hvc1", configBox: ConfigBox.hvcC(profileByte: testCase.profileByte, compatibility: testCase.compatibility,
                                                                             constraints: testCase.constraints, level: testCase.level), handler: "vide")
        #expect(header.codecString == testCase.expected)
        #expect(header.nalLengthSize == 4)
        #expect(CodecString.isWellFormed(testCase.expected))
    }

    @Test func hev1PrefixFollowsTheSampleEntry() throws {
        let header = try headerWith(entry: "hev1", configBox: ConfigBox.hvcC(), handler: "vide")
        #expect(header.codecString == "hev1.1.6.L93.B0")
    }

    @Test(arguments: [
        ([UInt8(0x11), 0x90], false, "mp4a.40.2", 48000, 2),
        ([0x12, 0x10], true, "mp4a.40.2", 44100, 2),
        ([0x2b, 0x10], false, "mp4a.40.5", 24000, 2),
        ([0xeb, 0x10], false, "mp4a.40.29", 24000, 2),
        // Escape value 31: AudioObjectType = 32 + next 6 bits (here USAC, 42).
        ([0xf9, 0x46, 0x20], false, "mp4a.40.42", 48000, 1),
        // Sampling frequency index 15: explicit 24-bit frequency.
        ([0x17, 0x80, 0x5d, 0xc0, 0x10], false, "mp4a.40.2", 48000, 2),
    ])
    func aacTakesTheObjectTypeFromTheAudioSpecificConfig(config: [UInt8], longSizes: Bool, expected: String, rate: Int, channels: Int) throws {
        let header = try headerWith(entry: "mp4a", configBox: ConfigBox.esds(audioSpecificConfig: config, longSizes: longSizes), handler: "soun")
        #expect(header.codecString == expected)
        guard case .mpeg4Audio(let audio)? = header.sampleEntry?.configuration else {
            Issue.record("no MPEG-4 audio configuration")
            return
        }
        #expect(audio.samplingFrequency == rate)
        #expect(audio.channelConfiguration == channels)
        #expect(header.nalLengthSize == nil)
    }

    @Test func otherObjectTypesUseTheirHexIndication() throws {
        let header = try headerWith(entry: "mp4a", configBox: ConfigBox.esds(objectType: 0x6b, audioSpecificConfig: []), handler: "soun")
        #expect(header.codecString == "mp4a.6b")
    }

    @Test func opus() throws {
        let header = try headerWith(entry: "Opus", configBox: ConfigBox.dOps(channels: 1), handler: "soun")
        #expect(header.codecString == "opus")
        #expect(header.sampleEntry?.configuration == .opus(OpusConfiguration(outputChannelCount: 1, preSkip: 312, inputSampleRate: 48000)))
    }

    @Test func malformedConfigBoxesThrow() {
        #expect(throws: CMAFError.self) { try headerWith(entry: "avc1", configBox: box("avcC", [2, 0x64, 0, 0x1f, 0xff]), handler: "vide") }
        #expect(throws: CMAFError.self) { try headerWith(entry: "hvc1", configBox: box("hvcC", [1, 1, 0x60]), handler: "vide") }
        #expect(throws: CMAFError.self) { try headerWith(entry: "mp4a", configBox: fullBox("esds", [0x04, 0x00]), handler: "soun") }
    }

    @Test(arguments: [
        ("avc1.64001f", true), ("avc3.42E01E", true), ("hvc1.1.6.L93.B0", true), ("hev1.A4.10.H153.B0.0.0.0.0.1", true),
        ("hvc1.2.4.L120", true), ("mp4a.40.2", true), ("mp4a.40.42", true), ("mp4a.6b", true), ("opus", true),
        ("", false), ("avc1", false), ("avc1.64001", false), ("avc1.64001g", false), ("hvc1.1.6.93.B0", false),
        ("hvc1.D1.6.L93", false), ("hvc1.1.6.L93.B0.0.0.0.0.0.0", false), ("hvc1.1.123456789.L93", false),
        ("mp4a.40", false), ("mp4a.40.0", false), ("mp4a.40.02", false), ("mp4a.40.x", false), ("opus.1", false),
        ("vp09.00.10.08", false), ("avc1.６４001f", false),
    ])
    func wellFormedness(codec: String, valid: Bool) {
        #expect(CodecString.isWellFormed(codec) == valid)
    }
}
