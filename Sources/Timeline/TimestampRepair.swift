/// Makes one input stream's packet timestamps fit for a muxer, deciding one packet late.
///
/// FFmpeg's mp4 muxer refuses a packet whose decode timestamp (DTS) does not increase or whose presentation timestamp
/// (PTS) precedes its DTS, and one refused packet would end the recording. Live cameras and damaged files break both
/// rules now and then (a flipped bit in a PES header, a duplicated or lost packet, an encoder restart), so every
/// packet is held until its successor arrives, and the pair decides (L = the last packet passed on, S = the held one,
/// P = the new one):
///
/// * L < S < P: S is in order and passes unchanged (a forward gap up to `maxGap` stays a gap).
/// * A jump P confirms: L < S < P with S more than `maxGap` after L (a hole), or S < P ≤ L with S more than `maxGap`
///   before L (a timestamp reset or wrap). The stream from S on is shifted to continue right after L.
/// * S alone far off the timeline L and P agree on (L < P ≤ S, or S more than `maxGap` before L < P): a damaged
///   timestamp. S gets a DTS halfway between L and P, or is dropped when there is no room.
/// * Otherwise S is dropped: a DTS equal to the previous one or a little before it is a duplicated or reordered packet.
///
/// A missing DTS is the PTS (MPEG's rule when a PES header carries only a PTS); a missing PTS is the DTS; a packet with
/// neither is placed one step after its predecessor. A PTS before its DTS, or more than `maxGap` after it, becomes the
/// DTS. Each packet's duration becomes the DTS distance to its successor, so consecutive CMAF fragments join without a
/// gap or an overlap wherever a segment is cut. Every drop and repair is counted.
///
/// Pure logic over tick counts on the stream's time base; `Payload` is whatever the caller carries along (a packet).
public struct TimestampRepair<Payload> {
    /// Why a packet was dropped or its timestamps were changed.
    public enum Problem: String, Sendable, Codable, CaseIterable {
        /// No PTS and no DTS.
        case missingTimestamp
        /// The DTS did not increase (a duplicated or reordered packet).
        case decodeTimeNotIncreasing
        /// One packet whose DTS is far off the timeline its neighbours agree on.
        case outlier
        /// The whole timeline jumped by more than `maxGap` (reset, wrap, hole).
        case discontinuity
        /// PTS before DTS, or absurdly far after it.
        case presentationTime
        /// A duration that is negative or longer than `maxGap`.
        case duration
    }

    /// A packet passed on, with the timestamps to use (on the stream's time base).
    public struct Output {
        public var payload: Payload
        public var pts: Int64
        public var dts: Int64
        /// Ticks until the next packet's DTS (the packet's own duration for the last one; 0 if unknown).
        public var duration: Int64
        /// What was repaired on it (empty: nothing).
        public var repairs: [Problem]
    }

    /// The outcome of one ``admit(_:pts:dts:duration:)``: the packet now passed on, if any, and what was dropped.
    public struct Step {
        public var output: Output?
        public var dropped: [Problem] = []
    }

    private struct Held {
        var payload: Payload
        var pts: Int64
        var dts: Int64
        var duration: Int64
        var repairs: [Problem]
    }

    /// The largest forward gap kept as a gap, and the largest backward step treated as a dropped packet, in ticks.
    public let maxGap: Int64
    /// Timestamps beyond ± this many ticks (2^31 s) are shifted towards zero, so later arithmetic cannot overflow.
    public let limit: Int64
    /// DTS of the last packet passed on (L).
    private var lastDts: Int64?
    private var held: Held?
    /// Added to every incoming timestamp (changed by discontinuities).
    private var offset: Int64 = 0
    /// The latest positive DTS step, for packets without timestamps.
    private var step: Int64?
    public private(set) var dropped: [Problem: Int] = [:]
    public private(set) var repaired: [Problem: Int] = [:]

    /// - Parameters:
    ///   - ticksPerSecond: the stream's time base inverted (den / num), e.g. 90000 for 1/90000.
    ///   - maxGapSeconds: forward gaps up to this stay; backward steps up to this are dropped packets.
    public init(ticksPerSecond: Double, maxGapSeconds: Double = 10) {
        let rate = ticksPerSecond.isFinite && ticksPerSecond > 0 ? ticksPerSecond : 90000
        maxGap = Self.ticks(maxGapSeconds * rate)
        limit = Self.ticks(2_147_483_648 * rate)
    }

    public var droppedCount: Int { dropped.values.reduce(0, +) }
    public var repairedCount: Int { repaired.values.reduce(0, +) }

    /// Takes the next packet in decode order; returns the previous one once this one tells what to do with it.
    public mutating func admit(_ payload: Payload, pts rawPts: Int64?, dts rawDts: Int64?, duration rawDuration: Int64) -> Step {
        var result = Step()
        var repairs: [Problem] = []
        var duration = rawDuration
        if duration < 0 || duration > maxGap {
            duration = 0
            repairs.append(.duration)
        }
        var next: Held
        switch (rawPts, rawDts) {
        case let (p?, d?): next = Held(payload: payload, pts: Self.add(p, offset), dts: Self.add(d, offset), duration: duration, repairs: repairs)
        case let (p?, nil): next = Held(payload: payload, pts: Self.add(p, offset), dts: Self.add(p, offset), duration: duration, repairs: repairs)
        case let (nil, d?): next = Held(payload: payload, pts: Self.add(d, offset), dts: Self.add(d, offset), duration: duration, repairs: repairs)
        case (nil, nil):
            guard let previous = held?.dts ?? lastDts else {
                count(.missingTimestamp, into: &result.dropped)
                return result
            }
            let dts = Self.add(previous, step ?? max(duration, 1))
            next = Held(payload: payload, pts: dts, dts: dts, duration: duration, repairs: repairs + [.missingTimestamp])
        }
        if let s = held {
            held = nil
            let before = offset
            result.output = resolve(s, next: next, dropped: &result.dropped)
            // A discontinuity found while resolving S moves the rest of the stream, P included.
            let moved = Self.difference(offset, before)
            next.dts = Self.add(next.dts, moved)
            next.pts = Self.add(next.pts, moved)
        }
        if lastDts == nil && result.output == nil && Self.magnitude(next.dts) > limit {
            // The stream's first packet sets the timeline: keep it where later arithmetic cannot overflow.
            let delta = Self.difference(0, next.dts)
            next.dts = 0
            next.pts = Self.add(next.pts, delta)
            offset = Self.add(offset, delta)
            next.repairs.append(.discontinuity)
        }
        held = next
        return result
    }

    /// Passes on the held packet at the end of the stream.
    public mutating func flush() -> Output? {
        guard var s = held else { return nil }
        held = nil
        if let l = lastDts {
            let gap = Self.difference(s.dts, l)
            if gap <= 0 && gap >= -maxGap {
                dropped[.decodeTimeNotIncreasing, default: 0] += 1
                return nil
            }
            if gap <= 0 || gap > maxGap {
                // Nothing after it confirms a jump: put it one step after its predecessor.
                place(&s, at: Self.add(l, step ?? 1))
                s.repairs.append(.outlier)
            }
        }
        return emit(s, nextDts: nil)
    }

    // MARK: -

    private mutating func resolve(_ s: Held, next p: Held, dropped: inout [Problem]) -> Output? {
        var s = s
        guard let l = lastDts else {
            // The first packet: kept when its successor comes after it, else it was the odd one out.
            if p.dts > s.dts { return emit(s, nextDts: p.dts) }
            count(.decodeTimeNotIncreasing, into: &dropped)
            return nil
        }
        let gap = Self.difference(s.dts, l)  // S − L
        let pAfterL = p.dts > l, pAfterS = p.dts > s.dts
        let room = Self.difference(p.dts, l)  // P − L
        if gap > 0 {
            if pAfterS || !pAfterL {
                // P follows S, or P is behind both (P is the odd one, or a reset its own successor confirms).
                if gap <= maxGap { return emit(s, nextDts: pAfterS ? p.dts : nil) }
                if pAfterS {
                    // A hole longer than maxGap, confirmed by P: the stream continues right after L.
                    let delta = shiftStream(&s, to: Self.add(l, step ?? 1))
                    return emit(s, nextDts: Self.add(p.dts, delta))
                }
            } else if gap <= 2 * min(step ?? gap, maxGap) {
                // L < P ≤ S with S where the next packet belongs: P is the odd one (judged with its own successor).
                return emit(s, nextDts: nil)
            } else if room >= 2 && room <= maxGap {
                return repairOutlier(s, between: l, and: p.dts)
            }
        } else if gap >= -maxGap {
            // A DTS at or a little before the previous one: a duplicated or reordered packet.
            count(.decodeTimeNotIncreasing, into: &dropped)
            return nil
        } else if pAfterL {
            if room >= 2 && room <= maxGap { return repairOutlier(s, between: l, and: p.dts) }
        } else if pAfterS {
            // The timeline went back by more than maxGap and P follows S: a reset. Continue right after L.
            let delta = shiftStream(&s, to: Self.add(l, step ?? 1))
            return emit(s, nextDts: Self.add(p.dts, delta))
        }
        // Far off, and nothing confirms it or leaves room to place it.
        count(.outlier, into: &dropped)
        return nil
    }

    /// S alone is far off the timeline L and P agree on (a damaged timestamp): it gets a DTS halfway between them.
    private mutating func repairOutlier(_ s: Held, between l: Int64, and p: Int64) -> Output {
        var s = s
        let reorder = Self.difference(s.pts, s.dts)
        place(&s, at: l + (p - l) / 2)
        s.pts = reorder >= 0 && reorder <= maxGap ? Self.add(s.dts, reorder) : s.dts
        s.repairs.append(.outlier)
        return emit(s, nextDts: p)
    }

    /// Moves `s` to DTS `target`, and every later packet by the same amount; returns the amount.
    private mutating func shiftStream(_ s: inout Held, to target: Int64) -> Int64 {
        let delta = Self.difference(target, s.dts)
        place(&s, at: target)
        offset = Self.add(offset, delta)
        s.repairs.append(.discontinuity)
        return delta
    }

    /// Moves one packet to DTS `target`, keeping its PTS − DTS distance.
    private func place(_ s: inout Held, at target: Int64) {
        let delta = Self.difference(target, s.dts)
        s.dts = target
        s.pts = Self.add(s.pts, delta)
    }

    private mutating func emit(_ s: Held, nextDts: Int64?) -> Output {
        var s = s
        let reorder = Self.difference(s.pts, s.dts)
        if reorder < 0 || reorder > maxGap {
            s.pts = s.dts
            s.repairs.append(.presentationTime)
        }
        if let previous = lastDts, s.dts > previous { step = Self.difference(s.dts, previous) }
        var duration = s.duration
        if let nextDts {
            let distance = Self.difference(nextDts, s.dts)
            if distance > 0 && distance <= maxGap { duration = distance }
        }
        if duration <= 0, let step { duration = step }
        lastDts = s.dts
        for r in s.repairs { repaired[r, default: 0] += 1 }
        return Output(payload: s.payload, pts: s.pts, dts: s.dts, duration: duration, repairs: s.repairs)
    }

    private mutating func count(_ problem: Problem, into list: inout [Problem]) {
        dropped[problem, default: 0] += 1
        list.append(problem)
    }

    static func add(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? Int64.max : Int64.min) : sum
    }

    /// a − b, saturating.
    static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (d, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? Int64.max : Int64.min) : d
    }

    static func magnitude(_ a: Int64) -> Int64 { a == Int64.min ? Int64.max : Swift.abs(a) }

    static func ticks(_ value: Double) -> Int64 {
        guard value.isFinite else { return Int64.max / 4 }
        return Int64(min(max(value.rounded(), 1), Double(Int64.max / 4)))
    }
}
