import _CryptoExtras
import Crypto

/// Common Encryption (ISO/IEC 23001-7), scheme `cenc` (AES-128 in counter mode), applied to CMAF output after the
/// muxer: FFmpeg 5.1's mp4 muxer cannot be trusted with it when fragmenting (FFmpeg itself cannot read back what it
/// writes), so the protection boxes are written here.
///
/// - The header's sample entry becomes `encv`/`enca` with `sinf` (`frma` = the original format, `schm` = `cenc` 1.0,
///   `schi/tenc` = protected by default, 16-byte per-sample IVs, the key ID).
/// - Each chunk's samples are encrypted in place; its `traf` gains `saiz`, `saio` and `senc` (the IVs and, for video,
///   the subsamples, 16-byte IVs) and `trun`'s data offset moves by what was added. Video keeps every NAL unit's length and header
///   (and non-VCL NAL units whole) in the clear, and encrypts whole 16-byte blocks of each slice.
public struct CommonEncryption: Sendable, Hashable {
    public let key: [UInt8]
    public let keyID: [UInt8]

    /// Per-sample IV size in bytes. 16, the whole initial counter block (a 64-bit IV, then a 64-bit block counter
    /// from 0): FFmpeg's reader mishandles 8-byte IVs (it loads a full 16-byte counter from them).
    static let ivSize = 16

    public init(key: [UInt8], keyID: [UInt8]) throws {
        guard key.count == 16, keyID.count == 16 else {
            throw CMAFError.malformed(type: "tenc", offset: 0, reason: "CENC key and key ID must be 16 bytes each")
        }
        self.key = key
        self.keyID = keyID
    }

    /// What any printed form shows: the key ID, never the key (a transport's options, a recording command or an
    /// error that carries this value may be logged).
    static let hiddenKey = "<16 bytes, not shown>"

    // MARK: - Header

    /// The protected form of a CMAF header (`ftyp` + `moov` with one track).
    public func protectHeader(_ bytes: [UInt8]) throws -> [UInt8] {
        let boxes = try BoxReader.parse(bytes)
        guard let moov = boxes.first(where: { $0.type == "moov" }),
              let trak = moov.child("trak"), let mdia = trak.child("mdia"), let minf = mdia.child("minf"),
              let stbl = minf.child("stbl"), let stsd = stbl.child("stsd"), let entry = stsd.children.first
        else { throw CMAFError.malformed(type: "stsd", offset: 0, reason: "no sample entry to protect") }
        let isVideo = BoxReader.visualSampleEntries.contains(entry.type)
        guard isVideo || BoxReader.audioSampleEntries.contains(entry.type), entry.headerSize == 8 else {
            throw CMAFError.malformed(type: entry.type, offset: entry.offset, reason: "cannot protect this sample entry")
        }
        let tenc = Self.fullBox("tenc", version: 0, flags: 0,
                                [0, 0, 1, UInt8(Self.ivSize)] + keyID)
        let sinf = Self.box("sinf", Self.box("frma", entry.type.bytes)
            + Self.fullBox("schm", version: 0, flags: 0, Array("cenc".utf8) + Self.be32(0x0001_0000))
            + Self.box("schi", tenc))
        let protected = Self.box(isVideo ? "encv" : "enca", Array(bytes[entry.payloadRange]) + sinf)
        return try Self.replace(entry, in: bytes, ancestors: [moov, trak, mdia, minf, stbl, stsd], with: protected)
    }

    // MARK: - Chunks

    /// Where the next sample's IV comes from: a random 64-bit start per track, then one more per sample, so no two
    /// samples under the same key share a counter block.
    public struct IVSequence: Sendable {
        var next: UInt64
        public init() { next = UInt64.random(in: 0 ... UInt64.max / 2) }
        init(start: UInt64) { next = start }
        mutating func take() -> UInt64 {
            defer { next &+= 1 }
            return next
        }
    }

    /// Encrypts the samples of one CMAF chunk (`[styp][prft]moof mdat`, one `traf`) and adds its protection boxes.
    /// `header` is the track's clear header (timescale, sample entry, NAL length size).
    public func protectChunk(_ bytes: [UInt8], header: CMAFHeader, ivs: inout IVSequence) throws -> [UInt8] {
        let boxes = try BoxReader.parse(bytes)
        guard let moof = boxes.first(where: { $0.type == "moof" }), let traf = moof.child("traf"),
              let trunBox = traf.child("trun"), moof.headerSize == 8, traf.headerSize == 8
        else { throw CMAFError.malformed(type: "moof", offset: 0, reason: "not a chunk with one traf and a trun") }
        let segment = try CMAFSegment(bytes: bytes, fileName: "chunk", header: header)
        guard let chunk = segment.chunks.first, let dataOffset = chunk.runs.first?.dataOffset else {
            throw CMAFError.malformed(type: "trun", offset: trunBox.offset, reason: "no data offset")
        }
        var out = bytes
        var position = moof.offset + Int(dataOffset)
        let subsampled = header.isVideo
        let nalLengthSize = header.nalLengthSize ?? 4
        var senc: [UInt8] = Self.be32(UInt32(chunk.samples.count))
        var infoSizes: [UInt8] = []
        for sample in chunk.samples {
            let range = position ..< position + Int(sample.size)
            guard range.upperBound <= out.count else {
                throw CMAFError.malformed(type: "mdat", offset: position, reason: "sample runs past the chunk")
            }
            let iv = ivs.take()
            let ranges = subsampled
                ? Self.subsamples(of: out[range], nalLengthSize: nalLengthSize, isHEVC: header.isHEVC)
                : [Subsample(clear: 0, protected: range.count)]
            try encrypt(&out, in: range, ranges: ranges, iv: iv)
            var info = Self.be64(iv) + [UInt8](repeating: 0, count: 8)
            if subsampled {
                info += Self.be16(UInt16(ranges.count))
                for r in ranges { info += Self.be16(UInt16(r.clear)) + Self.be32(UInt32(r.protected)) }
            }
            infoSizes.append(UInt8(info.count))
            senc += info
            position = range.upperBound
        }
        let sencBox = Self.fullBox("senc", version: 0, flags: subsampled ? 2 : 0, senc)
        let uniform = Set(infoSizes).count <= 1
        let saiz = Self.fullBox("saiz", version: 0, flags: 0,
                                [uniform ? (infoSizes.first ?? 0) : 0] + Self.be32(UInt32(infoSizes.count))
                                    + (uniform ? [] : infoSizes))
        // saio points at the first IV inside senc, counted from the moof (default-base-is-moof). senc comes first:
        // FFmpeg's reader takes the first of senc and saiz/saio it meets.
        let sencStart = (traf.offset + traf.size) - moof.offset
        let saio = Self.fullBox("saio", version: 0, flags: 0, Self.be32(1) + Self.be32(UInt32(sencStart + 8 + 4 + 4)))
        let added = sencBox + saiz + saio
        // trun's data offset (relative to the moof) moves by what the traf gains.
        let trunOffsetField = trunBox.offset + 8 + 4 + 4
        let newOffset = UInt32(bitPattern: dataOffset) &+ UInt32(added.count)
        out.replaceSubrange(trunOffsetField ..< trunOffsetField + 4, with: Self.be32(newOffset))
        out.insert(contentsOf: added, at: traf.offset + traf.size)
        for box in [moof, traf] {
            let size = UInt32(box.size + added.count)
            out.replaceSubrange(box.offset ..< box.offset + 4, with: Self.be32(size))
        }
        return out
    }

    /// AES-128-CTR over the protected bytes of one sample, as one keystream: the counter block is the IV followed by
    /// a 64-bit block counter starting at 0, and clear bytes take no keystream.
    private func encrypt(_ bytes: inout [UInt8], in range: Range<Int>, ranges: [Subsample], iv: UInt64) throws {
        var protectedBytes: [UInt8] = []
        var cursor = range.lowerBound
        for r in ranges {
            cursor += r.clear
            protectedBytes += bytes[cursor ..< cursor + r.protected]
            cursor += r.protected
        }
        guard !protectedBytes.isEmpty else { return }
        let nonce = try AES._CTR.Nonce(nonceBytes: Self.be64(iv) + [UInt8](repeating: 0, count: 8))
        let cipher = [UInt8](try AES._CTR.encrypt(protectedBytes, using: SymmetricKey(data: key), nonce: nonce))
        var taken = 0
        cursor = range.lowerBound
        for r in ranges {
            cursor += r.clear
            bytes.replaceSubrange(cursor ..< cursor + r.protected, with: cipher[taken ..< taken + r.protected])
            taken += r.protected
            cursor += r.protected
        }
    }

    /// Clear and protected byte counts of a video sample: every NAL unit's length prefix and header stay clear, a
    /// slice (VCL NAL unit) is encrypted in whole 16-byte blocks after them, other NAL units stay clear.
    static func subsamples(of sample: ArraySlice<UInt8>, nalLengthSize: Int, isHEVC: Bool) -> [Subsample] {
        var ranges: [Subsample] = []
        var clear = 0
        var index = sample.startIndex
        while index + nalLengthSize <= sample.endIndex {
            var length = 0
            for byte in sample[index ..< index + nalLengthSize] { length = length << 8 | Int(byte) }
            let nalStart = index + nalLengthSize
            guard length > 0, nalStart + length <= sample.endIndex else { break }
            let type = isHEVC ? Int(sample[nalStart] >> 1) & 0x3F : Int(sample[nalStart]) & 0x1F
            let isSlice = isHEVC ? type < 32 : (1 ... 5).contains(type)
            let headerSize = isHEVC ? 2 : 1
            let protected = isSlice ? max(0, length - headerSize) / 16 * 16 : 0
            clear += nalLengthSize + length - protected
            if protected > 0 {
                // BytesOfClearData is 16 bits: longer clear runs get entries of their own.
                while clear > 0xFFFF {
                    ranges.append(Subsample(clear: 0xFFFF, protected: 0))
                    clear -= 0xFFFF
                }
                ranges.append(Subsample(clear: clear, protected: protected))
                clear = 0
            }
            index = nalStart + length
        }
        clear += sample.endIndex - index  // anything after the last whole NAL unit stays clear
        while clear > 0xFFFF {
            ranges.append(Subsample(clear: 0xFFFF, protected: 0))
            clear -= 0xFFFF
        }
        if clear > 0 || ranges.isEmpty { ranges.append(Subsample(clear: clear, protected: 0)) }
        return ranges
    }

    /// One subsample entry: clear bytes, then protected bytes.
    struct Subsample: Equatable {
        var clear: Int
        var protected: Int
    }

    // MARK: - Box bytes

    static func box(_ type: FourCC, _ payload: [UInt8]) -> [UInt8] { be32(UInt32(8 + payload.count)) + type.bytes + payload }

    static func fullBox(_ type: FourCC, version: UInt8, flags: UInt32, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version, UInt8(flags >> 16 & 0xFF), UInt8(flags >> 8 & 0xFF), UInt8(flags & 0xFF)] + payload)
    }

    /// `bytes` with `box` replaced by `replacement`; the 32-bit sizes of its `ancestors` grow by the difference.
    static func replace(_ box: Box, in bytes: [UInt8], ancestors: [Box], with replacement: [UInt8]) throws -> [UInt8] {
        var out = bytes
        let delta = replacement.count - box.size
        out.replaceSubrange(box.range, with: replacement)
        for ancestor in ancestors {
            guard ancestor.headerSize == 8 else {
                throw CMAFError.malformed(type: ancestor.type, offset: ancestor.offset, reason: "64-bit box size")
            }
            out.replaceSubrange(ancestor.offset ..< ancestor.offset + 4, with: be32(UInt32(ancestor.size + delta)))
        }
        return out
    }

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func be64(_ v: UInt64) -> [UInt8] { be32(UInt32(v >> 32)) + be32(UInt32(v & 0xFFFF_FFFF)) }
}

/// A printed CommonEncryption — `"\(value)"`, `debugPrint`, `dump`, or the default description of a struct that
/// holds one — shows the key ID only: no log line can carry the content key.
extension CommonEncryption: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "CommonEncryption(keyID: \(hexKeyID), key: \(Self.hiddenKey))"
    }

    public var debugDescription: String { description }

    private var hexKeyID: String { keyID.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }

    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": hexKeyID, "key": Self.hiddenKey],
               displayStyle: .struct)
    }
}
