import Domain

/// Where a clip starts (README "Clip timing", rule 9).
///
/// Let c be the last keyframe at or before the trigger t0 (the start of the segment that holds the trigger).
/// With P = 0 the clip starts at c. Otherwise it starts at the first keyframe at or after t0 − P, but never later
/// than c. The trigger frame is therefore always in the clip; the pre-roll is at most P whenever the keyframe
/// spacing allows it, and at least P minus one keyframe interval when the buffer holds that much history.
///
/// Peers either round the pre-roll to whole segments or wait for the next keyframe and lose the event's start
/// (`peers.md`); this rule never does either.
public enum PreRollRule {
    /// The chosen start and the pre-roll it gives.
    public struct Choice: Sendable, Hashable {
        /// The first sample of the clip: always one of the keyframes passed in.
        public var start: MediaTime
        /// t0 − start, never negative.
        public var preRoll: MediaTime
    }

    /// The clip start for a trigger at `trigger` with MaxPreRollLen `maxPreRoll`.
    ///
    /// - Parameter keyframes: presentation times of the keyframes the buffer holds, ascending. Keyframes after
    ///   the trigger may be included; they are never chosen.
    /// - Returns: nil when no keyframe at or before the trigger is available (the recorder then has nothing to
    ///   start from before the trigger).
    public static func start(keyframes: [MediaTime], trigger: MediaTime, maxPreRoll: MediaTime) -> Choice? {
        // c: the last keyframe ≤ t0.
        let afterTrigger = firstIndex(in: keyframes) { $0 > trigger }
        guard afterTrigger > 0 else { return nil }
        let containing = keyframes[afterTrigger - 1]
        var start = containing
        if maxPreRoll > .zero {
            let earliest = trigger - maxPreRoll
            let first = firstIndex(in: keyframes) { $0 >= earliest }
            if first < keyframes.count { start = Swift.min(keyframes[first], containing) }
        }
        return Choice(start: start, preRoll: trigger - start)
    }

    /// Same, with MaxPreRollLen in milliseconds as the transport carries it.
    public static func start(keyframes: [MediaTime], trigger: MediaTime, maxPreRollMilliseconds: Int) -> Choice? {
        start(keyframes: keyframes, trigger: trigger, maxPreRoll: .milliseconds(Int64(maxPreRollMilliseconds)))
    }

    /// Allocation refuses 0 < MaxPreRollLen < KeyFrameInterval (status InvalidPreRollLength).
    public static func isAllowed(maxPreRollMilliseconds: Int, keyFrameIntervalMilliseconds: Int) -> Bool {
        maxPreRollMilliseconds == 0 || maxPreRollMilliseconds >= keyFrameIntervalMilliseconds
    }

    /// Binary search: the first index whose element satisfies a predicate that is false then true along the array.
    private static func firstIndex(in times: [MediaTime], where isPast: (MediaTime) -> Bool) -> Int {
        var low = 0
        var high = times.count
        while low < high {
            let mid = (low + high) / 2
            if isPast(times[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
