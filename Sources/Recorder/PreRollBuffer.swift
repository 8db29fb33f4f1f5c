import Domain
import Logging
import MediaIO
import Timeline

/// A ring of recent encoded packets of every recorded track, in demux order, that clips start from.
///
/// A motion clip starts before its trigger (the pre-roll), so the packets since the last usable keyframe must still
/// be at hand when the trigger is seen; and a clip's end is only known some frames after the packets that belong to
/// it were read. The buffer keeps at least `retention` of media behind the newest packet (MaxPreRollLen plus two
/// keyframe intervals), everything from the latest video keyframe on (so a clip triggered in a keyframe gap far longer
/// than usual still starts on the keyframe before its trigger) and everything any open clip has not consumed yet, and
/// never more than `byteLimit` bytes: when full, the oldest packets go first (a camera with a huge GOP then gets less
/// pre-roll, never unbounded memory). Packets pushed out that an open clip still needed are returned by ``trim`` so
/// the recording can count and report them.
final class PreRollBuffer {
    struct Entry {
        let sequence: Int
        let packet: Packet
        let kind: MediaKind
        let pts: MediaTime
        let dts: MediaTime
        /// A video packet that can start a segment (SAP 1 or 2: an IDR, or a CRA/BLA without RASL pictures).
        let isRandomAccess: Bool
        let size: Int
    }

    private(set) var entries: [Entry] = []
    private var head = 0  // entries before head are dropped; compacted lazily
    private var nextSequence = 0
    private(set) var bytes = 0
    private(set) var peakBytes = 0
    private(set) var peakPackets = 0
    /// The newest random-access video entry; it and everything after it outlive `retention`.
    private var lastKeyframeSequence: Int?
    var retention: MediaTime
    let byteLimit: Int

    init(retention: MediaTime, byteLimit: Int) {
        self.retention = retention
        self.byteLimit = byteLimit
    }

    /// Appends a reference to `packet` and returns its entry.
    @discardableResult
    func append(_ packet: Packet, kind: MediaKind, pts: MediaTime, dts: MediaTime, isRandomAccess: Bool) throws -> Entry {
        let entry = Entry(sequence: nextSequence, packet: try packet.reference(), kind: kind, pts: pts, dts: dts,
                          isRandomAccess: isRandomAccess, size: packet.size)
        nextSequence += 1
        if kind == .video && isRandomAccess { lastKeyframeSequence = entry.sequence }
        entries.append(entry)
        bytes += entry.size
        peakBytes = max(peakBytes, bytes)
        peakPackets = max(peakPackets, entries.count - head)
        return entry
    }

    var live: ArraySlice<Entry> { entries[head...] }
    var first: Entry? { head < entries.count ? entries[head] : nil }

    /// The entry with `sequence`, if still buffered.
    func entry(_ sequence: Int) -> Entry? {
        guard let f = first, sequence >= f.sequence else { return nil }
        let i = head + (sequence - f.sequence)
        return i < entries.count ? entries[i] : nil
    }

    /// Entries from `sequence` on (or from the oldest buffered one if it was dropped).
    func entries(from sequence: Int) -> ArraySlice<Entry> {
        guard let f = first else { return [] }
        let i = head + max(0, sequence - f.sequence)
        return i < entries.count ? entries[i...] : []
    }

    /// Presentation times of the buffered video keyframes, ascending.
    var keyframes: [MediaTime] {
        live.lazy.filter { $0.kind == .video && $0.isRandomAccess }.map(\.pts).sorted()
    }

    /// The buffered random-access video entry at `time`.
    func keyframe(at time: MediaTime) -> Entry? {
        live.first { $0.kind == .video && $0.isRandomAccess && $0.pts == time }
    }

    /// Drops what is older than `retention` behind `newest`, older than the latest keyframe and not needed by a clip
    /// (`keepFrom` = the lowest sequence an open clip still needs); then enforces the byte limit. Returns the entries
    /// the byte limit pushed out at or after `keepFrom`: a clip may have needed them (the caller tells which).
    @discardableResult
    func trim(newest: MediaTime, keepFrom: Int?) -> [Entry] {
        let horizon = newest - retention
        var overflow: [Entry] = []
        while head < entries.count {
            let e = entries[head]
            let needed = keepFrom.map { e.sequence >= $0 } ?? false
            let overBudget = bytes > byteLimit
            let beforeLastKeyframe = lastKeyframeSequence.map { e.sequence < $0 } ?? true
            guard overBudget || (!needed && e.dts < horizon && beforeLastKeyframe) else { break }
            if overBudget && needed { overflow.append(e) }
            bytes -= e.size
            e.packet.unreference()  // free the payload now, not when the array is next compacted
            head += 1
        }
        if head > 256 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return overflow
    }
}

/// Packets the byte limit pushed out of the pre-roll buffer while an open clip still needed them (those clips miss
/// frames): counted with the sessions they belonged to, and logged at most once per 10 s of input, each line with the
/// count since the previous one, so an overloaded buffer cannot flood the log either.
struct BufferOverflow {
    private(set) var packets = 0
    private(set) var bytes = 0
    private(set) var sessions: Set<SessionNumber> = []
    private var sinceLastLine = 0
    private var lastLine: MediaTime?

    mutating func count(_ entry: PreRollBuffer.Entry, sessions affected: [SessionNumber], at time: MediaTime, logger: Logger, byteLimit: Int) {
        packets += 1
        bytes += entry.size
        sessions.formUnion(affected)
        sinceLastLine += 1
        if let lastLine, time - lastLine < .seconds(10) { return }
        lastLine = time
        logger.warning("pre-roll buffer full: dropped packets that open clips needed", metadata: [
            "packets": "\(sinceLastLine)", "total": "\(packets)", "sessions": "\(sessions.sorted())",
            "byteLimit": "\(byteLimit)",
        ])
        sinceLastLine = 0
    }
}
