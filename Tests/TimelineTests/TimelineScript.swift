import Domain
import Testing
import Timeline

/// Exact seconds written as a literal: `10`, `10.1` or `"121/30"` (parsed from the decimal text, never via binary).
struct Seconds: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral, Hashable, Sendable, CustomStringConvertible {
    let time: MediaTime

    init(_ time: MediaTime) { self.time = time }
    init(integerLiteral value: Int64) { time = .seconds(value) }
    init(floatLiteral value: Double) { time = Seconds.parse("\(value)") }
    init(stringLiteral value: String) { time = Seconds.parse(value) }

    /// "12", "12.25", "-3.5" or "121/30".
    static func parse(_ text: String) -> MediaTime {
        if let slash = text.firstIndex(of: "/") {
            let numerator = Int64(text[..<slash])!
            let denominator = Int32(text[text.index(after: slash)...])!
            return MediaTime(value: numerator, timescale: denominator)
        }
        let negative = text.hasPrefix("-")
        let digits = negative ? String(text.dropFirst()) : text
        guard let dot = digits.firstIndex(of: ".") else { return .seconds(Int64(text)!) }
        let fraction = digits[digits.index(after: dot)...]
        var scale: Int32 = 1
        for _ in fraction { scale *= 10 }
        let value = (Int64(digits[..<dot]) ?? 0) * Int64(scale) + Int64(fraction)!
        return MediaTime(value: negative ? -value : value, timescale: scale)
    }

    var description: String { "\(time.seconds)" }
}

/// Shorthand for a time control in whole seconds: I, A, M, B.
func tc(_ i: Int64, _ a: Int64, _ m: Int64, _ b: Int64) -> ClipTimeControl {
    ClipTimeControl(initial: i, augmentation: a, max: m, blind: b)
}

/// One recording as a case expects it.
struct ExpectedClip: Hashable, Sendable, CustomStringConvertible {
    var trigger: TriggerType
    /// t0.
    var activation: Seconds
    /// The Begin's anchor when it differs from t0 (a recording resumed by SetTransportStatus(Active), rule 8).
    var from: Seconds?
    var end: Seconds
    var augmentations: Int
    var reason: ClipEndReason
    /// The first sample by the pre-roll rule; checked only when given.
    var start: Seconds?

    var description: String {
        "\(trigger) t0=\(activation)\(from.map { " from=\($0)" } ?? "") end=\(end) aug=\(augmentations) \(reason.rawValue)"
            + (start.map { " start=\($0)" } ?? "")
    }
}

func clip(
    _ trigger: TriggerType, _ activation: Seconds, end: Seconds, aug: Int = 0, _ reason: ClipEndReason,
    from: Seconds? = nil, start: Seconds? = nil
) -> ExpectedClip {
    ExpectedClip(trigger: trigger, activation: activation, from: from, end: end, augmentations: aug, reason: reason, start: start)
}

/// A scripted input: frames at `fps` with a keyframe every `gop` seconds from 0 up to `inputEnd`, plus the
/// events of `script`, then end of input (or a stop, with `stopped`) at `inputEnd`.
///
/// Script tokens, separated by spaces (times as in `Seconds.parse`):
/// - `m12` a matching motion sample at 12 s; `m0-40:1` one every second from 0 through 40;
/// - `c5` a manual trigger with no TimeControl; `c5@5,2,15,3` with TimeControl I,A,M,B;
/// - `i4` SetTransportStatus(Inactive); `a6` SetTransportStatus(Active).
struct TimelineCase: Sendable, CustomTestStringConvertible {
    var name: String
    var configuration: ClipTimeline.Configuration
    var script: String
    var inputEnd: Seconds = 100
    /// The input does not end but the recorder is asked to stop at `inputEnd` (Ctrl-C on a live camera).
    var stopped = false
    var initially: TransportActivity = .active
    var fps: Int64 = 30
    var gop: Seconds = 2
    var maxPreRollMs: Int = 4000
    var expected: [ExpectedClip]

    var testDescription: String { name }

    /// Parses the script into timed inputs (frames are added by `run`).
    func events() -> [TimelineInput] {
        var inputs: [TimelineInput] = []
        for token in script.split(separator: " ") {
            let kind = token.first!
            var body = String(token.dropFirst())
            var control: ClipTimeControl?
            if let at = body.firstIndex(of: "@") {
                let numbers = body[body.index(after: at)...].split(separator: ",").map { Int64($0)! }
                control = tc(numbers[0], numbers[1], numbers[2], numbers[3])
                body = String(body[..<at])
            }
            var times: [MediaTime] = []
            if let dash = body.dropFirst().firstIndex(of: "-"), let colon = body.firstIndex(of: ":") {
                let first = Seconds.parse(String(body[..<dash]))
                let last = Seconds.parse(String(body[body.index(after: dash)..<colon]))
                let step = Seconds.parse(String(body[body.index(after: colon)...]))
                var t = first
                while t <= last { times.append(t); t = t + step }
            } else {
                times = [Seconds.parse(body)]
            }
            for t in times {
                switch kind {
                case "m": inputs.append(.motion(t))
                case "c": inputs.append(.manualTrigger(t, timeControl: control))
                case "i": inputs.append(.status(.inactive, t))
                case "a": inputs.append(.status(.active, t))
                default: fatalError("unknown script token \(token)")
                }
            }
        }
        return inputs
    }

    /// Frame times in a 1/15360 time base (the video time base FFmpeg picks for 30 fps MP4) and which are keyframes.
    func frames() -> [(time: MediaTime, isKeyframe: Bool)] {
        let timescale: Int64 = 15360
        let gopTicks = Int128(gop.time.value) * Int128(timescale) / Int128(gop.time.timescale)
        var frames: [(MediaTime, Bool)] = []
        var n: Int64 = 0
        while true {
            let ticks = n * timescale / fps
            let time = MediaTime(value: ticks, timescale: Int32(timescale))
            if time >= inputEnd.time { break }
            frames.append((time, Int128(ticks) % gopTicks == 0))
            n += 1
        }
        return frames
    }
}

/// A recording as the timeline produced it, with its start by the pre-roll rule.
struct ProducedClip: CustomStringConvertible {
    var begin: ClipBegin
    var end: ClipEnd
    var start: MediaTime?

    var description: String {
        "\(begin.trigger) t0=\(begin.activationTime.seconds) from=\(begin.anchor.seconds) end=\(end.end.seconds) "
            + "aug=\(end.augmentations) \(end.reason.rawValue) start=\(start?.seconds ?? .nan)"
    }

    func matches(_ expected: ExpectedClip) -> Bool {
        begin.trigger == expected.trigger && end.trigger == expected.trigger
            && begin.activationTime == expected.activation.time && end.activationTime == expected.activation.time
            && begin.anchor == (expected.from ?? expected.activation).time
            && end.end == expected.end.time && end.augmentations == expected.augmentations && end.reason == expected.reason
            && (expected.start == nil || start == expected.start!.time)
    }
}

/// Drives a timeline through a case: frames and events merged in time order (a frame before the events at its
/// time, as the recorder does: the frame is read, then analysed), then end of input.
func run(_ scenario: TimelineCase) -> (clips: [ProducedClip], decisions: [ClipDecision]) {
    var timeline = ClipTimeline(configuration: scenario.configuration, activity: scenario.initially)
    let frames = scenario.frames()
    let keyframes = frames.filter(\.isKeyframe).map(\.time)
    var inputs: [TimelineInput] = frames.map { .frame($0.time, isKeyframe: $0.isKeyframe) }
    inputs += scenario.events()
    // Stable order: by time, frames first at equal times, events in script order.
    let ordered = inputs.enumerated().sorted { a, b in
        if a.element.time != b.element.time { return a.element.time < b.element.time }
        let aFrame = { if case .frame = a.element { true } else { false } }()
        let bFrame = { if case .frame = b.element { true } else { false } }()
        if aFrame != bFrame { return aFrame }
        return a.offset < b.offset
    }.map(\.element)

    var decisions: [ClipDecision] = []
    for input in ordered { decisions += timeline.handle(input) }
    decisions += timeline.handle(scenario.stopped ? .stop(scenario.inputEnd.time) : .endOfInput(scenario.inputEnd.time))

    var open: [Int: ClipBegin] = [:]
    var clips: [ProducedClip] = []
    for decision in decisions {
        switch decision {
        case .begin(let begin):
            open[begin.recording] = begin
        case .end(let end):
            let begin = open.removeValue(forKey: end.recording)!
            let preRoll = begin.trigger == .continuous ? 0 : scenario.maxPreRollMs
            let choice = PreRollRule.start(keyframes: keyframes, trigger: begin.anchor, maxPreRollMilliseconds: preRoll)
            clips.append(ProducedClip(begin: begin, end: end, start: choice?.start))
        case .extend:
            break
        }
    }
    precondition(open.isEmpty, "a Begin without an End")
    return (clips, decisions)
}
