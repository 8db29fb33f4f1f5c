// Test-only writer for ISO-BMFF boxes, so tests build their inputs instead of reading files.

/// Big-endian byte writer.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { uint(UInt64(value), width: 2) }
    mutating func u24(_ value: UInt32) { uint(UInt64(value), width: 3) }
    mutating func u32(_ value: UInt32) { uint(UInt64(value), width: 4) }
    mutating func u64(_ value: UInt64) { uint(value, width: 8) }
    mutating func i16(_ value: Int16) { u16(UInt16(bitPattern: value)) }
    mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
    mutating func fourCC(_ code: String) { bytes += Array(code.utf8) }
    mutating func zeros(_ count: Int) { bytes += [UInt8](repeating: 0, count: count) }
    mutating func append(_ more: [UInt8]) { bytes += more }

    private mutating func uint(_ value: UInt64, width: Int) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// A box with a 32-bit size.
func box(_ type: String, _ payload: [UInt8] = []) -> [UInt8] {
    var writer = ByteWriter()
    writer.u32(UInt32(8 + payload.count))
    writer.fourCC(type)
    writer.append(payload)
    return writer.bytes
}

/// A container box.
func box(_ type: String, children: [[UInt8]]) -> [UInt8] { box(type, children.flatMap { $0 }) }

/// A FullBox: version, 24-bit flags, then `payload`.
func fullBox(_ type: String, version: UInt8 = 0, flags: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(version)
    writer.u24(flags)
    writer.append(payload)
    return box(type, writer.bytes)
}

/// A box using the 64-bit largesize header.
func largeBox(_ type: String, _ payload: [UInt8]) -> [UInt8] {
    var writer = ByteWriter()
    writer.u32(1)
    writer.fourCC(type)
    writer.u64(UInt64(16 + payload.count))
    writer.append(payload)
    return writer.bytes
}

func payload(_ build: (inout ByteWriter) -> Void) -> [UInt8] {
    var writer = ByteWriter()
    build(&writer)
    return writer.bytes
}

/// Length-prefixed (4-byte) NAL units.
func nalSample(_ units: [[UInt8]]) -> [UInt8] {
    units.flatMap { unit in payload { $0.u32(UInt32(unit.count)); $0.append(unit) } }
}

enum NAL {
    static let avcIDR: [UInt8] = [0x65, 0x88, 0x84, 0x00]
    static let avcNonIDR: [UInt8] = [0x41, 0x9a, 0x02]
    static let avcSPS: [UInt8] = [0x67, 0x64, 0x00, 0x1f]
    /// HEVC two-byte headers: type << 1, then layer 0 / temporal id 1.
    static func hevc(_ type: UInt8) -> [UInt8] { [type << 1, 0x01, 0xaf, 0x00] }
}

enum ConfigBox {
    static func avcC(profile: UInt8 = 0x64, compatibility: UInt8 = 0x00, level: UInt8 = 0x1f, lengthSizeMinusOne: UInt8 = 3) -> [UInt8] {
        box("avcC", [1, profile, compatibility, level, 0xfc | lengthSizeMinusOne, 0xe1, 0x00, 0x04] + NAL.avcSPS + [0x01, 0x00, 0x02, 0x68, 0xee])
    }

    static func hvcC(profileByte: UInt8 = 0x01, compatibility: UInt32 = 0x6000_0000,
                     constraints: [UInt8] = [0xb0, 0, 0, 0, 0, 0], level: UInt8 = 93) -> [UInt8] {
        box("hvcC", payload {
            $0.u8(1)
            $0.u8(profileByte)
            $0.u32(compatibility)
            $0.append(constraints)
            $0.u8(level)
            $0.append([0xf0, 0x00, 0xfc, 0xfd, 0xf8, 0xf8, 0x00, 0x00, 0x0f, 0x00])
        })
    }

    /// `esds` with the given AudioSpecificConfig; `longSizes` writes FFmpeg-style 4-byte descriptor sizes.
    static func esds(objectType: UInt8 = 0x40, audioSpecificConfig: [UInt8] = [0x11, 0x90], longSizes: Bool = false) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
            let size: [UInt8] = longSizes ? [0x80, 0x80, 0x80, UInt8(body.count)] : [UInt8(body.count)]
            return [tag] + size + body
        }
        let decoderSpecific = descriptor(0x05, audioSpecificConfig)
        let decoderConfig = descriptor(0x04, [objectType, 0x15, 0, 0, 0, 0, 1, 0xf4, 0, 0, 1, 0xf4, 0] + decoderSpecific)
        let es = descriptor(0x03, [0x00, 0x01, 0x00] + decoderConfig + descriptor(0x06, [0x02]))
        return fullBox("esds", es)
    }

    static func dOps(channels: UInt8 = 2) -> [UInt8] {
        box("dOps", payload {
            $0.u8(0)
            $0.u8(channels)
            $0.u16(312)
            $0.u32(48000)
            $0.i16(0)
            $0.u8(0)
        })
    }
}
