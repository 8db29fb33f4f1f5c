/// One ISO-BMFF box: its type, where it sits in the file and, for container boxes, its parsed children.
public struct Box: Hashable, Sendable {
    public let type: FourCC
    /// The 16-byte extended type of a `uuid` box, nil otherwise.
    public let userType: [UInt8]?
    /// Absolute offset of the first header byte.
    public let offset: Int
    /// Total size including the header (after resolving largesize and size 0).
    public let size: Int
    /// 8, 16 with largesize, plus 16 for `uuid`.
    public let headerSize: Int
    /// Children in file order; empty for leaf boxes.
    public let children: [Box]

    public init(type: FourCC, userType: [UInt8]? = nil, offset: Int, size: Int, headerSize: Int, children: [Box] = []) {
        self.type = type
        self.userType = userType
        self.offset = offset
        self.size = size
        self.headerSize = headerSize
        self.children = children
    }

    public var range: Range<Int> { offset ..< offset + size }
    public var payloadRange: Range<Int> { offset + headerSize ..< offset + size }
    public var childTypes: [FourCC] { children.map(\.type) }

    /// First child of the given type.
    public func child(_ type: FourCC) -> Box? { children.first { $0.type == type } }

    /// All children of the given type.
    public func children(_ type: FourCC) -> [Box] { children.filter { $0.type == type } }

    /// Follows a path of child types, taking the first match at each level.
    public func descendant(_ path: FourCC...) -> Box? { descendant(path) }

    public func descendant(_ path: [FourCC]) -> Box? {
        var current = self
        for type in path {
            guard let next = current.child(type) else { return nil }
            current = next
        }
        return current
    }
}

/// Parses a byte buffer into a box tree. Containers listed in ``containerPayloadPrefix`` are descended into.
public enum BoxReader {
    /// Deeper nesting than this never occurs in real files (moov/trak/mdia/minf/stbl/stsd/entry/box is 8).
    public static let maximumDepth = 16

    /// Boxes whose payload is a sequence of boxes, with the number of bytes to skip before the first child.
    /// Sample entries are containers here because their config boxes (avcC, esds, btrt …) are children.
    public static let containerPayloadPrefix: [FourCC: Int] = {
        var table: [FourCC: Int] = [:]
        for type: FourCC in ["moov", "trak", "mdia", "minf", "stbl", "mvex", "edts", "dinf", "moof", "traf",
                             "udta", "mfra", "sinf", "schi", "tref", "rinf"] {
            table[type] = 0
        }
        // FullBox header plus entry_count.
        table["stsd"] = 8
        table["dref"] = 8
        // FullBox header; the QuickTime variant without it is detected in `childOffset`.
        table["meta"] = 4
        for type in visualSampleEntries { table[type] = 78 }
        for type in audioSampleEntries { table[type] = 28 }
        return table
    }()

    public static let visualSampleEntries: Set<FourCC> = ["avc1", "avc3", "hvc1", "hev1", "encv", "av01", "vp09", "mp4v", "dvh1", "dvhe"]
    public static let audioSampleEntries: Set<FourCC> = ["mp4a", "Opus", "enca", "ac-3", "ec-3", "fLaC", "alac"]

    /// Parses all top-level boxes of `bytes`.
    /// - Throws: ``CMAFError`` when a box is truncated, overlaps its container or nests absurdly deep.
    public static func parse(_ bytes: [UInt8]) throws -> [Box] {
        try parseSequence(bytes, range: 0 ..< bytes.count, depth: 0, tolerateTrailingBytes: false)
    }

    static func parseSequence(_ bytes: [UInt8], range: Range<Int>, depth: Int, tolerateTrailingBytes: Bool) throws -> [Box] {
        guard depth <= maximumDepth else { throw CMAFError.nestingTooDeep(offset: range.lowerBound) }
        var boxes: [Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            // Some writers pad sample entries with a few zero bytes; nothing else may leave a partial header.
            if tolerateTrailingBytes && range.upperBound - offset < 8 { break }
            let box = try parseBox(bytes, at: offset, parentEnd: range.upperBound, depth: depth)
            boxes.append(box)
            offset += box.size
        }
        return boxes
    }

    static func parseBox(_ bytes: [UInt8], at offset: Int, parentEnd: Int, depth: Int) throws -> Box {
        var header = ByteCursor(bytes, range: offset ..< parentEnd, type: FourCC(rawValue: 0), boxOffset: offset)
        guard header.remaining >= 8 else { throw CMAFError.truncatedBoxHeader(offset: offset) }
        let size32 = try header.u32()
        let type = try header.fourCC()
        var headerSize = 8
        var declared = UInt64(size32)
        if size32 == 1 {
            guard header.remaining >= 8 else { throw CMAFError.truncatedBoxHeader(offset: offset) }
            declared = try header.u64()
            headerSize = 16
        } else if size32 == 0 {
            declared = UInt64(parentEnd - offset)
        }
        var userType: [UInt8]?
        if type == "uuid" {
            guard header.remaining >= 16 else { throw CMAFError.truncatedBoxHeader(offset: offset) }
            userType = Array(try header.read(16))
            headerSize += 16
        }
        guard declared >= UInt64(headerSize) else {
            throw CMAFError.invalidBoxSize(type: type, offset: offset, size: declared)
        }
        guard declared <= UInt64(parentEnd - offset) else {
            throw CMAFError.boxExceedsParent(type: type, offset: offset, size: declared, parentEnd: parentEnd)
        }
        let size = Int(declared)
        var children: [Box] = []
        if let prefix = childOffset(of: type, bytes: bytes, payloadStart: offset + headerSize, end: offset + size) {
            let start = offset + headerSize + prefix
            guard start <= offset + size else { throw CMAFError.truncatedPayload(type: type, offset: offset) }
            let isSampleEntry = visualSampleEntries.contains(type) || audioSampleEntries.contains(type)
            children = try parseSequence(bytes, range: start ..< offset + size, depth: depth + 1, tolerateTrailingBytes: isSampleEntry)
        }
        return Box(type: type, userType: userType, offset: offset, size: size, headerSize: headerSize, children: children)
    }

    /// Bytes between the payload start and the first child, or nil for leaf boxes.
    static func childOffset(of type: FourCC, bytes: [UInt8], payloadStart: Int, end: Int) -> Int? {
        guard var prefix = containerPayloadPrefix[type] else { return nil }
        if type == "meta", payloadStart + 8 <= end, FourCC(bytes: bytes[payloadStart + 4 ..< payloadStart + 8]) == "hdlr" {
            prefix = 0
        }
        if audioSampleEntries.contains(type), payloadStart + 10 <= end {
            // QuickTime sound description versions 1 and 2 append 16 and 36 bytes.
            let version = UInt16(bytes[payloadStart + 8]) << 8 | UInt16(bytes[payloadStart + 9])
            if version == 1 { prefix += 16 } else if version == 2 { prefix += 36 }
        }
        return prefix
    }
}
