import AsyncHTTPClient
import Domain
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Synchronization

/// How an upload run ended.
public struct UploadSummary: Sendable, Hashable {
    public var delivered: Int
    public var retries: Int
    /// Set when a track spent its retry budget (the CLI's runs; a daemon has none and never stops).
    public var failure: String?
    /// True when nothing is left in the spool for this connection.
    public var complete: Bool
    /// Objects that could not be spooled (write failed) and so were never uploaded: data lost.
    public var lost: Int = 0
    /// The first of them (at most ``SegmentUploader/lostObjectsNamed``), for the error message.
    public var lostObjects: [UploadObject] = []
    /// Objects the ingest refused for good (``UploadDecision/giveUp(_:)``): dropped from the queue, never delivered.
    public var givenUp: Int = 0
    /// The first of them (at most ``SegmentUploader/lostObjectsNamed``), for the error message.
    public var givenUpObjects: [UploadObject] = []
    /// Objects counted as delivered without an answer saying so (``UploadDecision/deliveredUnconfirmed(_:)``): an
    /// attempt went unanswered and the ingest then refused the copies.
    public var unconfirmed: Int = 0
    /// The first of them (at most ``SegmentUploader/lostObjectsNamed``), for the warning.
    public var unconfirmedObjects: [UploadObject] = []

    public init(
        delivered: Int, retries: Int, failure: String? = nil, complete: Bool, lost: Int = 0,
        lostObjects: [UploadObject] = [], givenUp: Int = 0, givenUpObjects: [UploadObject] = [], unconfirmed: Int = 0,
        unconfirmedObjects: [UploadObject] = []
    ) {
        self.delivered = delivered
        self.retries = retries
        self.failure = failure
        self.complete = complete
        self.lost = lost
        self.lostObjects = lostObjects
        self.givenUp = givenUp
        self.givenUpObjects = givenUpObjects
        self.unconfirmed = unconfirmed
        self.unconfirmedObjects = unconfirmedObjects
    }
}

/// How a connection's uploads went lately, for status pages: when an object last reached the ingest, and the latest
/// problem (a failed attempt to be retried, a refusal, a give-up) with when it happened. A later delivery does not
/// clear the problem: its time tells whether it is still current.
public struct UploadActivity: Sendable, Hashable {
    public var lastDelivery: Date?
    public var lastProblem: String?
    public var lastProblemAt: Date?

    public init(lastDelivery: Date? = nil, lastProblem: String? = nil, lastProblemAt: Date? = nil) {
        self.lastDelivery = lastDelivery
        self.lastProblem = lastProblem
        self.lastProblemAt = lastProblemAt
    }
}

/// Uploads one connection's CMAF objects over HTTPS PUT: spooled objects first, in order per track, with one
/// independent lane per track; live segments stream chunk by chunk when their track is caught up.
///
/// Feed it with ``handle(_:)`` (it spools before anything is sent), run ``run()`` alongside, and call
/// ``finishWhenDrained()`` to make `run()` return once everything is delivered. `run()` must be called once: it
/// also shuts the HTTP client down.
public final class SegmentUploader: Sendable {
    public let spool: SegmentSpool
    public let endpoint: UploadEndpoint
    public let policy: UploadPolicy
    /// Expected duration of one segment; bounds how long a streamed (live) PUT may take.
    public let segmentDuration: Duration
    let client: HTTPClient
    public let logger: Logger
    /// When this uploader was made: an object spooled before it may have been sent by an earlier one (see
    /// ``UploadStateMachine/mayHaveArrivedBefore(_:)``).
    let startedAt = Date()
    let shared = Mutex(Shared())
    let newTracks: AsyncStream<TrackName>
    let newTracksContinuation: AsyncStream<TrackName>.Continuation
    let retriesCounter: Counter
    let deliveredCounter: Counter
    let failedGauge: Gauge
    let givenUpCounter: Counter
    let unconfirmedCounter: Counter
    let spoolReadFailuresCounter: Counter
    let spoolWriteFailuresCounter: Counter
    let journalFailuresCounter: Counter
    /// How many lost objects ``UploadSummary/lostObjects`` names (the count is kept in full).
    public static let lostObjectsNamed = 10

    struct Shared {
        var tracks: Set<TrackName> = []
        var wakers: [TrackName: AsyncStream<Void>.Continuation] = [:]
        var live: [TrackName: LiveSegment] = [:]
        /// Streamed successfully before the spool finished writing them; marked delivered when they appear there.
        var deliveredLive: Set<UploadObject> = []
        /// Delivered, but the journal's commit of it failed: this process knows it was delivered and never sends it
        /// again; the lane commits it again, with back-off, when it meets it as its next object. Bounded by the
        /// spool: an entry leaves when its commit succeeds (a restart forgets them: at-least-once then).
        var deliveredUnjournalled: Set<UploadObject> = []
        var lastDelivered: [TrackName: UploadObject] = [:]
        var draining = false
        /// The spool's waiting tracks have their lanes (``registerSpooledTracks()``).
        var spooledTracksRegistered = false
        var failure: String?
        var delivered = 0
        var retries = 0
        var lost = 0
        var lostObjects: [UploadObject] = []
        var givenUp = 0
        var givenUpObjects: [UploadObject] = []
        var unconfirmed = 0
        var unconfirmedObjects: [UploadObject] = []
        /// Given up (counted and logged) but not yet recorded so in the spool: a live segment the spool had not
        /// stored yet, or one whose spool update failed. Recorded when the lane meets it there, never sent again.
        var givenUpUnrecorded: [UploadObject: String] = [:]
        /// Whether a lane reported authentication refused (`pushav_upload_connection_failed` is 1) and no 2xx came
        /// since. Per connection, so several lanes refused at once log and set the gauge once.
        var authenticationRefused = false
        /// Not spooled (the write failed) while a live upload of them was under way: lost only if that upload fails.
        /// At most one per track: a lane streams one segment at a time.
        var unspooledStreaming: Set<UploadObject> = []
        var activity = UploadActivity()

        mutating func noteProblem(_ problem: String) {
            activity.lastProblem = problem
            activity.lastProblemAt = Date()
        }
    }

    /// Makes the HTTP client (throws when the TLS material does not load); reads nothing: the spool's waiting objects
    /// are found when ``run()`` starts.
    public init(spool: SegmentSpool, endpoint: UploadEndpoint, policy: UploadPolicy, segmentDuration: Duration,
                logger: Logger = Logger(label: "pushav.upload")) throws {
        self.spool = spool
        self.endpoint = endpoint
        self.policy = policy
        self.segmentDuration = segmentDuration
        self.logger = logger
        var configuration = HTTPClient.Configuration()
        if let tls = endpoint.tls { configuration.tlsConfiguration = try tls.makeTLSConfiguration() }
        configuration.httpVersion = .automatic  // HTTP/2 when the server offers it in ALPN
        configuration.timeout = .init(connect: policy.connectTimeout.timeAmount, read: policy.requestTimeout.timeAmount)
        configuration.redirectConfiguration = .follow(max: 3, allowCycles: false)
        // A refused connection fails the request at once so that our backoff (jittered, capped by
        // policy.maximumBackoff) paces reconnects. The pool's own connection backoff would stack on top and grow to
        // a minute after about 30 failures, delaying recovery from a long outage by up to that long.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        (newTracks, newTracksContinuation) = AsyncStream.makeStream(of: TrackName.self)
        let dimensions = UploadDestination.metricDimensions(ofKey: endpoint.connection)
        retriesCounter = Counter(label: "pushav_upload_retries_total", dimensions: dimensions)
        deliveredCounter = Counter(label: "pushav_upload_delivered_total", dimensions: dimensions)
        failedGauge = Gauge(label: "pushav_upload_connection_failed", dimensions: dimensions)
        givenUpCounter = Counter(label: "pushav_upload_objects_given_up_total", dimensions: dimensions)
        unconfirmedCounter = Counter(label: "pushav_upload_objects_unconfirmed_total", dimensions: dimensions)
        spoolReadFailuresCounter = Counter(label: "pushav_spool_read_failures_total", dimensions: dimensions)
        spoolWriteFailuresCounter = Counter(label: "pushav_spool_write_failures_total", dimensions: dimensions)
        journalFailuresCounter = Counter(label: "pushav_spool_journal_failures_total", dimensions: dimensions)
    }

    // MARK: - Running

    /// Uploads until ``finishWhenDrained()`` was called and everything is delivered, or the task is cancelled.
    /// Shuts the HTTP client down before returning.
    public func run() async -> UploadSummary {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.registerSpooledTracks() }
            for await track in newTracks {
                group.addTask { await self.runLane(track: track) }
            }
            await group.waitForAll()
        }
        try? await client.shutdown()
        // A live upload that never reported back (its lane stopped first) did not deliver its unspooled segment.
        for object in shared.withLock({ $0.unspooledStreaming.sorted() }) {
            noteLost(object, reason: "could not be spooled, and its live upload did not complete")
        }
        shared.withLock { $0.unspooledStreaming.removeAll() }
        let complete = !((try? await spool.isBusy(connection: endpoint.connection)) ?? true)
        return shared.withLock {
            var summary = UploadSummary(delivered: $0.delivered, retries: $0.retries, failure: $0.failure, complete: complete)
            (summary.lost, summary.lostObjects) = ($0.lost, $0.lostObjects)
            (summary.givenUp, summary.givenUpObjects) = ($0.givenUp, $0.givenUpObjects)
            (summary.unconfirmed, summary.unconfirmedObjects) = ($0.unconfirmed, $0.unconfirmedObjects)
            return summary
        }
    }

    /// The tracks with objects waiting in the spool from before (a restart, a retired destination) get their lanes;
    /// a failed read is logged, counted and tried again after a backoff (nothing else would wake those lanes).
    func registerSpooledTracks() async {
        defer {
            // Registered, or given up (cancelled, or the CLI's retry budget spent): a drain may end the stream now.
            let draining = shared.withLock { shared in
                shared.spooledTracksRegistered = true
                return shared.draining
            }
            if draining { newTracksContinuation.finish() }
        }
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        while !Task.isCancelled {
            do {
                for track in try await spool.tracks(connection: endpoint.connection) { registerTrack(track) }
                return
            } catch {
                let decision = machine.decide(afterSpoolFailure: "spool journal failed: \(error)", using: &random)
                if !(await spoolReadFailed(track: "*", decision: decision, error: error)) { return }
            }
        }
    }

    func registerTrack(_ track: TrackName) {
        let isNew = shared.withLock { shared -> Bool in
            guard !shared.tracks.contains(track) else { return false }
            shared.tracks.insert(track)
            return true
        }
        if isNew { newTracksContinuation.yield(track) }
    }

    /// After `delivered` is delivered, wakes the lanes that may wait for it (Interface-2): a dynamic manifest lets
    /// the session's headers go, a track's object may be the last one its static manifest waits for. Without
    /// manifests no other lane is woken.
    func wakeDependents(of delivered: UploadObject) {
        let wakers = shared.withLock { shared in
            delivered.isManifest ? shared.wakers.filter { $0.key != UploadObject.manifestTrack }.map(\.value)
                : shared.wakers[UploadObject.manifestTrack].map { [$0] } ?? []
        }
        for waker in wakers { waker.yield() }
    }

    func wake(_ track: TrackName) {
        _ = shared.withLock { $0.wakers[track] }?.yield()
    }

    /// `object` counts as delivered although no answer said so: counted (`pushav_upload_objects_unconfirmed_total`),
    /// summarised and logged as a warning naming it, so an operator can check the ingest holds it.
    func noteUnconfirmed(_ object: UploadObject, reason: String, outcome: UploadOutcome) {
        shared.withLock { shared in
            shared.noteProblem("\(object.relativePath) unconfirmed: \(outcome) after an unanswered attempt")
            shared.unconfirmed += 1
            if shared.unconfirmedObjects.count < Self.lostObjectsNamed { shared.unconfirmedObjects.append(object) }
        }
        unconfirmedCounter.increment()
        logger.warning("upload unconfirmed: an attempt got no answer, then the ingest refused the copies; counted as delivered",
                       metadata: [
                           "connection": "\(endpoint.connection)", "object": "\(object.relativePath)", "status": "\(outcome)",
                           "reason": "\(reason)",
                       ])
    }

    /// The ingest refused `object` for good: counted, logged, summarised and taken out of the spool's queue (as if
    /// delivered, but recorded as given up), so the lane, and the lanes waiting for it, go on. A live segment the
    /// spool has not stored yet (`recordWhenSpooled`) is recorded when the lane meets it there.
    func giveUp(_ object: UploadObject, reason: String, outcome: UploadOutcome, recordWhenSpooled: Bool) async {
        let connection = endpoint.connection
        shared.withLock { shared in
            shared.noteProblem("\(object.relativePath) given up: \(outcome)")
            shared.givenUp += 1
            if shared.givenUpObjects.count < Self.lostObjectsNamed { shared.givenUpObjects.append(object) }
            if recordWhenSpooled { shared.givenUpUnrecorded[object] = reason }
        }
        givenUpCounter.increment()
        logger.error("upload given up: the ingest refused \(object) for good; it is dropped from the spool", metadata: [
            "connection": "\(connection)", "session": "\(object.session)", "track": "\(object.track)",
            "object": "\(object.relativePath)", "status": "\(outcome)", "reason": "\(reason)",
        ])
        do {
            try await spool.markGivenUp(connection: connection, object: object, reason: reason)
        } catch {
            // Still counted and logged; the lane records it when it meets the object in the spool again.
            shared.withLock { $0.givenUpUnrecorded[object] = reason }
            logger.error("could not record a given-up object in the spool; will retry", metadata: [
                "connection": "\(connection)", "object": "\(object)", "error": "\(error)",
            ])
        }
    }

    /// The `maximumAuthFailures`-th refusal in a row on some lane: the gauge and one error, once per connection until
    /// a 2xx. Uploads go on: credentials may be fixed or rotated while the daemon runs.
    func authenticationRefused(reason: String) {
        let first = shared.withLock { shared in
            defer { shared.authenticationRefused = true }
            return !shared.authenticationRefused
        }
        guard first else { return }
        failedGauge.record(1)
        logger.error("upload connection failed: authentication refused repeatedly; still retrying, the spool is kept", metadata: [
            "connection": "\(endpoint.connection)", "url": "\(endpoint.url)", "reason": "\(reason)",
        ])
    }

    /// A 2xx after authentication was reported refused: the gauge back to 0 and one notice.
    func authenticationAccepted() {
        let wasRefused = shared.withLock { shared in
            defer { shared.authenticationRefused = false }
            return shared.authenticationRefused
        }
        guard wasRefused else { return }
        failedGauge.record(0)
        logger.notice("authentication accepted again", metadata: ["connection": "\(endpoint.connection)", "url": "\(endpoint.url)"])
    }

    func budgetSpent(track: TrackName, reason: String) {
        shared.withLock {
            $0.failure = "track \(track): retry budget spent: \(reason)"
            $0.noteProblem($0.failure!)
        }
        logger.error("retry budget spent; keeping the spool", metadata: ["track": "\(track)", "reason": "\(reason)"])
    }

    /// Counts and logs a spool read failure and carries out `decision` (a retry after its backoff, or giving up).
    /// False when the lane must stop.
    func spoolReadFailed(track: TrackName, decision: UploadDecision, error: any Error) async -> Bool {
        spoolReadFailuresCounter.increment()
        shared.withLock { $0.noteProblem("spool read failed: \(error)") }
        switch decision {
        case .retry(let delay):
            shared.withLock { $0.retries += 1 }
            retriesCounter.increment()
            logger.error("spool read failed; will retry", metadata: [
                "track": "\(track)", "error": "\(error)", "delay": "\(delay)",
            ])
            return await pause(delay)
        case .budgetSpent(let reason):
            budgetSpent(track: track, reason: reason)
            return false
        case .delivered, .deliveredUnconfirmed, .resendHeader, .authenticationRefused, .giveUp:  // never decided for a spool failure
            budgetSpent(track: track, reason: "unexpected decision \(decision) after a spool read failure")
            return false
        }
    }

    /// A live segment may be streamed only when it directly follows what this track delivered last. Its body is
    /// made under the lock that ``handle(_:)`` uses to finish it, so a failed spool write sees whether it streams.
    func claimStreamableLiveSegment(track: TrackName) -> (LiveSegment, AsyncThrowingStream<ByteBuffer, any Error>)? {
        shared.withLock { shared in
            guard let live = shared.live[track], !live.wasStreamed,
                  let predecessor = live.object.predecessor, shared.lastDelivered[track] == predecessor
            else { return nil }
            return (live, live.makeBody())
        }
    }

    func noteRetry(_ object: UploadObject, outcome: UploadOutcome, delay: Duration) {
        shared.withLock {
            $0.retries += 1
            $0.noteProblem("\(object.relativePath): \(outcome)")
        }
        retriesCounter.increment()
        logger.warning("upload failed; will retry", metadata: [
            "object": "\(object)", "outcome": "\(outcome)", "delay": "\(delay)",
        ])
    }

    /// Sleeps; false when cancelled.
    func pause(_ delay: Duration) async -> Bool {
        guard delay > .zero else { return !Task.isCancelled }
        do {
            try await Task.sleep(for: delay)
            return true
        } catch {
            return false
        }
    }

    func put(_ object: UploadObject, body: HTTPClientRequest.Body, timeout: Duration) async -> UploadOutcome {
        var request = HTTPClientRequest(url: endpoint.url + object.urlPath)
        request.method = .PUT
        request.headers.add(name: "Content-Type", value: object.contentType)
        request.headers.add(name: "User-Agent", value: "pushav")
        request.headers.add(name: "DASH-IF-Ingest", value: "1.1")
        request.body = body
        do {
            let response = try await client.execute(request, timeout: timeout.timeAmount, logger: logger)
            _ = try? await response.body.collect(upTo: 1 << 16)
            return .status(Int(response.status.code))
        } catch {
            return Self.outcome(of: error)
        }
    }

    /// Whether a failed request may have reached the ingest: after a timeout waiting for the answer, or a connection
    /// closed before it, it may have been taken (``UploadOutcome/unanswered(_:)``); every other failure (refused,
    /// connect or TLS timeout, TLS errors) happens before the request is sent.
    public static func outcome(of error: any Error) -> UploadOutcome {
        let reason = String(describing: error)
        if let error = error as? HTTPClientError,
           [HTTPClientError.deadlineExceeded, .readTimeout, .remoteConnectionClosed].contains(error) {
            return .unanswered(reason)
        }
        return .transportFailure(reason)
    }
}

extension Duration {
    var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
