/// The few Matter TLV encodings the TLS Client Management cluster needs (Matter Core spec, appendix A).
///
/// `TLSClientCSR` answers with a signature over the TLV encoding of an anonymous structure `{1: csr, 2: nonce}`;
/// the controller re-encodes the same structure to verify it, so the bytes must be exactly the shortest form.
public enum MatterTLV {
    /// An anonymous structure of context-tagged octet strings, in the order given.
    public static func anonymousStructure(octetStrings fields: [(tag: UInt8, value: [UInt8])]) -> [UInt8] {
        var bytes: [UInt8] = [0x15]  // anonymous tag, structure
        for field in fields { bytes += octetString(tag: field.tag, field.value) }
        bytes.append(0x18)  // end of container
        return bytes
    }

    /// A context-tagged octet string with the shortest length field (1, 2, 4 or 8 bytes, little endian).
    public static func octetString(tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        let contextTag: UInt8 = 0x20
        let length = UInt64(value.count)
        let (type, width): (UInt8, Int) = switch length {
        case ...0xFF: (0x10, 1)
        case ...0xFFFF: (0x11, 2)
        case ...0xFFFF_FFFF: (0x12, 4)
        default: (0x13, 8)
        }
        var bytes: [UInt8] = [contextTag | type, tag]
        for index in 0..<width { bytes.append(UInt8(truncatingIfNeeded: length >> (8 * UInt64(index)))) }
        return bytes + value
    }
}
