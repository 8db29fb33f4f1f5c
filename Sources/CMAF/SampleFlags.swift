/// The 32-bit sample flags of `trex`, `tfhd` and `trun` (ISO/IEC 14496-12 8.8.3.1).
public struct SampleFlags: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// What FFmpeg writes for a keyframe: depends_on = 2 (does not depend on others), sync.
    public static let syncSample = SampleFlags(rawValue: 0x0200_0000)
    /// depends_on = 1, is_non_sync_sample = 1.
    public static let nonSyncSample = SampleFlags(rawValue: 0x0101_0000)

    public var isLeading: UInt8 { UInt8(rawValue >> 26 & 0x3) }
    /// 1 = depends on others (not an I picture), 2 = does not depend on others, 0 = unknown.
    public var dependsOn: UInt8 { UInt8(rawValue >> 24 & 0x3) }
    public var isDependedOn: UInt8 { UInt8(rawValue >> 22 & 0x3) }
    public var hasRedundancy: UInt8 { UInt8(rawValue >> 20 & 0x3) }
    public var paddingValue: UInt8 { UInt8(rawValue >> 17 & 0x7) }
    public var isNonSyncSample: Bool { rawValue & 0x0001_0000 != 0 }
    public var degradationPriority: UInt16 { UInt16(rawValue & 0xffff) }
    public var isSync: Bool { !isNonSyncSample }

    public var description: String {
        "0x" + String(rawValue, radix: 16) + " (depends_on \(dependsOn), \(isSync ? "sync" : "non-sync"))"
    }
}
