/// The kind of picture a video sample starts a segment with, from its NAL unit types.
public enum RandomAccessPicture: String, Hashable, Sendable, Codable {
    /// AVC nal_unit_type 5, HEVC IDR_W_RADL (19) / IDR_N_LP (20): SAP 1/2.
    case idr
    /// HEVC CRA_NUT (21): SAP 1/2 only without associated RASL pictures, SAP 3 otherwise.
    case cra
    /// HEVC BLA_W_LP/BLA_W_RADL/BLA_N_LP (16…18).
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
