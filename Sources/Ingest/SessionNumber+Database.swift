import Domain
import GRDB

/// The journal stores a session number in an INTEGER column, which SQLite keeps as a signed 64-bit value: the bit
/// pattern goes in unchanged (numbers count up from 1 and never come near 2^63, so the column sorts as they do).
extension SessionNumber: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { Int64(bitPattern: rawValue).databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> SessionNumber? {
        Int64.fromDatabaseValue(dbValue).map { SessionNumber(UInt64(bitPattern: $0)) }
    }
}
