import AsyncHTTPClient
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

    public init(delivered: Int, retries: Int, failure: String? = nil, complete: Bool) {
        self.delivered = delivered
        self.retries = retries
        self.failure = failure
        self.complete = complete
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
    let shared = Mutex(Shared())
    let newTracks: AsyncStream<String>
    let newTracksContinuation: AsyncStream<String>.Continuation
    let retriesCounter: Counter
    let deliveredCounter: Counter
    let failedGauge: Gauge
    let givenUpCounter: Counter
    let unconfirmedCounter: Counter
    let spoolReadFailuresCounter: Counter
    let spoolWriteFailuresCounter: Counter
    /// How many lost objects ``UploadSummary/lostObjects`` names (the count is kept in full).
    public static let lostObjectsNamed = 10

    struct Shared {
        var tracks: Set<String> = []
        var wakers: [String: AsyncStream<Void>.Continuation] = [:]
        var live: [String: LiveSegment] = [:]
        /// Streamed successfully before the spool finished writing them; marked delivered when they appear there.
        var deliveredLive: Set<UploadObject> = []
        var lastDelivered: [String: UploadObject] = [:]
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
        (newTracks, newTracksContinuation) = AsyncStream.makeStream(of: String.self)
        let dimensions = UploadDestination.metricDimensions(ofKey: endpoint.connection)
        retriesCounter = Counter(label: "pushav_upload_retries_total", dimensions: dimensions)
        deliveredCounter = Counter(label: "pushav_upload_delivered_total", dimensions: dimensions)
        failedGauge = Gauge(label: "pushav_upload_connection_failed", dimensions: dimensions)
        givenUpCounter = Counter(label: "pushav_upload_objects_given_up_total", dimensions: dimensions)
        unconfirmedCounter = Counter(label: "pushav_upload_objects_unconfirmed_total", dimensions: dimensions)
        spoolReadFailuresCounter = Counter(label: "pushav_spool_read_failures_total", dimensions: dimensions)
        spoolWriteFailuresCounter = Counter(label: "pushav_spool_write_failures_total", dimensions: dimensions)
    }

    // MARK: - Input

    /// Spools headers and finished segments (durably, before upload) and feeds chunks to live uploads.
    /// Call in recording order. When a header or segment cannot be spooled the error is logged, counted
    /// (`pushav_spool_write_failures_total`) and rethrown, and later events still work; the object is lost
    /// (``UploadSummary/lost``) unless a live upload of that segment was already under way and succeeds.
    public func handle(_ event: IngestEvent) throws {
        switch event {
        case .header(let session, let track, let bytes):
            try spoolWhole(bytes, as: .header(session: session, track: track))
        case .chunk(let session, let track, let number, let bytes):
            let object = UploadObject(session: session, track: track, number: number)
            let (segment, isNew) = shared.withLock { shared -> (LiveSegment, Bool) in
                if let open = shared.live[track], open.object == object { return (open, false) }
                // A segment ends with its `.segment` event, which closes its live upload; one still open here was
                // never finished (its session failed), so its upload is aborted rather than completed truncated.
                shared.live[track]?.abandon()
                let created = LiveSegment(object: object)
                shared.live[track] = created
                return (created, true)
            }
            segment.append(bytes)
            if isNew { wake(track) }
        case .segment(let session, let track, let number, let bytes):
            let object = UploadObject(session: session, track: track, number: number)
            let stored = Result { try spool.store(bytes, for: object, connection: endpoint.connection) }
            // A live upload of this segment ends with its last chunk whether or not the spool took it. Lanes claim a
            // live segment under the same lock, so `wasStreamed` tells whether that upload can still deliver it.
            let (open, streaming) = shared.withLock { shared -> (LiveSegment?, Bool) in
                guard let open = shared.live[track], open.object == object else { return (nil, false) }
                shared.live[track] = nil
                let streaming = open.wasStreamed
                if case .failure = stored, streaming { shared.unspooledStreaming.insert(object) }
                return (open, streaming)
            }
            open?.finish()
            if case .failure(let error) = stored {
                spoolWriteFailed(object, error: error, streaming: streaming)
                throw error
            }
            registerTrack(track)
            wake(track)
        case .manifest(let session, let isFinal, let bytes):
            try spoolWhole(bytes, as: .manifest(session: session, isFinal: isFinal))
        case .sessionAbandoned(let session):
            let open = shared.withLock { shared -> [LiveSegment] in
                let open = shared.live.values.filter { $0.object.session == session }
                for segment in open { shared.live[segment.object.track] = nil }
                return Array(open)
            }
            for segment in open { segment.abandon() }
            for segment in open { wake(segment.object.track) }
            try handle(.sessionFinished(session: session))
        case .recentFinished(let session, let summary):
            do {
                if let summary {
                    try spool.finishRecent(session, connection: endpoint.connection, ended: summary.ended, endReason: summary.endReason,
                                           triggerType: summary.triggerType, triggerOffset: summary.triggerOffset)
                } else {
                    try spool.forgetRecent(session, connection: endpoint.connection)
                }
            } catch {
                // Nothing is lost: the recording was delivered (or is queued); the page may miss it, or keep it longer.
                logger.warning("could not update session \(session)'s recent-recording entry", metadata: ["error": "\(error)"])
            }
        case .sessionFinished(let session):
            do {
                try spool.finishSession(session, connection: endpoint.connection)
            } catch {
                // Nothing is lost: the session's headers just stay spooled.
                logger.error("could not mark session \(session) finished in the spool", metadata: ["error": "\(error)"])
                throw error
            }
        }
    }

    /// Spools an object that is never streamed live (a header, a manifest) and wakes its lane.
    func spoolWhole(_ bytes: [UInt8], as object: UploadObject) throws {
        do {
            try spool.store(bytes, for: object, connection: endpoint.connection)
        } catch {
            spoolWriteFailed(object, error: error, streaming: false)
            throw error
        }
        registerTrack(object.track)
        wake(object.track)
    }

    /// ``handle(_:)`` for async callers: spooling fsyncs, so it runs on ``BlockingIO``.
    public func handle(_ event: IngestEvent) async throws {
        try await BlockingIO.run { try self.handle(event) }
    }

    func spoolWriteFailed(_ object: UploadObject, error: any Error, streaming: Bool) {
        spoolWriteFailuresCounter.increment()
        if streaming {
            logger.error("could not spool \(object); lost unless its live upload, under way, succeeds", metadata: [
                "connection": "\(endpoint.connection)", "error": "\(error)",
            ])
        } else {
            noteLost(object, reason: "could not be spooled: \(error)")
        }
    }

    /// Counts an object that will never be uploaded (logged, in ``UploadSummary/lost``).
    public func noteLost(_ object: UploadObject, reason: String) {
        shared.withLock { shared in
            shared.lost += 1
            if shared.lostObjects.count < Self.lostObjectsNamed { shared.lostObjects.append(object) }
        }
        logger.error("\(object) is lost: it will not be uploaded", metadata: [
            "connection": "\(endpoint.connection)", "reason": "\(reason)",
        ])
    }

    /// Makes ``run()`` return once every track has nothing left to send (or has given up). No events may follow:
    /// a segment still open (the recording stopped mid-segment) is abandoned and its streamed request aborted.
    public func finishWhenDrained() {
        let (wakers, open, registered) = shared.withLock { shared in
            shared.draining = true
            let open = Array(shared.live.values)
            shared.live.removeAll()
            return (Array(shared.wakers.values), open, shared.spooledTracksRegistered)
        }
        for segment in open { segment.abandon() }
        // The tracks waiting in the spool from before must have their lanes first (``registerSpooledTracks()`` ends
        // the stream itself once it has registered them).
        if registered { newTracksContinuation.finish() }
        for waker in wakers { waker.yield() }
    }

    /// Failed attempts so far (all tracks), for logs and tests.
    public var retryCount: Int { shared.withLock { $0.retries } }

    /// The latest delivery and the latest problem (see ``UploadActivity``).
    public var activity: UploadActivity { shared.withLock { $0.activity } }

    /// Whether anything waits for this connection (the transport model's BUSY).
    public func isBusy() -> Bool {
        let live = shared.withLock { !$0.live.isEmpty }
        return live || ((try? spool.isBusy(connection: endpoint.connection)) ?? true)
    }

    /// ``isBusy()`` for async callers (the spool query blocks on SQLite).
    public func isBusy() async -> Bool {
        (try? await BlockingIO.run { self.isBusy() }) ?? true
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

    func registerTrack(_ track: String) {
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

    func wake(_ track: String) {
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

    func budgetSpent(track: String, reason: String) {
        shared.withLock {
            $0.failure = "track \(track): retry budget spent: \(reason)"
            $0.noteProblem($0.failure!)
        }
        logger.error("retry budget spent; keeping the spool", metadata: ["track": "\(track)", "reason": "\(reason)"])
    }

    /// Counts and logs a spool read failure and carries out `decision` (a retry after its backoff, or giving up).
    /// False when the lane must stop.
    func spoolReadFailed(track: String, decision: UploadDecision, error: any Error) async -> Bool {
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
    func claimStreamableLiveSegment(track: String) -> (LiveSegment, AsyncThrowingStream<ByteBuffer, any Error>)? {
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
