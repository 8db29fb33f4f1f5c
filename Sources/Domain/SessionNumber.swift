/// A recording's CMAF session number: the `session_<n>` folder its objects are uploaded under and the
/// CMAFSessionNumber of its PushTransportBegin and End events (a uint64 in the cluster).
///
/// Why a type of its own: the number is made by the connection's recording state machine, carried by the recorder's
/// events, filed by the spool, announced by the cluster and shown by the API. As a bare integer it was an `Int` in
/// some of those places, a `UInt64` or an `Int64` in others, and every crossing converted it; now it is the same
/// value everywhere, and only the two edges that store or print a plain number (SQLite, JSON) convert it.
public struct SessionNumber: RawRepresentable, Hashable, Strideable, Sendable, ExpressibleByIntegerLiteral,
    CustomStringConvertible, Codable
{
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ value: UInt64) { self.rawValue = value }
    public init(integerLiteral value: UInt64) { self.rawValue = value }

    /// The number a session after this one takes (numbers are never reused on a connection).
    public var next: SessionNumber { SessionNumber(rawValue &+ 1) }

    /// The first session a connection records.
    public static let first: SessionNumber = 1

    public var description: String { String(rawValue) }

    /// The folder a session's objects are uploaded under: `session_<n>` (the CMAF ingest layout).
    public var folderName: String { "session_\(rawValue)" }

    /// Reads a ``folderName``: `session_` and decimal digits only (no sign, no space), within UInt64; nil otherwise.
    public init?(folderName name: some StringProtocol) {
        guard name.hasPrefix("session_") else { return nil }
        let digits = name.dropFirst(8)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt64(digits) else { return nil }
        rawValue = value
    }

    public static func < (lhs: SessionNumber, rhs: SessionNumber) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Strideable: a range of sessions (`SessionNumber.first...last`) counts them one by one.
    public func distance(to other: SessionNumber) -> Int64 { Int64(bitPattern: other.rawValue &- rawValue) }
    public func advanced(by n: Int64) -> SessionNumber { SessionNumber(rawValue &+ UInt64(bitPattern: n)) }

    /// A bare number in JSON, as the cluster's CMAFSessionNumber and the report's `session` are.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
