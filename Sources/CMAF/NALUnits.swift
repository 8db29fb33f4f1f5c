/// The kind of picture a video sample starts a segment with, from its NAL unit types.
public enum RandomAccessPicture: String, Hashable, Sendable, Codable {
    /// AVC nal_unit_type 5, HEVC IDR_W_RADL (19) / IDR_N_LP (20): SAP 1/2.
    case idr
    /// HEVC CRA_NUT (21): SAP 1/2 only without associated RASL pictures, SAP 3 otherwise.
    case cra
    /// HEVC BLA_W_LP/BLA_W_RADL/BLA_N_LP (16…18): like a CRA; only BLA_W_LP may have RASL pictures.
    case bla
    /// No IRAP NAL unit in the sample.
    case nonRandomAccess
    /// The length-prefixed NAL units do not fit the sample, or the sample lies outside the file.
    case unparseable
}

/// Splits length-prefixed samples (ISO/IEC 14496-15) into NAL unit types.
public enum NALUnits {
    /// NAL unit types of the sample at `range`, or nil if the length prefixes do not tile the sample exactly.
    public static func unitTypes(in bytes: [UInt8], range: Range<Int>, lengthSize: Int, isHEVC: Bool) -> [UInt8]? {
        guard [1, 2, 4].contains(lengthSize), range.lowerBound >= 0, range.upperBound <= bytes.count else { return nil }
        var types: [UInt8] = []
        var position = range.lowerBound
        while position < range.upperBound {
            guard range.upperBound - position > lengthSize else { return nil }
            var length = 0
            for index in 0 ..< lengthSize { length = length << 8 | Int(bytes[position + index]) }
            position += lengthSize
            guard length > 0, length <= range.upperBound - position else { return nil }
            let header = bytes[position]
            types.append(isHEVC ? (header >> 1) & 0x3f : header & 0x1f)
            position += length
        }
        return types
    }

    /// Classifies a sample by its most significant random-access NAL unit.
    public static func classify(_ types: [UInt8]?, isHEVC: Bool) -> RandomAccessPicture {
        guard let types else { return .unparseable }
        if isHEVC {
            if types.contains(where: { $0 == 19 || $0 == 20 }) { return .idr }
            if types.contains(21) { return .cra }
            if types.contains(where: { (16 ... 18).contains($0) }) { return .bla }
        } else if types.contains(5) {
            return .idr
        }
        return .nonRandomAccess
    }

    /// HEVC RASL_N / RASL_R: leading pictures that cannot be decoded when decoding starts at the CRA.
    static func isRASL(_ type: UInt8) -> Bool { type == 8 || type == 9 }
    /// HEVC IRAP range (BLA, IDR, CRA and reserved IRAP types).
    static func isIRAP(_ type: UInt8) -> Bool { (16 ... 23).contains(type) }
}

/// What one coded picture offers for random access, from its NAL unit types: the input to
/// ``AccessPointLookahead``, which decides the stream access point (SAP, ISO/IEC 14496-12 Annex I) type.
///
/// MSE and CMAF start a segment only on SAP type 1 or 2: a picture that decodes on its own and after which every
/// picture in decode order decodes too. An IDR is always one. An HEVC CRA (or BLA_W_LP) is one only when no RASL
/// picture is associated with it (RASL pictures reference pictures before the CRA: SAP 3). x265 with its default
/// open GOPs writes CRAs instead of IDRs; with B-frames off they have no leading pictures at all.
public enum AccessPointKind: Sendable, Hashable {
    /// SAP 1 or 2 on its own: AVC IDR (5); HEVC IDR_W_RADL (19), IDR_N_LP (20), BLA_W_RADL (17) and BLA_N_LP (18),
    /// which by definition have no RASL pictures.
    case closed
    /// HEVC CRA (21) or BLA_W_LP (16): SAP 1/2 when no RASL picture follows it before its first trailing picture,
    /// SAP 3 otherwise.
    case open
    /// HEVC RASL_N/RASL_R (8, 9): a leading picture that cannot be decoded when decoding starts at its IRAP.
    case skippedLeading
    /// HEVC RADL_N/RADL_R (6, 7): a leading picture decodable from its IRAP.
    case decodableLeading
    /// Anything else: trailing pictures, AVC non-IDR pictures (recovery-point I pictures included), reserved types.
    case other
}

extension NALUnits {
    /// Classifies one picture (one sample) by its NAL unit types.
    public static func accessPoint(_ types: [UInt8], isHEVC: Bool) -> AccessPointKind {
        guard isHEVC else { return types.contains(5) ? .closed : .other }
        if types.contains(where: { (17 ... 20).contains($0) }) { return .closed }
        if types.contains(21) || types.contains(16) { return .open }
        if types.contains(where: isRASL) { return .skippedLeading }
        if types.contains(6) || types.contains(7) { return .decodableLeading }
        return .other
    }
}

/// Decides, in decode order, which pictures are clean random access points (SAP type 1 or 2).
///
/// An ``AccessPointKind/open`` picture is held until the pictures after it tell: leading pictures come right after
/// their IRAP in decode order, before any trailing picture, so the first picture that is neither RADL nor RASL ends
/// the question. A RASL picture makes it SAP 3 (refused); a trailing picture, a new IRAP or the end of the stream
/// without one makes it SAP 1/2. At most `limit` pictures are held; a CRA still undecided then is refused (a stream
/// of only RADL pictures after a CRA is not something real encoders write).
public struct AccessPointLookahead<Item> {
    public struct Decided {
        public var item: Item
        /// SAP 1 or 2: a segment or clip may start here.
        public var isAccessPoint: Bool
    }

    private var held: [Item] = []
    public let limit: Int

    public init(limit: Int = 64) { self.limit = max(1, limit) }

    /// True when no picture waits for its verdict.
    public var isEmpty: Bool { held.isEmpty }
    /// Pictures waiting for their verdict.
    public var count: Int { held.count }

    /// Takes the next picture in decode order and returns every picture whose verdict is now known, in order.
    public mutating func add(_ item: Item, _ kind: AccessPointKind) -> [Decided] {
        guard !held.isEmpty else {
            if kind == .open {
                held = [item]
                return []
            }
            return [Decided(item: item, isAccessPoint: kind == .closed)]
        }
        switch kind {
        case .skippedLeading:
            return release(headIsAccessPoint: false) + [Decided(item: item, isAccessPoint: false)]
        case .decodableLeading:
            held.append(item)
            return held.count > limit ? release(headIsAccessPoint: false) : []
        case .open:
            let decided = release(headIsAccessPoint: true)
            held = [item]
            return decided
        case .closed, .other:
            return release(headIsAccessPoint: true) + [Decided(item: item, isAccessPoint: kind == .closed)]
        }
    }

    /// The stream ended (or stopped): a held IRAP had no RASL picture after it, so it is SAP 1/2.
    public mutating func flush() -> [Decided] {
        held.isEmpty ? [] : release(headIsAccessPoint: true)
    }

    private mutating func release(headIsAccessPoint: Bool) -> [Decided] {
        defer { held.removeAll() }
        return held.enumerated().map { Decided(item: $1, isAccessPoint: $0 == 0 && headIsAccessPoint) }
    }
}
