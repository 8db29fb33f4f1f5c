import CMAF
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Domain
import MediaIO
import SystemPackage
import Timeline

/// One CMAF track of a session being written: its muxer, the open segment's bytes, and the finished segments.
final class TrackOutput {
    let kind: MediaKind
    let muxer: CMAFTrackMuxer
    let sourceCodec: String
    let transcoded: Bool
    /// Time base of the packets handed in, and the session start expressed on it.
    let inputTimeBase: TimeBase
    let originTicks: Int64
    /// Duration of one audio frame in muxer ticks, for packets that arrive without a duration.
    let audioFrameTicks: Int64
    private let layout: SessionLayout
    private let files: SegmentFileWriter
    private let output: FileOutputQueue
    private let emit: (@Sendable (RecordingEvent) -> Void)?
    private(set) var segments: [SegmentRecord] = []
    private var openBytes: [UInt8] = []
    private var openChunks = 0
    private var openSamples = 0
    private(set) var firstPresentation: Int64?
    private var lastDecode: Int64?
    /// Packets refused because their decode time, once converted to this track's timescale, did not increase.
    private(set) var droppedPackets = 0
    /// The muxer's CMAF header, parsed back: codec string, and the key to parse our own segments.
    let header: CMAFHeader
    /// The header as written and uploaded (protected with Common Encryption).
    private let headerBytes: [UInt8]
    private let encryption: CommonEncryption?
    private var ivs = CommonEncryption.IVSequence()

    init(
        kind: MediaKind, conditioner: any TrackConditioner, sourceCodec: String, start: MediaTime,
        layout: SessionLayout, files: SegmentFileWriter, output: FileOutputQueue,
        emit: (@Sendable (RecordingEvent) -> Void)?, encryption: CommonEncryption? = nil, announceHeader: Bool = true
    ) throws {
        self.output = output
        self.encryption = encryption
        self.emit = emit
        self.kind = kind
        self.layout = layout
        self.files = files
        self.sourceCodec = sourceCodec
        transcoded = conditioner.transcodes
        inputTimeBase = conditioner.timeBase
        originTicks = conditioner.timeBase.ticks(start)
        // Keep the video timescale equal to the input's when it is a fine clock (1/15360, 1/90000, …), so every
        // timestamp maps 1:1 and no rounding creeps into segment durations.
        let tb = conditioner.timeBase
        let timescale: Int32? = kind == .video ? (tb.num == 1 && tb.den >= 1000 ? tb.den : 90000) : nil
        let parameters = try conditioner.outputParameters()
        muxer = try CMAFTrackMuxer(parameters: parameters, kind: kind, timescale: timescale)
        // An audio track's timescale is its sample rate, so one frame lasts frame-size ticks.
        audioFrameTicks = Int64(parameters.frameSize > 0 ? parameters.frameSize : 1024)
        header = try CMAFHeader(bytes: muxer.initSegment, fileName: layout.initPath(kind))
        // With Common Encryption nothing in the clear is written or handed on: the header and every chunk are
        // protected before they leave this type.
        let clearHeader = muxer.initSegment
        headerBytes = try encryption.map { try $0.protectHeader(clearHeader) } ?? clearHeader
        try files.write(headerBytes, to: layout.initPath(kind), on: output)
        if announceHeader { self.announceHeader() }
    }

    /// Emits the header event (at creation, unless a DASH manifest has to go first).
    func announceHeader() {
        emit?(.initSegment(session: layout.session, track: layout.trackName(kind), path: layout.initPath(kind),
                           bytes: headerBytes))
    }

    var timescale: Int { Int(muxer.timeBase.den) }

    /// Rebases a packet's timestamps to the session start and converts them to the muxer's time base.
    func rebased(_ packet: Packet) -> (pts: Int64, dts: Int64, duration: Int64) {
        let from = inputTimeBase, to = muxer.timeBase
        let dts = packet.dts ?? packet.pts ?? originTicks
        let pts = packet.pts ?? dts
        return (convert(pts - originTicks, from, to), convert(dts - originTicks, from, to), convert(packet.duration, from, to))
    }

    /// Whether a packet with these (rebased, muxer-tick) timestamps may be written next; fixes a PTS before the DTS.
    /// The input's timestamps were repaired already (``TimestampRepair``), but converting them to a coarser timescale
    /// can still make two decode times equal, and the muxer would refuse the second (and end the recording).
    func admits(_ t: inout (pts: Int64, dts: Int64, duration: Int64)) -> Bool {
        if let lastDecode, t.dts <= lastDecode {
            droppedPackets += 1
            return false
        }
        if t.pts < t.dts { t.pts = t.dts }
        return true
    }

    /// Writes one packet whose duration is known (`duration` in muxer ticks).
    func write(_ packet: Packet, pts: Int64, dts: Int64, duration: Int64) throws {
        try muxer.write(packet, pts: pts, dts: dts, duration: duration)
        lastDecode = dts
        openSamples += 1
        if firstPresentation == nil { firstPresentation = pts }
    }

    /// Closes the open chunk; with `endSegment` also writes the segment file.
    func cut(endSegment: Bool, final: Bool = false) throws {
        var bytes = final ? try muxer.finish() : try muxer.cut()
        if let encryption, !bytes.isEmpty { bytes = try encryption.protectChunk(bytes, header: header, ivs: &ivs) }
        let number = segments.count + 1
        if !bytes.isEmpty {
            // The first chunk of a segment (without chunks, the whole segment) is taken as it is, not copied.
            if openBytes.isEmpty { openBytes = bytes } else { openBytes += bytes }
            openChunks += 1
            emit?(.chunk(session: layout.session, track: layout.trackName(kind), number: 1000 + number, bytes: bytes))
        }
        guard endSegment || final, openSamples > 0 else { return }
        let path = layout.segmentPath(kind, number: number)
        try files.write(openBytes, to: path, on: output)
        emit?(.segmentFinished(session: layout.session, track: layout.trackName(kind), number: 1000 + number,
                               path: path, bytes: openBytes))
        // Report what the boxes say, not what we asked for: the muxer derives sample durations from decode-time
        // deltas, so the file is the only truth about a segment's start and length.
        let written = try CMAFSegment(bytes: openBytes, fileName: path, header: header)
        let scale = Double(written.timescale)
        let tfdt = Int64(written.startDecodeTime ?? 0)
        let earliest = written.earliestPresentationTime ?? tfdt
        segments.append(SegmentRecord(
            path: path, number: 1000 + number, start: Double(earliest) / scale, duration: written.durationSeconds,
            baseMediaDecodeTime: tfdt, durationTicks: Int64(written.duration), samples: written.sampleCount,
            chunks: written.chunkCount, bytes: openBytes.count))
        openBytes = []  // its buffer went out with the segment's event: keeping "its" capacity would allocate anew
        openChunks = 0
        openSamples = 0
    }

    private func convert(_ ticks: Int64, _ from: TimeBase, _ to: TimeBase) -> Int64 {
        if from == to { return ticks }
        return to.ticks(from.time(ticks))
    }
}

/// Writes finished files atomically (temporary name, then rename) so a crash or a read error never leaves a
/// half-written segment under its final name. No fsync: these are the user's output files; the upload spool, which
/// must survive power loss, syncs on its own terms.
struct SegmentFileWriter {
    /// nil: no files (the session's events are its only output; see ``SessionFormat/writesSegmentFiles``).
    let root: URL?

    /// Writes on the session's output thread (see ``FileOutputQueue``).
    func write(_ bytes: [UInt8], to relativePath: String, on output: FileOutputQueue) throws {
        guard root != nil else { return }
        try output.enqueue(bytes: bytes.count) { try write(bytes, to: relativePath) }
    }

    func write(_ bytes: [UInt8], to relativePath: String) throws {
        guard let root else { return }
        let url = root.appendingPathComponent(relativePath)
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).partial").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: temporary, operation: "create", errno: errno) }
        do {
            _ = try FileDescriptor(rawValue: fd).writeAll(bytes)
        } catch let error as Errno {
            close(fd)
            throw FileError(path: temporary, operation: "write", errno: error.rawValue)
        }
        guard close(fd) == 0 else { throw FileError(path: temporary, operation: "close", errno: errno) }
        guard rename(temporary, url.path) == 0 else { throw FileError(path: url.path, operation: "rename", errno: errno) }
    }
}

/// A failed file operation, with the path and the system's reason.
public struct FileError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let operation: String
    public let errno: Int32
    public var description: String { "\(operation) \(path): \(String(cString: strerror(errno)))" }
}
