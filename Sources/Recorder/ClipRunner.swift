import Domain
import Foundation
import Logging
import MediaIO
import Timeline

/// One transport connection's clips. Its ``ConnectionRecording`` machine decides everything about them — when a
/// recording begins and ends, its Begin and End, failures and back-offs —; the runner performs the machine's actions
/// on the shared ``PreRollBuffer``: it opens session writers at the chosen keyframe, feeds them packets as the
/// analysis time passes them, finishes and abandons them, and reports back what happened.
final class ClipRunner {
    private(set) var machine: ConnectionRecording
    var timeline: ClipTimeline { machine.timeline }
    /// Its format may change between clips (``RecordingReconciler/Step/setAudio(_:_:)``); the rest is fixed.
    var policy: ClipPolicy
    /// The transport connection this runner records for, when attached through ``RecordingControl``.
    let connectionID: UInt16?
    /// Detached: it takes no new clips and is removed once its last one is written.
    var detached = false
    /// What its connection's desired state was when last applied (``RecordingReconciler``); nil outside a
    /// ``RecordingControl``.
    var target: RecordingReconciler.Target?
    /// The ActivationReason of the latest ManuallyTriggerTransport, for the Command clip it begins.
    private var manualReason: TriggerActivationReasonEnum?
    /// The time control of the latest ManuallyTriggerTransport (a replacing runner begins the same clip with it).
    private var manualTimeControl: ClipTimeControl?
    /// The recording number of a clip handed to the runner that replaces this one: its end here drops nothing.
    private var handedOver: Int?
    private let settings: SessionSettings
    private var open: OpenClip?
    private var closing: [OpenClip] = []
    /// Begin requests sent to the cluster and not answered yet, by the machine's request number (at most one).
    private var requests: [Int: BeginRequest] = [:]
    private let answers = BeginAnswers()
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
        machine = ConnectionRecording(timeline: ClipTimeline(configuration: policy.timeline, activity: activity),
                                      announcesRecordings: policy.hooks != nil, firstSession: policy.firstSession)
    }

    /// No clip open, ending, waiting for a keyframe or for the cluster's answer.
    var isIdle: Bool { open == nil && closing.isEmpty && machine.isIdle }

    private var hasAudio: Bool { settings.hasAudio && (policy.format?.includeAudio ?? true) }

    /// The lowest buffer sequence an open or closing clip still needs (everything while a recording waits for its
    /// keyframe or its answer: the keyframe it will start at is in there).
    var oldestNeeded: Int? {
        switch machine.state {
        case .waitingForKeyframe, .announcing: return 0
        default: return ([open].compactMap { $0 } + closing).map(\.cursor).min()
        }
    }

    var sessionCount: Int { records.count + (open == nil ? 0 : 1) + closing.count }

    // MARK: Inputs

    func frame(at time: MediaTime, isKeyframe: Bool, buffer: PreRollBuffer) throws {
        try handle(.timeline(.frame(time, isKeyframe: isKeyframe)), buffer: buffer)
    }

    func motion(at time: MediaTime, buffer: PreRollBuffer) throws {
        try counted(.motion) { try handle(.timeline(.motion(time)), buffer: buffer) }
    }

    /// ManuallyTriggerTransport at `time`: a Command clip with this reason, or an augmentation of the running one.
    func trigger(at time: MediaTime, reason: TriggerActivationReasonEnum, timeControl: ClipTimeControl?,
                 buffer: PreRollBuffer) throws {
        manualReason = reason
        manualTimeControl = timeControl
        try counted(.command) { try handle(.timeline(.manualTrigger(time, timeControl: timeControl)), buffer: buffer) }
    }

    /// A Command clip this runner took but has not begun: no keyframe has come since its trigger. A Modify replaces
    /// the runner (the connection's options or destination changed), and ending this runner ended the clip before
    /// it had a frame — dropped, although nothing failed (issue 47: a command race is no fault). Returned once; from
    /// then on its end here is not a drop, and the replacing runner begins it with the same activation time, reason
    /// and time control (its Begin is the first one announced: nothing was announced here).
    func handOverUnbegunCommandClip() -> UnbegunCommandClip? {
        guard case .waitingForKeyframe(let begin) = machine.state, begin.trigger == .command else { return nil }
        handedOver = begin.recording
        return UnbegunCommandClip(activationTime: begin.activationTime, reason: manualReason ?? .userInitiated,
                                  timeControl: manualTimeControl)
    }

    /// Active or Inactive from `time` on (Inactive ends the running clip: end reason `transportInactive`).
    func setActive(_ active: Bool, at time: MediaTime, buffer: PreRollBuffer) throws {
        try handle(.timeline(.status(active ? .active : .inactive, time)), buffer: buffer)
    }

    /// Whatever failed may have gone: a pending retry is tried at the next frame instead of after its back-off.
    func retry(at time: MediaTime, buffer: PreRollBuffer) throws {
        try handle(.timeline(.retry(time)), buffer: buffer)
    }

    /// The input ended at `time` (the end of the last frame read), or the recording was stopped there.
    func endOfInput(at time: MediaTime, stopped: Bool = false, buffer: PreRollBuffer) throws {
        try handle(.timeline(stopped ? .stop(time) : .endOfInput(time)), buffer: buffer)
        try pump(buffer: buffer, analysisTime: nil, inputEnded: true)
    }

    /// What session `session` produced could not be kept downstream (the spool refused it): if it is still being
    /// written it is abandoned like a session whose writer failed. A session already finished is left alone (its lost
    /// objects are counted where they were lost).
    func sessionFailed(_ session: SessionNumber, reason: String) throws {
        try handle(.sessionFailed(session: session, reason: "\(SessionOutputFailure(reason: reason))"), buffer: nil)
    }

    /// Metrics: a trigger that began a recording, or one the timeline took without recording (Inactive) or ignored
    /// (blind window). An augmentation of a running activation is neither.
    private func counted(_ trigger: TriggerType, _ body: () throws -> Void) throws {
        let before = timeline.recording?.number
        try body()
        guard let metrics = settings.options.metrics, let now = timeline.now else { return }
        if let recording = timeline.recording, recording.number != before, recording.trigger == trigger {
            if trigger == .motion { metrics.motionTriggers.increment() }
        } else if timeline.activity == .inactive, let activation = timeline.activation,
                  activation.trigger == trigger, activation.activationTime == now {
            metrics.ignored(.inactive)
        } else if trigger == .motion, timeline.activation == nil, let blindUntil = timeline.blindUntil, now < blindUntil {
            metrics.ignored(.blind)
        }
    }

    /// Open and ending clips that still need `entry` (it is at or after their read position and inside the clip).
    func sessions(needing entry: PreRollBuffer.Entry) -> [SessionNumber] {
        ([open].compactMap { $0 } + closing).filter { $0.needs(entry) }.map(\.writer.layout.session)
    }

    // MARK: The machine

    /// Runs `input` through the machine and performs its actions, then whatever they lead to (a writer that cannot
    /// open, an answer the hooks gave at once), until nothing is left. `buffer` is nil when no packet work is due.
    private func handle(_ input: ConnectionRecording.Input, buffer: PreRollBuffer?) throws {
        var inputs = [input]
        while !inputs.isEmpty {
            for action in machine.handle(inputs.removeFirst()) { inputs += try perform(action, buffer: buffer) }
            inputs += takeAnswers()
        }
    }

    private func takeAnswers() -> [ConnectionRecording.Input] {
        answers.take().map { answer in
            requests[answer.request] = nil
            return switch answer.outcome {
            case .success(let session): .beginAccepted(request: answer.request, session: session)
            case .failure(let reason): .beginRefused(request: answer.request, reason: reason)
            }
        }
    }

    /// Carries out one action; returns the inputs it produced.
    private func perform(_ action: ConnectionRecording.Action, buffer: PreRollBuffer?) throws -> [ConnectionRecording.Input] {
        switch action {
        case .announceBegin(let number, let trigger):
            guard let hooks = policy.hooks else { return [] }
            let recordingTrigger = RecordingTrigger(trigger, commandReason: manualReason ?? .userInitiated)
            // The picture at the trigger: the analysis kept the one it decoded last (the one that triggered, or the
            // latest at a manual trigger), so this costs a scale and an encode, never a decode.
            let format = policy.format ?? settings.options.sessionFormat
            let thumbnail = format.thumbnails && format.encryption == nil ? settings.pictures?.thumbnail() : nil
            let request = BeginRequest(number: number, trigger: recordingTrigger, answers: answers, thumbnail: thumbnail)
            requests[number] = request
            hooks.begin(request)
        case .withdrawBegin(let number):
            if let request = requests.removeValue(forKey: number) { policy.hooks?.withdraw(request) }
        case .announceEnd(let session):
            policy.hooks?.end(session)
        case .openSession(let session, let begin, let keyframe):
            return try openSession(session, begin: begin, keyframe: keyframe, buffer: buffer)
        case .endSession(let session, let end):
            if let clip = open, clip.writer.layout.session == session {
                clip.end = end
                closing.append(clip)
                open = nil
            }
        case .abandonSession(let session, let reason):
            abandon(session, reason: reason)
        case .dropClip(let begin, let reason, let session):
            drop(begin, reason: reason, session: session)
        case .backingOff(let retryAt, let failures):
            logger.notice("recording failed; trying again", metadata: ["retryAt": "\(retryAt.seconds)", "failures": "\(failures)"])
        case .extended(let ext):
            logger.debug("clip extended", metadata: ["D": "\(ext.motionDetectedDuration.seconds)", "at": "\(ext.time.seconds)"])
        }
        return []
    }

    private func openSession(_ session: SessionNumber, begin: ClipBegin, keyframe: ConnectionRecording.Keyframe,
                             buffer: PreRollBuffer?) throws -> [ConnectionRecording.Input] {
        let writer: SessionWriter
        do {
            writer = try settings.makeWriter(session: session, start: keyframe.pts, policy: policy)
        } catch where policy.hooks != nil {
            return [.sessionFailed(session: session, reason: "its session could not be opened: \(error)")]
        }
        // Audio of the clip may precede its first keyframe in demux order: start the cursor early enough to see it;
        // video before the keyframe is skipped and audio before the start is dropped by the writer.
        let cursor = buffer?.live.first(where: { $0.pts >= keyframe.pts - .seconds(2) })?.sequence ?? keyframe.sequence
        open = OpenClip(begin: begin, writer: writer, start: keyframe.pts, keyframeSequence: keyframe.sequence,
                        cursor: min(cursor, keyframe.sequence), hasAudio: hasAudio)
        settings.options.metrics?.clipsBegun.increment()
        logger.info("clip begins", metadata: [
            "session": "\(session)", "trigger": "\(begin.trigger.rawValue)", "t0": "\(begin.activationTime.seconds)",
            "start": "\(keyframe.pts.seconds)",
        ])
        return []
    }

    /// The pending Begin's keyframe is known once the buffered video has reached its anchor: the one the pre-roll
    /// rule picks, or (no keyframe at or before the anchor: the stream had none yet) the first one after it.
    ///
    /// Why wait for the anchor: the buffer holds the conditioned stream, which can lag the analysed one — a
    /// transcoder's encoder hands its pictures out a second or more late, so when motion is seen the keyframe before
    /// it may not be in the buffer yet; deciding then started the clip at the next keyframe, after its trigger.
    private func keyframeIfKnown(for begin: ClipBegin, in buffer: PreRollBuffer) -> ConnectionRecording.Keyframe? {
        guard buffer.live.contains(where: { $0.kind == .video && $0.pts >= begin.anchor }) else { return nil }
        let preRoll = begin.trigger == .continuous ? MediaTime.zero : policy.maxPreRoll
        let keyframe: PreRollBuffer.Entry
        if let choice = PreRollRule.start(keyframes: buffer.keyframes, trigger: begin.anchor, maxPreRoll: preRoll),
           let chosen = buffer.keyframe(at: choice.start) {
            keyframe = chosen
        } else if let next = buffer.live.first(where: { $0.kind == .video && $0.isRandomAccess && $0.pts >= begin.anchor }) {
            keyframe = next
        } else {
            return nil
        }
        return ConnectionRecording.Keyframe(pts: keyframe.pts, sequence: keyframe.sequence)
    }

    /// A clip that cannot be recorded is never lost silently: a warning now, an entry in report.json later.
    private func drop(_ begin: ClipBegin, reason: String, session: SessionNumber?) {
        if begin.recording == handedOver, session == nil {
            logger.debug("unbegun clip handed to the replacing recording", metadata: ["t0": "\(begin.activationTime.seconds)"])
            return
        }
        settings.options.metrics?.clipsDropped.increment()
        logger.warning("clip dropped", metadata: [
            "trigger": "\(begin.trigger.rawValue)", "t0": "\(begin.activationTime.seconds)", "reason": "\(reason)",
            "output": "\(policy.output.path)", "session": "\(session.map(String.init) ?? "none")",
        ])
        dropped.append(.init(trigger: begin.activationTime.seconds, triggerType: begin.trigger.rawValue,
                             output: policy.output.path, reason: reason, session: session))
        // A live connection (`pushav serve`) runs for months and its report is never written: the log line and
        // `pushav_clips_dropped_total` are its record, and only the newest entries stay here.
        if policy.hooks != nil, dropped.count > Self.droppedKeptLive { dropped.removeFirst(dropped.count - Self.droppedKeptLive) }
    }

    /// Dropped clips a live connection's runner keeps (see ``drop(_:reason:session:)``).
    static let droppedKeptLive = 64

    /// Session `session` stops here: its writer (if it opened) is left unfinished, the abandoned session's event
    /// tells the upload to abort what it streams, and an empty ``SessionHooks/finished`` lets its owner stop waiting.
    private func abandon(_ session: SessionNumber, reason: String) {
        let clip = ([open].compactMap { $0 } + closing).first { $0.writer.layout.session == session }
        if let clip {
            clip.failed = true
            if open === clip { open = nil }
            closing.removeAll { $0 === clip }
        }
        guard let hooks = policy.hooks else { return }
        hooks.events(.sessionAbandoned(session: session, reason: reason))
        let at = timeline.now ?? clip?.start ?? .zero
        let start = clip?.start ?? at
        hooks.finished(SessionRecord(
            session: session, trigger: clip?.begin.activationTime.seconds ?? at.seconds,
            triggerType: clip?.begin.trigger.rawValue ?? "", start: start.seconds, end: at.seconds,
            duration: (at - start).seconds, preRoll: nil, motionDetectedDuration: nil, augmentations: nil,
            endReason: "writerFailed", clip: nil, tracks: []))
    }

    /// A writer failed (a full disk, an I/O error). On a live connection (hooks) the failure stays with this
    /// connection: the machine ends its recording (with its End if it was running), abandons the session, drops the
    /// clip and backs off; the camera's other connections go on. Without hooks (`pushav record`) the error ends the
    /// recording as before: the run fails with its report.
    private func writerFailed(_ clip: OpenClip, error: any Error) throws {
        guard policy.hooks != nil else { throw error }
        try handle(.sessionFailed(session: clip.writer.layout.session, reason: "its session writer failed: \(error)"), buffer: nil)
    }

    // MARK: Packets

    /// Writes what open clips may take now: packets presented before `analysisTime` (every decision about them is
    /// made), and for ended clips whatever belongs before their end as it arrives.
    func pump(buffer: PreRollBuffer, analysisTime: MediaTime?, inputEnded: Bool) throws {
        // The cluster's answers that came since the last packet; then the waiting recording's keyframe, if known.
        for input in takeAnswers() { try handle(input, buffer: buffer) }
        if case .waitingForKeyframe(let begin) = machine.state, let keyframe = keyframeIfKnown(for: begin, in: buffer) {
            try handle(.keyframeFound(keyframe), buffer: buffer)
        }
        for clip in closing where !clip.failed {
            do { try clip.consume(buffer: buffer, limit: nil) } catch { try writerFailed(clip, error: error) }
        }
        for clip in closing where !clip.failed && (inputEnded || clip.isComplete()) {
            let record: SessionRecord
            do {
                record = try clip.finish(inputEnded: inputEnded)
            } catch {
                try writerFailed(clip, error: error)
                continue
            }
            closing.removeAll { $0 === clip }
            if let metrics = settings.options.metrics, let end = clip.end {
                metrics.clipEnded(end.reason)
                if !record.tracks.isEmpty { metrics.clipFinished(record, planned: (end.end - clip.start).seconds) }
            }
            if let hooks = policy.hooks {
                hooks.finished(record)  // a live connection's records are handed on, not kept in a growing report
            } else if !record.tracks.isEmpty {
                records.append(record)
            }
            try handle(.sessionWritten(session: record.session, empty: record.tracks.isEmpty), buffer: buffer)
            if let end = clip.end {
                logger.info("clip ends", metadata: [
                    "session": "\(record.session)", "reason": "\(end.reason.rawValue)", "trigger": "\(clip.begin.trigger.rawValue)",
                    "why": "\(end.reason.explanation(trigger: clip.begin.trigger))",
                ])
            }
        }
        if let clip = open {
            do { try clip.consume(buffer: buffer, limit: inputEnded ? nil : analysisTime) } catch { try writerFailed(clip, error: error) }
        }
    }
}

/// A Command clip triggered but not begun, as it passes from a replaced runner to its successor.
struct UnbegunCommandClip {
    var activationTime: MediaTime
    var reason: TriggerActivationReasonEnum
    var timeControl: ClipTimeControl?
}
