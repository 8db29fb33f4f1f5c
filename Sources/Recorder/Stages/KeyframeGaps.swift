import Domain
import Logging

/// Keyframe spacing as the recording sees it. The first interval is the stream's own (allocation checks MaxPreRollLen
/// against it); a later gap longer than the shortest MaxPreRollLen (a late or missing IDR on a live camera) is logged
/// once, when it passes the limit, and counted: clips in it simply get a longer pre-roll.
struct KeyframeGaps {
    let limit: MediaTime?
    /// The first keyframe interval; nil until the second keyframe.
    private(set) var nominal: MediaTime?
    private var count = 0
    private var longest: MediaTime?
    private var overdue = false

    init(limit: MediaTime?) { self.limit = limit }

    /// A video picture at `t`, the latest keyframe being at `lastKeyframe`.
    mutating func picture(at t: MediaTime, lastKeyframe: MediaTime, logger: Logger) {
        guard let limit, let nominal, !overdue, t - lastKeyframe > limit else { return }
        overdue = true
        count += 1
        logger.warning("no keyframe for longer than MaxPreRollLen; clips in this gap get a longer pre-roll", metadata: [
            "lastKeyframe": "\(lastKeyframe.seconds)", "maxPreRollLen": "\(limit.seconds)", "keyframeInterval": "\(nominal.seconds)",
        ])
    }

    /// A keyframe at `t` after the one at `last`.
    mutating func keyframe(at t: MediaTime, after last: MediaTime, logger: Logger) {
        guard nominal != nil else {
            nominal = t - last
            return
        }
        if overdue {
            overdue = false
            longest = max(longest ?? .zero, t - last)
            logger.notice("keyframe after a long gap", metadata: ["at": "\(t.seconds)", "gap": "\((t - last).seconds)"])
        }
    }

    func report(inputEnd: MediaTime, lastKeyframe: MediaTime?) -> RecordingReport.LongKeyframeIntervals {
        var longest = self.longest
        if overdue, let lastKeyframe { longest = max(longest ?? .zero, inputEnd - lastKeyframe) }  // never ended
        return .init(count: count, longest: longest?.seconds, limit: limit?.seconds)
    }
}
