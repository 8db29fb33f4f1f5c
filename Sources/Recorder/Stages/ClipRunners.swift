import Domain
import Foundation
import Logging
import Timeline

/// The decide stage: every connection's ``ClipRunner``, fed from the same pictures, motion samples and packets, and
/// brought to what ``RecordingControl`` holds between two packets.
///
/// `pushav record` starts with one runner per policy and never changes them; `pushav serve` starts with none and
/// reconciles them to each desired state (``apply(_:at:buffer:)``, steps from ``RecordingReconciler``). A runner that
/// leaves (its connection stopped or replaced) is detached: it ends its recording and is dropped once idle, while a
/// replacement for the same connection already records beside it.
final class ClipRunners {
    private(set) var runners: [ClipRunner]
    private let settings: SessionSettings
    private let sessionFormat: SessionFormat
    private let metrics: RecordingMetrics?
    private let logger: Logger
    /// The longest MaxPreRollLen of any runner so far: what the pre-roll buffer must keep (with two keyframe
    /// intervals). It never shrinks, so a runner that left cannot make a new one's pre-roll fall short.
    private(set) var maxPreRoll: MediaTime

    init(settings: SessionSettings, options: RecordingOptions, logger: Logger) {
        self.settings = settings
        self.sessionFormat = options.sessionFormat
        self.metrics = options.metrics
        self.logger = logger
        runners = options.policies.map { ClipRunner(policy: $0, settings: settings, logger: logger) }
        maxPreRoll = options.policies.map(\.maxPreRoll).max() ?? .zero
    }

    /// The oldest buffer entry a runner still needs (nil: none).
    var oldestNeeded: Int? { runners.compactMap(\.oldestNeeded).min() }
    /// The sessions that needed `entry` (pushed out of the buffer before they wrote it).
    func sessions(needing entry: PreRollBuffer.Entry) -> [SessionNumber] { runners.flatMap { $0.sessions(needing: entry) } }
    var sessionCount: Int { runners.map(\.sessionCount).reduce(0, +) }
    var records: [SessionRecord] { runners.flatMap(\.records) }
    var dropped: [RecordingReport.DroppedClip] { runners.flatMap(\.dropped) }

    /// A video frame at `t` without analysis of this stream (the timeline advances with the packets).
    func frame(at t: MediaTime, isKeyframe: Bool, buffer: PreRollBuffer) throws {
        for runner in runners { try runner.frame(at: t, isKeyframe: isKeyframe, buffer: buffer) }
    }

    /// An analysed picture at `t` and what the detector saw in it (nil: not analysed at this rate). Each runner
    /// takes the frame, the motion and writes what it can before the next runner does.
    func picture(at t: MediaTime, isKeyframe: Bool, sample: MotionSample?, buffer: PreRollBuffer) throws {
        for runner in runners {
            try runner.frame(at: t, isKeyframe: isKeyframe, buffer: buffer)
            if let sample { try trigger(runner, by: sample, at: t, buffer: buffer) }
            try runner.pump(buffer: buffer, analysisTime: t, inputEnded: false)
        }
    }

    /// Motion seen in another stream's picture, applied at main-stream time `t`.
    func motion(_ sample: MotionSample, at t: MediaTime, buffer: PreRollBuffer) throws {
        for runner in runners { try trigger(runner, by: sample, at: t, buffer: buffer) }
    }

    /// Lets every runner write what the buffer and the analysis time allow.
    func pump(buffer: PreRollBuffer, analysisTime: MediaTime?) throws {
        for runner in runners { try runner.pump(buffer: buffer, analysisTime: analysisTime, inputEnded: false) }
    }

    /// Starts the clips of the motion-triggered connections that `sample` activates, at media time `t`.
    private func trigger(_ runner: ClipRunner, by sample: MotionSample, at t: MediaTime, buffer: PreRollBuffer) throws {
        guard runner.policy.trigger == .motion else { return }
        if runner.policy.motionFilter.matches(sample) {
            try runner.motion(at: t, buffer: buffer)
        } else if runner.policy.motionFilter.ignoresByZone(sample) {
            metrics?.ignored(.zone)
        }
    }

    /// Brings the runners to `update`'s desired state (see ``RecordingReconciler``) and hands that state to
    /// `follow` (the analysis takes its zones and triggers), then applies the manual triggers and failed sessions
    /// waiting, at media time `now`; `analysisTime` is the latest analysed picture's, as ``pump(buffer:analysisTime:)``.
    func apply(_ update: RecordingControl.Update, at now: MediaTime, analysisTime: MediaTime?, buffer: PreRollBuffer,
               follow: (DesiredRecordings) throws -> Void) throws {
        if let desired = update.desired {
            try reconcile(to: desired, at: now, buffer: buffer)
            try follow(desired)
        }
        for (id, trigger) in update.triggers {
            guard let runner = attached(id) else {
                logger.warning("manual trigger for a connection this camera does not record; nothing recorded",
                               metadata: ["connection": "\(id)"])
                continue
            }
            try runner.trigger(at: now, reason: trigger.reason, timeControl: trigger.timeControl, buffer: buffer)
        }
        for failure in update.failedSessions {
            // Leaving runners too: a session ended by a Modify may still be finishing.
            for runner in runners where runner.connectionID == failure.connection {
                try runner.sessionFailed(failure.session, reason: failure.reason)
            }
        }
        try pump(buffer: buffer, analysisTime: analysisTime)
        runners.removeAll { $0.detached && $0.isIdle }
    }

    /// Every runner ends, whatever another one's failure: each open recording gets its End. Throws the first
    /// failure after all have ended.
    func endOfInput(at end: MediaTime, stopped: Bool, buffer: PreRollBuffer) throws {
        var first: (any Error)?
        for runner in runners {
            do {
                try runner.endOfInput(at: end, stopped: stopped, buffer: buffer)
            } catch {
                logger.error("ending a connection's recording failed", metadata: [
                    "connection": "\(runner.connectionID.map(String.init) ?? "-")", "error": "\(error)",
                ])
                first = first ?? error
            }
        }
        if let first { throw first }
    }

    private func attached(_ id: UInt16) -> ClipRunner? { runners.first { $0.connectionID == id && !$0.detached } }

    private func start(_ id: UInt16, _ desired: DesiredRecording) {
        var policy = desired.policy
        policy.motionFilter = desired.motionFilter
        if var format = policy.format {
            format.includeAudio = desired.includeAudio
            policy.format = format
        }
        let runner = ClipRunner(policy: policy, settings: settings, logger: logger, connectionID: id,
                                activity: desired.active ? .active : .inactive)
        runner.target = desired.target
        runners.append(runner)
        maxPreRoll = max(maxPreRoll, policy.maxPreRoll)
    }

    private func leave(_ runner: ClipRunner, at now: MediaTime, buffer: PreRollBuffer) throws {
        runner.detached = true
        try runner.setActive(false, at: now, buffer: buffer)
    }

    private func reconcile(to desired: DesiredRecordings, at now: MediaTime, buffer: PreRollBuffer) throws {
        var running: [UInt16: RecordingReconciler.Target] = [:]
        for runner in runners where !runner.detached {
            if let id = runner.connectionID, let target = runner.target { running[id] = target }
        }
        for step in RecordingReconciler.steps(desired: desired.connections.mapValues(\.target), running: running) {
            switch step {
            case .start(let id):
                start(id, desired.connections[id]!)
            case .replace(let id):
                let unbegun = attached(id)?.handOverUnbegunCommandClip()
                if let replaced = attached(id) { try leave(replaced, at: now, buffer: buffer) }
                start(id, desired.connections[id]!)
                if let unbegun, let successor = attached(id) {
                    try successor.trigger(at: unbegun.activationTime, reason: unbegun.reason, timeControl: unbegun.timeControl,
                                          buffer: buffer)
                }
            case .stop(let id):
                if let runner = attached(id) { try leave(runner, at: now, buffer: buffer) }
            case .setActive(let id, let active):
                try attached(id)?.setActive(active, at: now, buffer: buffer)
                attached(id)?.target?.active = active
            case .setAudio(let id, let include):
                guard let runner = attached(id) else { continue }
                var format = runner.policy.format ?? sessionFormat
                format.includeAudio = include
                runner.policy.format = format
                runner.target?.includeAudio = include
            case .setMotionFilter(let id, let filter):
                attached(id)?.policy.motionFilter = filter
                attached(id)?.target?.motionFilter = filter
            case .retry(let id):
                try attached(id)?.retry(at: now, buffer: buffer)
                attached(id)?.target?.retryEpoch = desired.connections[id]!.retryEpoch
            }
        }
    }
}
