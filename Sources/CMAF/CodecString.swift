/// Syntax checks for the RFC 6381 codecs parameters this project produces.
public enum CodecString {
    /// Whether `codec` is a syntactically valid `avc1/avc3`, `hvc1/hev1`, `mp4a` or `opus` codecs parameter.
    public static func isWellFormed(_ codec: String) -> Bool {
        let parts = codec.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let prefix = parts.first else { return false }
        let rest = Array(parts.dropFirst())
        switch prefix {
        case "avc1", "avc3":
            return rest.count == 1 && rest[0].count == 6 && isHex(rest[0])
        case "hvc1", "hev1":
            return isWellFormedHEVC(rest)
        case "mp4a":
            if rest.count == 2 {
                // AudioObjectType 1…95 are defined or reserved values; 0 is "null object".
                return rest[0] == "40" && rest[1].allSatisfy(\.isASCIIDigit) && (1 ... 95).contains(Int(rest[1]) ?? 0) && !rest[1].hasPrefix("0")
            }
            return rest.count == 1 && rest[0].count == 2 && isHex(rest[0]) && rest[0].lowercased() != "40"
        case "opus":
            return rest.isEmpty
        default:
            return false
        }
    }

    private static func isWellFormedHEVC(_ fields: [String]) -> Bool {
        // profile, compatibility, tier+level, then up to six constraint bytes.
        guard (3 ... 9).contains(fields.count) else { return false }
        var profile = Substring(fields[0])
        if let first = profile.first, "ABC".contains(first) { profile = profile.dropFirst() }
        guard !profile.isEmpty, profile.allSatisfy(\.isASCIIDigit), let profileIDC = Int(profile), profileIDC < 32 else { return false }
        guard (1 ... 8).contains(fields[1].count), isHex(fields[1]) else { return false }
        let tierLevel = fields[2]
        guard let tier = tierLevel.first, tier == "L" || tier == "H" else { return false }
        let level = tierLevel.dropFirst()
        guard !level.isEmpty, level.allSatisfy(\.isASCIIDigit), let levelIDC = Int(level), levelIDC <= 255 else { return false }
        return fields.dropFirst(3).allSatisfy { (1 ... 2).contains($0.count) && isHex($0) }
    }

    private static func isHex(_ text: String) -> Bool { !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isHexDigit } }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
