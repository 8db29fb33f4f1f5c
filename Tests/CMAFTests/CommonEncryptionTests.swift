@testable import CMAF
import Testing

@Suite struct CommonEncryptionTests {
    /// A length-prefixed NAL unit (4-byte length) of `size` bytes whose first byte is `header`.
    static func nal(_ header: UInt8, size: Int) -> [UInt8] {
        CommonEncryption.be32(UInt32(size)) + [header] + [UInt8](repeating: 0xAB, count: size - 1)
    }

    /// (name, sample, HEVC?, expected (clear, protected) entries)
    static let cases: [(String, [UInt8], Bool, [CommonEncryption.Subsample])] = [
        ("AVC IDR slice: length and header clear, then whole blocks", nal(0x65, size: 100), false, [.init(clear: 4 + 4, protected: 96)]),
        ("AVC parameter sets stay clear, then the slice", nal(0x67, size: 20) + nal(0x68, size: 6) + nal(0x65, size: 33), false,
         [.init(clear: 24 + 10 + 4 + 1, protected: 32)]),
        ("AVC slice shorter than a block: all clear", nal(0x41, size: 12), false, [.init(clear: 16, protected: 0)]),
        ("two AVC slices: one entry each", nal(0x41, size: 17) + nal(0x41, size: 49), false,
         [.init(clear: 4 + 1, protected: 16), .init(clear: 4 + 1, protected: 48)]),
        ("HEVC IDR (type 19): two header bytes clear", [0, 0, 0, 50, 0x26, 0x01] + [UInt8](repeating: 1, count: 48), true,
         [.init(clear: 4 + 2, protected: 48)]),
        ("HEVC SEI (type 39) stays clear", [0, 0, 0, 40, 0x4E, 0x01] + [UInt8](repeating: 1, count: 38), true, [.init(clear: 44, protected: 0)]),
        ("clear run over 65535 bytes is split", nal(0x06, size: 70_000) + nal(0x65, size: 17), false,
         [.init(clear: 65_535, protected: 0), .init(clear: 70_004 - 65_535 + 4 + 1, protected: 16)]),
        ("bytes after the last whole NAL unit stay clear", nal(0x65, size: 33) + [9, 9, 9], false,
         [.init(clear: 4 + 1, protected: 32), .init(clear: 3, protected: 0)]),
    ]

    @Test(arguments: cases.indices)
    func subsamplesKeepHeadersClearAndEncryptWholeBlocks(_ index: Int) {
        let (name, sample, hevc, expected) = Self.cases[index]
        let ranges = CommonEncryption.subsamples(of: sample[...], nalLengthSize: 4, isHEVC: hevc)
        #expect(ranges == expected, "\(name)")
        #expect(ranges.reduce(0) { $0 + $1.clear + $1.protected } == sample.count, "\(name): the entries tile the sample")
    }

    @Test func keyAndKeyIDMustBeSixteenBytes() {
        #expect(throws: (any Error).self) { try CommonEncryption(key: [UInt8](repeating: 1, count: 15), keyID: [UInt8](repeating: 2, count: 16)) }
        #expect(throws: (any Error).self) { try CommonEncryption(key: [UInt8](repeating: 1, count: 16), keyID: []) }
    }
}
