import ConcurrencyPrimitives
import Domain
import Foundation
import Ingest
import Logging
import MediaIO
import Metrics
import Motion
import Recorder
import Synchronization
import Timeline
import TransportModel

/// One camera's recording: a single demux and motion analysis of its source, shared by every transport connection
/// allocated on it. Reconnects when the source is lost (open clips end validly first, with their End events), with a
/// backoff from 1 s to 30 s; a file source marked `live` is paced at real time and played again when it ends.
///
/// Connections are attached, triggered and detached at any time; while the source is down the requests are kept
/// (attachments) or logged and counted (triggers: nothing can be recorded without frames).
public final class CameraRecorder: Sendable {
    public let configuration: CameraConfiguration
    /// Working directory of the sessions being written (each is removed once finished and spooled).
    public let output: URL
    /// Every line it (and its recording) logs carries `camera`.
    private let logger: Logger
    private let stop = RecordingStop()
    /// Frames, triggers and clips of this camera (see ``RecordingMetrics``).
    private let metrics: RecordingMetrics
    /// `pushav_camera_reconnects_total{camera}`: sources lost and opened again.
    private let reconnects: Counter
    /// `pushav_manual_triggers_lost_total{camera}`: manual triggers that came while the source was down.
    private let lostTriggers: Counter
    private let state: Mutex<State>
    /// Snapshots of the analysed pictures (across passes: a request waits for whichever pass reads next).
    private let snapshots = SnapshotRequests()
    /// The motion detector, from one pass to the next: a reconnect does not start another warm-up.
    private let motionHandover = MotionDetectorHandover()

    private struct State {
        var control: RecordingControl?
        /// What the camera should record (its connections, zones and Zone Management's triggers).
        var desired: DesiredRecordings
        /// Where ZoneTriggered/ZoneStopped go (the camera's announcer, in order with Begin and End).
        var zoneEvents: (@Sendable (ZoneEvent) -> Void)?
        var source: CameraStatus.SourceState = .connecting
        var lastError: String?
        var framesAnalysedBefore = 0
        var lastMotion: Date?
        /// The latest packet of an earlier pass (the current pass's is in its control's statistics).
        var lastPacketReadBefore: ContinuousClock.Instant?
        var recentClips: [CameraStatus.RecentClip] = []
        /// The JPEG of the picture at each recording's trigger, from its Begin on; bounded (``thumbnailsKept``): a
        /// thumbnail goes when its clip leaves `recentClips`, or, past the bound, the oldest one goes.
        var thumbnails: [ClipKey: JPEGPicture] = [:]
        /// `thumbnails`' keys, oldest first.
        var thumbnailOrder: [ClipKey] = []
        /// The recording each connection has running, and since when (wall clock, its Begin).
        var recording: [UInt16: (session: SessionNumber, since: Date)] = [:]
        /// Motion periods of earlier passes (the current pass's are in its control's statistics).
        var motionPeriods: [MotionPeriod] = []
        var lostTriggers = 0
        var reconnects = 0

        /// Pictures analysed per second, from the totals status reads see.
        var analysisRate = RateMeter()
        /// The video's picture size as the last pass found it.
        var videoSize: (width: Int, height: Int)?

        /// Holds `thumbnail` for `key`; past ``thumbnailsKept`` the oldest held goes.
        mutating func remember(_ thumbnail: JPEGPicture, for key: ClipKey) {
            thumbnails[key] = thumbnail
            thumbnailOrder.removeAll { $0 == key }
            thumbnailOrder.append(key)
            while thumbnailOrder.count > CameraRecorder.thumbnailsKept { thumbnails[thumbnailOrder.removeFirst()] = nil }
        }

        /// A pass is reading the source and has read from it.
        var isStreaming: Bool { source != .stopped && (control?.statistics.packetsRead ?? 0) > 0 }

        /// Carries a finished pass's figures over to the next.
        mutating func keep(_ statistics: RecordingControl.Statistics) {
            if let width = statistics.videoWidth, let height = statistics.videoHeight { videoSize = (width, height) }
            framesAnalysedBefore += statistics.framesAnalysed
            lastMotion = statistics.lastMotion ?? lastMotion
            lastPacketReadBefore = statistics.lastPacketRead ?? lastPacketReadBefore
            motionPeriods = Array((motionPeriods + statistics.motionPeriods)
                .filter { $0.end.timeIntervalSinceNow > -CameraRecorder.recentMotionWindow }.suffix(MotionPeriod.kept))
        }
    }

    struct ClipKey: Hashable {
        var connection: UInt16
        var session: SessionNumber
    }

    /// Recent clips and motion shown on the status page.
    static let recentClipsKept = 20
    /// Thumbnails kept: those of the recent clips plus those of recordings still running (one per connection).
    static let thumbnailsKept = 40
    static let recentMotionWindow: TimeInterval = 600

    /// `zones`: the camera's zones at start (the cluster's registry: serve.yaml's and those controllers created).
    public init(configuration: CameraConfiguration, output: URL, zones: [MotionZone]? = nil, logger: Logger) {
        self.configuration = configuration
        state = Mutex(State(desired: DesiredRecordings(zones: zones ?? configuration.zones)))
        self.output = output
        var logger = logger
        logger[metadataKey: "camera"] = "\(configuration.id)"
        self.logger = logger
        // Clip MP4s an earlier version wrote for the page (the page now plays the spool's recent recordings).
        let connections = (try? FileManager.default.contentsOfDirectory(atPath: output.path)) ?? []
        for name in connections where name.hasPrefix("connection-") {
            try? FileManager.default.removeItem(at: output.appendingPathComponent(name).appendingPathComponent("clips"))
        }
        metrics = RecordingMetrics(camera: configuration.id)
        reconnects = Counter(label: "pushav_camera_reconnects_total", dimensions: [("camera", configuration.id)])
        lostTriggers = Counter(label: "pushav_manual_triggers_lost_total", dimensions: [("camera", configuration.id)])
    }

    // MARK: Connections

    /// What the camera was last told to record.
    var desired: DesiredRecordings { state.withLock { $0.desired } }

    /// What the camera should record now: every connection's desired recording, the zones and Zone Management's
    /// triggers. Replaces the previous state; the running pass reconciles to it at its next packet, and every later
    /// pass starts from it. Nothing is queued, so nothing can be dropped or reordered.
    ///
    /// Returns a latch that opens once the running pass applied it (or ended, or there was none): from then on no
    /// recording the state left out can ask for a Begin, so a destination it retired may end its events.
    @discardableResult
    public func setDesired(_ desired: DesiredRecordings) -> Latch {
        let applied = Latch()
        let control = state.withLock { state in
            state.desired = desired
            return state.control
        }
        if let control { control.publish(desired, whenApplied: { applied.open() }) } else { applied.open() }
        return applied
    }

    /// Where each zone's ZoneTriggered/ZoneStopped goes (called on the media thread: hand it on at once). Set before
    /// ``run()``.
    public func reportZoneEvents(to sink: @escaping @Sendable (ZoneEvent) -> Void) {
        state.withLock { $0.zoneEvents = sink }
    }

    /// The spool could not keep what session `session` of connection `id` produced: the recorder abandons it.
    public func sessionFailed(_ id: UInt16, session: SessionNumber, reason: String) {
        state.withLock { $0.control }?.sessionFailed(connection: id, session: session, reason: reason)
    }

    /// ManuallyTriggerTransport. Without a source there are no frames to record: logged and counted.
    public func trigger(_ id: UInt16, reason: TriggerActivationReasonEnum, timeControl: ClipTimeControl?) {
        // Handed to the pass's control under the same lock that replaces the control between passes: a trigger never
        // lands in a control whose unapplied triggers were already carried to the next pass.
        let merged = state.withLock { state -> Bool? in
            guard let control = state.control, control.statistics.packetsRead > 0 else {
                state.lostTriggers += 1
                return nil
            }
            return control.trigger(connection: id, reason: reason, timeControl: timeControl)
        }
        switch merged {
        case nil:
            lostTriggers.increment()
            logger.warning("manual trigger while the camera source is down: nothing can be recorded",
                           metadata: ["connection": "\(id)"])
        case true?:
            logger.info("manual trigger merged with one not yet applied (same media time)", metadata: ["connection": "\(id)"])
        case false?:
            break
        }
    }

    /// A recording began (the cluster accepted its Begin as `session`), with the picture at its trigger if the
    /// connection makes thumbnails: the status page shows it from now on.
    func noteRecordingBegan(connection: UInt16, session: SessionNumber, thumbnail: JPEGPicture?) {
        state.withLock { state in
            state.recording[connection] = (session, Date())
            guard let thumbnail else { return }
            state.remember(thumbnail, for: ClipKey(connection: connection, session: session))
        }
    }

    /// A thumbnail made later from a kept recording (``RecordedPicture``): held like one made at the trigger, so the
    /// recording is decoded once however often the page asks.
    public func keepThumbnail(_ thumbnail: JPEGPicture, connection: UInt16, session: SessionNumber) {
        state.withLock { $0.remember(thumbnail, for: ClipKey(connection: connection, session: session)) }
    }

    /// A finished session, for the status page: newest first, at most ``recentClipsKept`` (an older one's thumbnail is
    /// forgotten as it drops off). Its playable copy, if any, is the spool's recent recording (the engine adds it).
    func noteClip(_ clip: CameraStatus.RecentClip) {
        let key = ClipKey(connection: clip.connectionID, session: clip.cmafSessionNumber)
        state.withLock { state in
            var clip = clip
            let path = "/v1/cameras/\(configuration.id)/clips/\(key.connection)/\(key.session)"
            clip.thumbnail = state.thumbnails[key].map { _ in path + "/thumbnail.jpg" }
            if state.recording[key.connection]?.session == key.session { state.recording[key.connection] = nil }
            state.recentClips.removeAll { $0.connectionID == clip.connectionID && $0.cmafSessionNumber == clip.cmafSessionNumber }
            state.recentClips.insert(clip, at: 0)
            while state.recentClips.count > Self.recentClipsKept {
                let old = state.recentClips.removeLast()
                let oldKey = ClipKey(connection: old.connectionID, session: old.cmafSessionNumber)
                if state.thumbnails.removeValue(forKey: oldKey) != nil { state.thumbnailOrder.removeAll { $0 == oldKey } }
            }
        }
    }

    /// A recording that produced nothing (dropped or abandoned) is no longer running.
    func noteRecordingGone(connection: UInt16, session: SessionNumber) {
        state.withLock { state in
            if state.recording[connection]?.session == session { state.recording[connection] = nil }
        }
    }

    /// The JPEG of the picture at a recording's trigger; nil when it has none or it was forgotten.
    public func thumbnail(connection: UInt16, session: SessionNumber) -> JPEGPicture? {
        state.withLock { $0.thumbnails[ClipKey(connection: connection, session: session)] }
    }

    /// The recording `connection` has running and since when; nil while none runs.
    public func runningRecording(connection: UInt16) -> (session: SessionNumber, since: Date)? {
        state.withLock { $0.recording[connection] }
    }

    /// A JPEG of the latest analysed picture: a new one while the source streams, else the last one made.
    public func snapshot() async -> Snapshot? {
        let streaming = state.withLock { $0.isStreaming }
        guard streaming else { return snapshots.latest }
        return await snapshots.snapshot()
    }

    public var status: CameraStatus {
        state.withLock { state in
            let statistics = state.control?.statistics
            let streaming = state.isStreaming
            let framesAnalysed = state.framesAnalysedBefore + (statistics?.framesAnalysed ?? 0)
            var status = CameraStatus(
                // A camera URL's credentials never leave the process: not in the API, not on the page.
                id: configuration.id, source: CredentialRedaction.redact(configuration.source),
                state: streaming ? .streaming : state.source, lastError: state.lastError.map(CredentialRedaction.redact),
                framesAnalysed: framesAnalysed,
                lastMotion: statistics?.lastMotion ?? state.lastMotion, connections: state.desired.connections.count,
                recentClips: state.recentClips,
                recentMotion: (state.motionPeriods + (statistics?.motionPeriods ?? []))
                    .filter { $0.end.timeIntervalSinceNow > -Self.recentMotionWindow },
                reconnects: state.reconnects,
                videoWidth: statistics?.videoWidth ?? state.videoSize?.width,
                videoHeight: statistics?.videoHeight ?? state.videoSize?.height)
            status.analysisRate = state.analysisRate.note(framesAnalysed)
            return status
        }
    }

    /// When the source last delivered a packet (any pass); nil before the first.
    public var lastPacketRead: ContinuousClock.Instant? {
        state.withLock { $0.control?.statistics.lastPacketRead ?? $0.lastPacketReadBefore }
    }

    // MARK: Running

    /// Ends open clips at the last frame read and makes ``run()`` return.
    public func requestStop() { stop.request() }

    /// Records until ``requestStop()``: opens the source, records, and on a loss or the end of a looped file opens it
    /// again. Each pass starts a fresh recording with every attached connection.
    public func run() async {
        let isFile = AnalysisSource.isLocalFile(configuration.source)
        var backoff = Duration.seconds(1)
        while !stop.isRequested && !Task.isCancelled {
            let control = RecordingControl()
            state.withLock { state in
                if let previous = state.control {
                    state.keep(previous.statistics)
                    // A looped file's next pass: triggers that came as the last one reached its end are applied here.
                    for (connection, trigger) in previous.takeUnappliedTriggers() {
                        control.trigger(connection: connection, reason: trigger.reason, timeControl: trigger.timeControl)
                    }
                }
                state.control = control
                state.source = state.reconnects == 0 ? .connecting : .reconnecting
                control.publish(state.desired)
            }
            var options = RecordingOptions(output: output, policies: [])
            options.control = control
            options.alwaysAnalyseMotion = true
            options.paceRealTime = isFile && configuration.live
            (options.zones, options.zoneTriggers, options.zoneEvents) = state.withLock {
                ($0.desired.zones, $0.desired.zoneTriggers, $0.zoneEvents)
            }
            options.writeClips = false
            options.analyseKeyframesOnly = configuration.analysis == .keyframes
            // Never synchronous: a camera's recording does not wait for its substream (its pictures apply as they come).
            options.analysisSource = configuration.analysisSource.map { url in
                AnalysisSource(url: url, inputOptions: url.hasPrefix("rtsp") ? ["timeout": "5000000"] : [:], synchronous: false)
            }
            options.metrics = metrics
            options.snapshots = snapshots
            options.motionHandover = motionHandover
            // A camera that stops sending must not hang the read: RTSP's socket timeout, in microseconds.
            if configuration.source.hasPrefix("rtsp") { options.inputOptions["timeout"] = "5000000" }
            let started = ContinuousClock.now
            var failure: String?
            do {
                _ = try await Recorder.record(input: configuration.source, options: options, stop: stop, logger: logger)
            } catch let error as RecordingFailure {
                failure = "\(error.underlying)"
            } catch is RecordingStoppedBeforeStart {
                control.recordingEnded()
                break
            } catch {
                failure = "\(error)"
            }
            control.recordingEnded()
            if stop.isRequested { break }
            let hadFrames = control.statistics.packetsRead > 0
            if hadFrames && (ContinuousClock.now - started > .seconds(10) || failure == nil) { backoff = .seconds(1) }
            if failure == nil && isFile && configuration.live && hadFrames {
                logger.debug("looping the file source")
                continue  // a file standing in for a camera: play it again
            }
            let reason = failure ?? "the source ended"
            let unapplied = state.withLock { state in
                state.lastError = reason
                state.source = .reconnecting
                state.reconnects += 1
                // The lost pass's statistics would still say frames were read: the status showed `streaming` (and
                // triggers were accepted) through the whole backoff. Without a pass there is no control.
                state.keep(control.statistics)
                state.control = nil
                let unapplied = control.takeUnappliedTriggers()
                state.lostTriggers += unapplied.count
                return unapplied
            }
            for (connection, _) in unapplied {
                lostTriggers.increment()
                logger.warning("manual trigger came as the camera source was lost: nothing can be recorded",
                               metadata: ["connection": "\(connection)"])
            }
            reconnects.increment()
            logger.warning("camera source lost; reconnecting", metadata: ["error": "\(reason)", "retryIn": "\(backoff)"])
            await sleep(backoff)
            backoff = min(backoff * 2, .seconds(30))
        }
        state.withLock { $0.source = .stopped }
    }

    /// Sleeps `duration`, or less when the stop comes first.
    private func sleep(_ duration: Duration) async {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline, !stop.isRequested, !Task.isCancelled {
            try? await Task.sleep(for: min(.milliseconds(100), deadline - ContinuousClock.now))
        }
    }

    public var reconnectCount: Int { state.withLock { $0.reconnects } }
    public var lostTriggerCount: Int { state.withLock { $0.lostTriggers } }
}

/// A count's rate per second from the totals successive reads see: no timer and no work on the media thread, only
/// arithmetic when someone asks (the status page polls every 2 s). Over the samples of the last ``window`` (at least
/// the previous read, however old); at most ``maxSamples`` are kept.
struct RateMeter {
    static let window = Duration.seconds(10)
    static let maxSamples = 64
    private var samples: [(at: ContinuousClock.Instant, total: Int)] = []

    /// Notes `total` now; the rate since the oldest sample kept, nil until two reads at least a second apart.
    mutating func note(_ total: Int, at now: ContinuousClock.Instant = .now) -> Double? {
        if let last = samples.last, total < last.total { samples.removeAll() }  // a count never falls: start again
        samples.append((now, total))
        while samples.count > 2, now - samples[0].at > Self.window { samples.removeFirst() }
        if samples.count > Self.maxSamples { samples.removeFirst(samples.count - Self.maxSamples) }
        guard let first = samples.first, now - first.at >= .seconds(1) else { return nil }
        let seconds = Double((now - first.at).components.seconds) + Double((now - first.at).components.attoseconds) * 1e-18
        return Double(total - first.total) / seconds
    }
}
