import Foundation
@testable import Ingest
import Testing

/// A lane that cannot read the object it just chose looks at the object's journal row again: gone means evicted
/// (skipped, no attempt counted); present, or a journal that cannot answer, means a failed attempt. Before, the second
/// look's answer was flattened by `try?` and "row gone" read as "unreadable": every evicted object was retried until it
/// was given up and reported as lost.
@Suite struct SpoolReadFailureTests {
    struct JournalDown: Error {}

    static let row = SpoolEntry(connection: "cam1/1@a", object: UploadObject(session: 3, track: "video", number: 1001),
                                bytes: 100, createdAt: Date(timeIntervalSince1970: 0), attempts: 0, delivered: false)

    @Test(arguments: [
        ("row gone", Result<SpoolEntry?, any Error>.success(nil), SpoolReadFailure.evicted),
        ("row still there", .success(row), .unreadable),
        ("journal cannot answer", .failure(JournalDown()), .unreadable),
    ] as [(String, Result<SpoolEntry?, any Error>, SpoolReadFailure)])
    func theSecondLookDecides(_ name: String, row: Result<SpoolEntry?, any Error>, expected: SpoolReadFailure) {
        #expect(SpoolReadFailure(rowAfterwards: row) == expected, "\(name)")
    }
}
