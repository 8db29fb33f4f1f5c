/// RFC 6381 codec strings, read back from what we wrote.
enum CodecStrings {
    static func rfc6381(initSegment: [UInt8]) -> String? { nil }
}
