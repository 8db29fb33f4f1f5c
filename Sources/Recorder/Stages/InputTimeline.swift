import Domain
import Logging
import MediaIO

/// Where the recorded video stands, picture by picture as the buffer takes it: its first picture (0 on the report's
/// timeline), the newest time read, the end of the latest picture, and the keyframe spacing, which sizes the pre-roll
/// buffer (MaxPreRollLen plus two keyframe intervals). Pure: times in, times out.
struct InputTimeline {
    /// The first video picture's presentation time: 0 on the report's timeline.
    private(set) var origin: MediaTime?
    /// The latest presentation time read.
    private(set) var newest = MediaTime.zero
    /// The end of the latest-presented video picture.
    private(set) var videoEnd = MediaTime.zero
    /// The longest keyframe interval seen, and at least 2 s before the stream shows its own.
    private(set) var keyframeInterval = MediaTime.seconds(2)
    private(set) var lastKeyframe: MediaTime?
    private var gaps: KeyframeGaps
    /// Each policy's MaxPreRollLen (the first keyframe interval must not exceed a non-zero one).
    private let preRolls: [MediaTime]

    init(preRolls: [MediaTime]) {
        self.preRolls = preRolls
        gaps = KeyframeGaps(limit: preRolls.filter { $0 > .zero }.min())
    }

    /// How far into the input the newest picture is, in seconds (progress and log lines).
    var position: Double { (newest - (origin ?? newest)).seconds }

    /// What the pre-roll buffer keeps behind the newest packet for a longest pre-roll of `maxPreRoll`.
    func retention(maxPreRoll: MediaTime) -> MediaTime { maxPreRoll + keyframeInterval + keyframeInterval }

    /// A video picture at `t` lasting `duration`, a random-access point or not. Throws InvalidPreRollLength when the
    /// stream's first keyframe interval is longer than a policy's MaxPreRollLen: allocation would have refused that
    /// pre-roll against the stream's KeyFrameInterval (rule 9). Later, longer gaps only lengthen pre-rolls (logged
    /// once per gap and counted: ``longKeyframeIntervals``).
    mutating func picture(at t: MediaTime, duration: MediaTime, randomAccess: Bool, logger: Logger) throws {
        if origin == nil || t < origin! { origin = t }
        newest = max(newest, t)
        videoEnd = max(videoEnd, t + duration)
        if let last = lastKeyframe { gaps.picture(at: t, lastKeyframe: last, logger: logger) }
        guard randomAccess else { return }
        if let last = lastKeyframe, t > last {
            if gaps.nominal == nil, let tooShort = preRolls.first(where: { $0 > .zero && $0 < t - last }) {
                throw MediaError("cluster InvalidPreRollLength (0x0C): maxPreRollLen \(tooShort.converted(to: 1000).value) ms "
                    + "is shorter than the input's keyframe interval \((t - last).converted(to: 1000).value) ms")
            }
            gaps.keyframe(at: t, after: last, logger: logger)
            keyframeInterval = max(keyframeInterval, t - last)
        }
        lastKeyframe = t
    }

    /// The report's long keyframe intervals, once the input has ended.
    var longKeyframeIntervals: RecordingReport.LongKeyframeIntervals {
        gaps.report(inputEnd: videoEnd, lastKeyframe: lastKeyframe)
    }
}

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
