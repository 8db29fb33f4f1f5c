import Foundation
import Logging
import MediaIO
import Timeline
import TransportModel

/// One transport connection's clips: its ``ClipTimeline`` decides begin and end; open clips take packets from the
/// shared ``PreRollBuffer`` as the analysis time passes them.
final class ClipRunner {
    private(set) var timeline: ClipTimeline
    /// Its format may change between clips (``RecordingControl/Command/setAudio(connection:_:)``); the rest is fixed.
    var policy: ClipPolicy
    /// The transport connection this runner records for, when attached through ``RecordingControl``.
    let connectionID: UInt16?
    /// Detached: it takes no new clips and is removed once its last one is written.
    var detached = false
    /// The ActivationReason of the latest ManuallyTriggerTransport, for the Command clip it begins.
    private var manualReason: TriggerActivationReasonEnum?
    private let settings: SessionSettings
    private var nextSession: Int
    private var open: OpenClip?
    private var closing: [OpenClip] = []
    /// A Begin whose keyframe is not known yet (see ``startPendingIfPossible(buffer:)``).
    private var pendingBegin: ClipBegin?
    private(set) var records: [SessionRecord] = []
    /// Clips that were activated but could not be recorded (times on the input timeline, not yet rebased).
    private(set) var dropped: [RecordingReport.DroppedClip] = []
    private let logger: Logger

    init(policy: ClipPolicy, settings: SessionSettings, logger: Logger, connectionID: UInt16? = nil,
         activity: TransportActivity = .active) {
        self.policy = policy
        self.settings = settings
        var logger = logger
        if let connectionID { logger[metadataKey: "connection"] = "\(connectionID)" }
        self.logger = logger
        self.connectionID = connectionID
        nextSession = policy.firstSession
        timeline = ClipTimeline(configuration: policy.timeline, activity: activity)
    }

    /// No clip open, ending or waiting for a keyframe.
    var isIdle: Bool { open == nil && closing.isEmpty && pendingBegin == nil }

    private var hasAudio: Bool { settings.hasAudio && (policy.format?.includeAudio ?? true) }

    /// The lowest buffer sequence an open or closing clip still needs.
    var oldestNeeded: Int? {
        ([open].compactMap { $0 } + closing).map(\.cursor).min() ?? (pendingBegin == nil ? nil : 0)
    }

    var sessionCount: Int { records.count + (open == nil ? 0 : 1) + closing.count }

    // MARK: Timeline inputs

    func frame(at time: MediaTime, isKeyframe: Bool, buffer: PreRollBuffer) throws {
        try apply(timeline.frame(at: time, isKeyframe: isKeyframe), buffer: buffer)
    }

    func motion(at time: MediaTime, buffer: PreRollBuffer) throws {
        let decisions = timeline.motion(at: time)
        countTrigger(.motion, decisions: decisions)
        try apply(decisions, buffer: buffer)
    }

    /// ManuallyTriggerTransport at `time`: a Command clip with this reason, or an augmentation of the running one.
    func trigger(at time: MediaTime, reason: TriggerActivationReasonEnum, timeControl: ClipTimeControl?,
                 buffer: PreRollBuffer) throws {
        manualReason = reason
        let decisions = timeline.manualTrigger(at: time, timeControl: timeControl)
        countTrigger(.command, decisions: decisions)
        try apply(decisions, buffer: buffer)
    }

    /// Metrics: a trigger that began a recording, or one the timeline took without recording (Inactive) or ignored
    /// (blind window). An augmentation of a running activation is neither.
    private func countTrigger(_ trigger: ClipTrigger, decisions: [ClipDecision]) {
        guard let metrics = settings.options.metrics, let now = timeline.now else { return }
        let began = decisions.contains { decision in
            if case .begin(let begin) = decision { return begin.trigger == trigger }
            return false
        }
        if began {
            if trigger == .motion { metrics.motionTriggers.increment() }
        } else if timeline.activity == .inactive, let activation = timeline.activation,
                  activation.trigger == trigger, activation.activationTime == now {
            metrics.ignored(.inactive)
        } else if trigger == .motion, timeline.activation == nil, let blindUntil = timeline.blindUntil, now < blindUntil {
            metrics.ignored(.blind)
        }
    }

    /// Active or Inactive from `time` on (Inactive ends the running clip: end reason `transportInactive`).
    func setActive(_ active: Bool, at time: MediaTime, buffer: PreRollBuffer) throws {
        try apply(timeline.setStatus(active ? .active : .inactive, at: time), buffer: buffer)
    }

    /// The input ended at `time` (the end of the last frame read), or the recording was stopped there.
    func endOfInput(at time: MediaTime, stopped: Bool = false, buffer: PreRollBuffer) throws {
        try apply(stopped ? timeline.stop(at: time) : timeline.endOfInput(at: time), buffer: buffer)
        try pump(buffer: buffer, analysisTime: nil, inputEnded: true)
        if let begin = pendingBegin {
            drop(begin, reason: "no random access picture (IDR, or CRA/BLA without RASL) at or after its pre-roll start before the input \(stopped ? "was stopped" : "ended")")
            pendingBegin = nil
        }
    }

    /// Open and ending clips that still need `entry` (it is at or after their read position and inside the clip).
    func sessions(needing entry: PreRollBuffer.Entry) -> [Int] {
        ([open].compactMap { $0 } + closing).filter { $0.needs(entry) }.map(\.writer.layout.session)
    }

    /// A clip that cannot be recorded is never lost silently: a warning now, an entry in report.json later.
    private func drop(_ begin: ClipBegin, reason: String, session: Int? = nil) {
        settings.options.metrics?.clipsDropped.increment()
        logger.warning("clip dropped", metadata: [
            "trigger": "\(begin.trigger.rawValue)", "t0": "\(begin.activationTime.seconds)", "reason": "\(reason)",
            "output": "\(policy.output.path)",
        ])
        dropped.append(.init(trigger: begin.activationTime.seconds, triggerType: begin.trigger.rawValue,
                             output: policy.output.path, reason: reason, session: session))
    }

    private func apply(_ decisions: [ClipDecision], buffer: PreRollBuffer) throws {
        for decision in decisions {
            switch decision {
            case .begin(let begin):
                try start(begin, buffer: buffer)
            case .extend(let ext):
                logger.debug("clip extended", metadata: ["D": "\(ext.motionDetectedDuration.seconds)", "at": "\(ext.time.seconds)"])
            case .end(let end):
                if let clip = open {
                    clip.end = end
                    policy.hooks?.end(clip.writer.layout.session)
                    closing.append(clip)
                    open = nil
                } else if let begin = pendingBegin, begin.recording == end.recording {
                    drop(begin, reason: "no random access picture (IDR, or CRA/BLA without RASL) between its pre-roll start and its end")
                    pendingBegin = nil
                }
            }
        }
    }

    /// Opens a session at the keyframe the pre-roll rule picks, as soon as the buffer can tell.
    private func start(_ begin: ClipBegin, buffer: PreRollBuffer) throws {
        if let superseded = pendingBegin {
            drop(superseded, reason: "no random access picture arrived before the next clip began")
        }
        pendingBegin = begin
        try startPendingIfPossible(buffer: buffer)
    }

    /// The pending Begin's keyframe is known once the buffered video has reached its anchor: the one the pre-roll
    /// rule picks, or (no keyframe at or before the anchor: the stream had none yet) the first one after it.
    ///
    /// Why wait for the anchor: the buffer holds the conditioned stream, which can lag the analysed one — a
    /// transcoder's encoder hands its pictures out a second or more late, so when motion is seen the keyframe before
    /// it may not be in the buffer yet; deciding then started the clip at the next keyframe, after its trigger.
    private func startPendingIfPossible(buffer: PreRollBuffer) throws {
        guard let begin = pendingBegin,
              buffer.live.contains(where: { $0.kind == .video && $0.pts >= begin.anchor })
        else { return }
        let preRoll = begin.trigger == .continuous ? MediaTime.zero : policy.maxPreRoll
        let keyframe: PreRollBuffer.Entry
        if let choice = PreRollRule.start(keyframes: buffer.keyframes, trigger: begin.anchor, maxPreRoll: preRoll),
           let chosen = buffer.keyframe(at: choice.start) {
            keyframe = chosen
        } else if let next = buffer.live.first(where: { $0.kind == .video && $0.isRandomAccess && $0.pts >= begin.anchor }) {
            keyframe = next
        } else {
            return
        }
        pendingBegin = nil
        try open(begin, at: keyframe, buffer: buffer)
    }

    private func open(_ begin: ClipBegin, at keyframe: PreRollBuffer.Entry, buffer: PreRollBuffer) throws {
        let session: Int
        if let hooks = policy.hooks {
            let trigger: RecordingTrigger = switch begin.trigger {
            case .motion: .motion
            case .continuous: .continuous
            case .command: .command(manualReason ?? .userInitiated)
            }
            do {
                session = try hooks.begin(trigger)
            } catch {
                drop(begin, reason: "the transport refused the recording: \(error)")
                recordingFailed(begin.recording)
                return
            }
        } else {
            session = nextSession
            nextSession += 1
        }
        let writer: SessionWriter
        do {
            writer = try settings.makeWriter(session: session, start: keyframe.pts, policy: policy)
        } catch where policy.hooks != nil {
            // The Begin is out: this recording ends here, with its End, and is tried again after a back-off.
            abandon(session: session, begin: begin, start: keyframe.pts, endNow: true,
                    reason: "its session could not be opened: \(error)")
            return
        }
        // Audio of the clip may precede its first keyframe in demux order: start the cursor early enough to see it;
        // video before the keyframe is skipped and audio before the start is dropped by the writer.
        let cursor = buffer.live.first(where: { $0.pts >= keyframe.pts - .seconds(2) })?.sequence ?? keyframe.sequence
        open = OpenClip(begin: begin, writer: writer, start: keyframe.pts, keyframeSequence: keyframe.sequence, cursor: cursor,
                        hasAudio: hasAudio)
        settings.options.metrics?.clipsBegun.increment()
        logger.info("clip begins", metadata: [
            "session": "\(session)", "trigger": "\(begin.trigger.rawValue)", "t0": "\(begin.activationTime.seconds)",
            "start": "\(keyframe.pts.seconds)",
        ])
    }

    // MARK: Packets

    /// Writes what open clips may take now: packets presented before `analysisTime` (every decision about them is
    /// made), and for ended clips whatever belongs before their end as it arrives.
    func pump(buffer: PreRollBuffer, analysisTime: MediaTime?, inputEnded: Bool) throws {
        try startPendingIfPossible(buffer: buffer)
        for clip in closing {
            do { try clip.consume(buffer: buffer, limit: nil) } catch { try writerFailed(clip, error: error) }
        }
        var stillClosing: [OpenClip] = []
        for clip in closing where !clip.failed {
            if inputEnded || clip.isComplete() {
                let record: SessionRecord
                do {
                    record = try clip.finish(inputEnded: inputEnded)
                } catch {
                    try writerFailed(clip, error: error)
                    continue
                }
                if let metrics = settings.options.metrics, let end = clip.end {
                    metrics.clipEnded(end.reason)
                    if !record.tracks.isEmpty { metrics.clipFinished(record, planned: (end.end - clip.start).seconds) }
                }
                if record.tracks.isEmpty {
                    // Not one of its video frames reached the muxer: its keyframe was pushed out of a full pre-roll
                    // buffer, or the input failed first. Its headers are gone; the event is a dropped clip, not a session.
                    drop(clip.begin, reason: "no frame of the clip could be written (its keyframe was lost from a full pre-roll "
                         + "buffer, or the input failed first); session \(record.session) was removed", session: record.session)
                    policy.hooks?.finished(record)  // the cluster announced it: its owner learns it ended, empty
                } else if let hooks = policy.hooks {
                    hooks.finished(record)  // a live connection's records are handed on, not kept in a growing report
                } else {
                    records.append(record)
                }
                logger.info("clip ends", metadata: ["session": "\(clip.writer.layout.session)",
                                                    "reason": "\(clip.end!.reason.rawValue)"])
            } else {
                stillClosing.append(clip)
            }
        }
        closing = stillClosing
        if let clip = open {
            do { try clip.consume(buffer: buffer, limit: inputEnded ? nil : analysisTime) } catch { try writerFailed(clip, error: error) }
        }
    }

    // MARK: Failures

    /// A session writer failed (a full disk, an I/O error). On a live connection (hooks) the failure stays with this
    /// connection: its recording ends here — with its End if the timeline had not ended it yet —, the session is
    /// abandoned (its open segment is never finished, its live upload aborted), the clip is a dropped clip (logged,
    /// counted, in the report), and the timeline tries again after a back-off. Without hooks (`pushav record`) the
    /// error ends the recording as before: the run fails with its report.
    private func writerFailed(_ clip: OpenClip, error: any Error) throws {
        guard policy.hooks != nil else { throw error }
        clip.failed = true
        let isOpen = open === clip
        if isOpen { open = nil }
        closing.removeAll { $0 === clip }
        abandon(session: clip.writer.layout.session, begin: clip.begin, start: clip.start, endNow: isOpen,
                reason: "its session writer failed: \(error)")
    }

    /// Ends session `session` that cannot be recorded: its End (when the timeline has not ended it), the abandoned
    /// session's event, an empty ``SessionHooks/finished`` (its owner stops waiting for it), a dropped clip, and —
    /// when it was the running recording — the timeline's back-off.
    private func abandon(session: Int, begin: ClipBegin, start: MediaTime, endNow: Bool, reason: String) {
        guard let hooks = policy.hooks else { return }
        if endNow { hooks.end(session) }
        hooks.events(.sessionAbandoned(session: session, reason: reason))
        let at = timeline.now ?? start
        hooks.finished(SessionRecord(
            session: session, trigger: begin.activationTime.seconds, triggerType: begin.trigger.rawValue,
            start: start.seconds, end: at.seconds, duration: (at - start).seconds, preRoll: nil, motionDetectedDuration: nil,
            augmentations: nil, endReason: "writerFailed", clip: nil, tracks: []))
        drop(begin, reason: reason, session: session)
        if endNow { recordingFailed(begin.recording) }
    }

    /// Tells the timeline that recording `number` could not be recorded, if it is still the one it runs.
    private func recordingFailed(_ number: Int) {
        guard let recording = timeline.recording, recording.number == number, let now = timeline.now else { return }
        _ = timeline.handle(.recordingFailed(now))
        logger.notice("recording failed; trying again", metadata: [
            "retryAt": "\(timeline.retryAt?.seconds ?? now.seconds)", "failures": "\(timeline.consecutiveFailures)",
        ])
    }

    /// What session `session` produced could not be kept downstream (the spool refused it): if it is still being
    /// written it is abandoned like a session whose writer failed. A session already finished is left alone (its lost
    /// objects are counted where they were lost).
    func sessionFailed(_ session: Int, reason: String) throws {
        guard let clip = ([open].compactMap { $0 } + closing).first(where: { $0.writer.layout.session == session }) else { return }
        try writerFailed(clip, error: SessionOutputFailure(reason: reason))
    }

    /// Whatever failed may have gone: a pending retry is tried at the next frame instead of after its back-off.
    func retry(at time: MediaTime, buffer: PreRollBuffer) throws {
        try apply(timeline.handle(.retry(time)), buffer: buffer)
    }
}

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

/// What every session of a recording shares: the conditioned tracks and the CMAF settings.
struct SessionSettings {
    let video: any TrackConditioner
    let videoCodec: String
    let frameRate: Double?
    let audio: (any TrackConditioner)?
    let audioCodec: String?
    let options: RecordingOptions

    var hasAudio: Bool { audio != nil }

    func makeWriter(session: Int, start: MediaTime, policy: ClipPolicy) throws -> SessionWriter {
        let format = policy.format ?? options.sessionFormat
        return try SessionWriter(
            layout: SessionLayout(root: policy.output, session: session, videoTrackName: format.videoTrackName,
                                  audioTrackName: format.audioTrackName),
            start: start, video: video, videoCodec: videoCodec, frameRate: frameRate,
            audio: format.includeAudio ? audio : nil, audioCodec: format.includeAudio ? audioCodec : nil,
            segmentDuration: format.segmentDuration, chunkDuration: format.chunkDuration,
            writeClip: format.writeClips, manifest: format.dashManifest, encryption: format.encryption,
            writesFiles: format.writesSegmentFiles, emit: counted(policy.hooks?.events ?? options.events))
    }

    /// `emit`, also counting the bytes recorded when the recording has metrics.
    private func counted(_ emit: (@Sendable (RecordingEvent) -> Void)?) -> (@Sendable (RecordingEvent) -> Void)? {
        guard let metrics = options.metrics else { return emit }
        return { event in
            metrics.count(event)
            emit?(event)
        }
    }
}
