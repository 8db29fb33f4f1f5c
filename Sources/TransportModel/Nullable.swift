/// A value the cluster lets a client send as null, where null means something different from absent.
///
/// Matter distinguishes three states for an optional nullable field (VideoStreamID: absent = no video, null =
/// automatic selection, value = that stream). Swift's `Optional` has only two, so such fields are declared
/// `Nullable<T>?`: `nil` is absent, `.null` is null, `.value(x)` is a value.
public enum Nullable<Wrapped> {
    case null
    case value(Wrapped)

    /// The value, or `nil` when null.
    public var value: Wrapped? {
        if case .value(let wrapped) = self { return wrapped }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

extension Nullable: Sendable where Wrapped: Sendable {}
extension Nullable: Equatable where Wrapped: Equatable {}
extension Nullable: Hashable where Wrapped: Hashable {}

extension Nullable: Decodable where Wrapped: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = container.decodeNil() ? .null : .value(try container.decode(Wrapped.self))
    }
}

extension Nullable: Encodable where Wrapped: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .value(let wrapped): try container.encode(wrapped)
        }
    }
}

extension KeyedDecodingContainer {
    /// Absent → `nil`, null → `.null`, otherwise `.value`: the distinction `decodeIfPresent` erases.
    public func decodeOptionalNullable<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> Nullable<T>? {
        guard contains(key) else { return nil }
        return try decodeNil(forKey: key) ? .null : .value(decode(T.self, forKey: key))
    }
}
