/// Why a box tree or a box payload could not be parsed. Offsets are absolute byte offsets in the file.
public enum CMAFError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Fewer than 8 (or 16 for a largesize/uuid header) bytes remain where a box header must start.
    case truncatedBoxHeader(offset: Int)
    /// The declared size is smaller than the header itself.
    case invalidBoxSize(type: FourCC, offset: Int, size: UInt64)
    /// The box claims bytes beyond its parent (or the file), i.e. it is truncated or overlaps its siblings.
    case boxExceedsParent(type: FourCC, offset: Int, size: UInt64, parentEnd: Int)
    /// A field of a box payload lies beyond the end of the box.
    case truncatedPayload(type: FourCC, offset: Int)
    /// Containers nest deeper than any real file does; refused to bound recursion on hostile input.
    case nestingTooDeep(offset: Int)
    /// A field holds a value the parser cannot interpret.
    case malformed(type: FourCC, offset: Int, reason: String)

    public var description: String {
        switch self {
        case .truncatedBoxHeader(let offset):
            "truncated box header at offset \(offset)"
        case .invalidBoxSize(let type, let offset, let size):
            "box '\(type)' at offset \(offset) has invalid size \(size)"
        case .boxExceedsParent(let type, let offset, let size, let parentEnd):
            "box '\(type)' at offset \(offset) with size \(size) extends past its container end \(parentEnd)"
        case .truncatedPayload(let type, let offset):
            "box '\(type)' at offset \(offset) is too short for its fields"
        case .nestingTooDeep(let offset):
            "boxes nested too deeply at offset \(offset)"
        case .malformed(let type, let offset, let reason):
            "box '\(type)' at offset \(offset): \(reason)"
        }
    }
}
