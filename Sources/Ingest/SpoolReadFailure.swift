/// Why a lane could not read a spooled object it had just chosen, judged by a second look at the object's journal row.
///
/// The lane picks an object from the journal and then reads its file; an eviction (disk nearly full) may remove the
/// session in between, row first, then files. Only the row tells the two cases apart: without it the object no longer
/// exists and nothing is owed; with it the file is unreadable and the attempt failed.
enum SpoolReadFailure: Equatable {
    /// The row is gone: evicted after the lane chose it. Nothing to send, nothing to count against the object.
    case evicted
    /// The row is still there, or the journal could not answer: a failed attempt for the upload state machine.
    case unreadable

    init(rowAfterwards: Result<SpoolEntry?, any Error>) {
        switch rowAfterwards {
        case .success(nil): self = .evicted
        case .success: self = .unreadable
        case .failure: self = .unreadable
        }
    }
}
