/// A four-character code identifying a box, brand, handler or sample entry.
public struct FourCC: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral, Codable {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Builds a code from exactly four bytes; returns nil for any other length.
    public init?<C: Collection>(bytes: C) where C.Element == UInt8 {
        guard bytes.count == 4 else { return nil }
        rawValue = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Builds a code from a four-character ASCII string; returns nil otherwise.
    public init?(_ text: String) {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count == 4, scalars.allSatisfy({ $0.isASCII }) else { return nil }
        self.init(bytes: scalars.map { UInt8($0.value) })
    }

    /// String literals are code, not input: a malformed literal is a programming error.
    public init(stringLiteral value: String) {
        guard let code = FourCC(value) else { preconditionFailure("FourCC literal must be 4 ASCII characters: \(value)") }
        self = code
    }

    public var bytes: [UInt8] { [UInt8(rawValue >> 24), UInt8(rawValue >> 16 & 0xff), UInt8(rawValue >> 8 & 0xff), UInt8(rawValue & 0xff)] }

    /// Printable form; bytes outside printable ASCII are shown as `\xNN` so corrupt input stays readable.
    public var description: String {
        bytes.map { $0 >= 0x20 && $0 < 0x7f ? String(UnicodeScalar($0)) : "\\x" + hex2($0) }.joined()
    }

    public static func < (lhs: FourCC, rhs: FourCC) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let code = FourCC(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a four-character code: \(text)"))
        }
        self = code
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

func hex2(_ byte: UInt8, uppercase: Bool = false) -> String {
    let digits: [Character] = Array(uppercase ? "0123456789ABCDEF" : "0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
}
