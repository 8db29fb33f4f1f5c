import Domain
import GRDB

/// The journal stores a track name as TEXT, as it is.
extension TrackName: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> TrackName? {
        String.fromDatabaseValue(dbValue).map(TrackName.init(rawValue:))
    }
}
