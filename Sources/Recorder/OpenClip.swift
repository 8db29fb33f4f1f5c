import Domain
import Foundation
import Logging
import MediaIO
import Timeline

/// Output of a session that could not be kept after it left the writer (the spool refused it).
struct SessionOutputFailure: Error, CustomStringConvertible {
    let reason: String
    var description: String { "its output could not be kept: \(reason)" }
}

/// A clip being written: its session, where it starts, how far through the buffer it has read, and (once the
/// timeline decided) where it ends.
final class OpenClip {
    let begin: ClipBegin
    let writer: SessionWriter
    let start: MediaTime
    let keyframeSequence: Int
    private(set) var cursor: Int
    var end: ClipEnd?
    /// Video at or after the end, held in case a later frame (decode order) before the end references it.
    private var held: [PreRollBuffer.Entry] = []
    private var videoPastEnd = false
    private var audioPastEnd = false
    /// False until a random-access picture went out: a session's video starts on one. (The buffer's byte limit can
    /// push the clip's keyframe out before it is written; the frames after it cannot be decoded without it.)
    private var startedVideo = false
    /// Its writer failed; the runner has abandoned it.
    var failed = false

    /// Whether this clip records audio (fixed when it opens: muting applies from the next clip).
    let hasAudio: Bool

    init(begin: ClipBegin, writer: SessionWriter, start: MediaTime, keyframeSequence: Int, cursor: Int, hasAudio: Bool) {
        self.hasAudio = hasAudio
        self.begin = begin
        self.writer = writer
        self.start = start
        self.keyframeSequence = keyframeSequence
        self.cursor = cursor
    }

    /// Open clip: writes entries presented before `limit`, stopping at the first that is not (it may still turn
    /// out to lie after the end). Ended clip (`limit` nil): writes every frame presented before the end plus the
    /// reference frames they need, until video decode time and audio presentation time pass the end.
    func consume(buffer: PreRollBuffer, limit: MediaTime?) throws {
        for entry in buffer.entries(from: cursor) {
            if entry.kind == .video && entry.sequence < keyframeSequence {
                cursor = entry.sequence + 1
                continue
            }
            if let end = end?.end {
                switch entry.kind {
                case .video:
                    if videoPastEnd || entry.dts >= end {
                        videoPastEnd = true  // every frame presented before the end has been read
                    } else if entry.pts < end {
                        for h in held { try writeVideo(h) }
                        held.removeAll()
                        try writeVideo(entry)
                    } else {
                        held.append(entry)
                    }
                case .audio:
                    if entry.pts < end { try writer.writeAudio(entry.packet) } else { audioPastEnd = true }
                }
            } else {
                guard let limit, entry.pts < limit else { return }
                switch entry.kind {
                case .video: try writeVideo(entry)
                case .audio: try writer.writeAudio(entry.packet)
                }
            }
            cursor = entry.sequence + 1
        }
    }

    private func writeVideo(_ entry: PreRollBuffer.Entry) throws {
        guard startedVideo || entry.isRandomAccess else { return }  // its keyframe was lost (counted by the buffer)
        startedVideo = true
        try writer.writeVideo(entry.packet, isRandomAccess: entry.isRandomAccess)
    }

    func isComplete() -> Bool { videoPastEnd && (audioPastEnd || !hasAudio) }

    /// Whether `entry` would still be written into this clip (``consume`` has not passed it, and it lies inside).
    func needs(_ entry: PreRollBuffer.Entry) -> Bool {
        guard entry.sequence >= cursor else { return false }
        switch entry.kind {
        case .video: return entry.sequence >= keyframeSequence && !videoPastEnd && end.map { entry.dts < $0.end } ?? true
        case .audio: return entry.pts >= start && !audioPastEnd && end.map { entry.pts < $0.end } ?? true
        }
    }

    func finish(inputEnded: Bool) throws -> SessionRecord {
        guard let end else { preconditionFailure("finish before the timeline ended the clip") }
        var record = try writer.finish(at: end.end, reason: end.reason.rawValue)
        record.trigger = begin.activationTime.seconds
        record.triggerType = begin.trigger.rawValue
        record.preRoll = (begin.anchor - start).seconds
        record.motionDetectedDuration = end.motionDetectedDuration?.seconds
        record.augmentations = end.augmentations
        return record
    }
}
