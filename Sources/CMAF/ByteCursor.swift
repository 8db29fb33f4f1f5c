/// Bounds-checked big-endian reader over one region of a file; every read past `end` throws instead of trapping.
struct ByteCursor {
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int
    /// Reported in errors so a failure points at the box being decoded.
    let type: FourCC
    let boxOffset: Int

    init(_ bytes: [UInt8], range: Range<Int>, type: FourCC, boxOffset: Int) {
        self.bytes = bytes
        let lower = max(0, min(range.lowerBound, bytes.count))
        position = lower
        end = max(lower, min(range.upperBound, bytes.count))
        self.type = type
        self.boxOffset = boxOffset
    }

    /// A cursor over a box payload.
    init(_ bytes: [UInt8], box: Box) {
        self.init(bytes, range: box.payloadRange, type: box.type, boxOffset: box.offset)
    }

    var remaining: Int { end - position }

    private func truncated() -> CMAFError { .truncatedPayload(type: type, offset: boxOffset) }

    mutating func skip(_ count: Int) throws {
        guard count >= 0, count <= remaining else { throw truncated() }
        position += count
    }

    mutating func read(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw truncated() }
        defer { position += count }
        return bytes[position ..< position + count]
    }

    mutating func readUInt(_ width: Int) throws -> UInt64 {
        try read(width).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func u8() throws -> UInt8 { UInt8(try readUInt(1)) }
    mutating func u16() throws -> UInt16 { UInt16(try readUInt(2)) }
    mutating func u24() throws -> UInt32 { UInt32(try readUInt(3)) }
    mutating func u32() throws -> UInt32 { UInt32(try readUInt(4)) }
    mutating func u64() throws -> UInt64 { try readUInt(8) }
    mutating func i16() throws -> Int16 { Int16(bitPattern: try u16()) }
    mutating func i32() throws -> Int32 { Int32(bitPattern: try u32()) }
    mutating func i64() throws -> Int64 { Int64(bitPattern: try u64()) }
    mutating func fourCC() throws -> FourCC { FourCC(rawValue: try u32()) }

    /// FullBox version and flags.
    mutating func versionAndFlags() throws -> (version: UInt8, flags: UInt32) {
        let word = try u32()
        return (UInt8(word >> 24), word & 0x00ff_ffff)
    }

    /// Reads a full box's version and flags and skips its creation and modification times (64-bit each in version 1,
    /// 32-bit in version 0), where `mvhd`, `tkhd` and `mdhd` carry their fields; returns the version, which sizes the
    /// duration that follows.
    mutating func skipVersionAndTimes() throws -> UInt8 {
        let version = try versionAndFlags().version
        try skip(version == 1 ? 16 : 8)
        return version
    }

    /// A 32-bit field in version 0, 64-bit in version 1 (mvhd, tkhd, mdhd, mehd, tfdt, elst).
    mutating func versioned(_ version: UInt8) throws -> UInt64 {
        version == 1 ? try u64() : UInt64(try u32())
    }
}
