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
    /// Set when authentication kept failing (the connection is marked failed) or a track spent its retry budget.
    public var failure: String?
    /// True when nothing is left in the spool for this connection.
    public var complete: Bool
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
    private let client: HTTPClient
    private let logger: Logger
    private let shared = Mutex(Shared())
    private let newTracks: AsyncStream<String>
    private let newTracksContinuation: AsyncStream<String>.Continuation
    private let retriesCounter: Counter
    private let deliveredCounter: Counter
    private let failedGauge: Gauge

    private struct Shared {
        var tracks: Set<String> = []
        var wakers: [String: AsyncStream<Void>.Continuation] = [:]
        var live: [String: LiveSegment] = [:]
        /// Streamed successfully before the spool finished writing them; marked delivered when they appear there.
        var deliveredLive: Set<UploadObject> = []
        var lastDelivered: [String: UploadObject] = [:]
        var draining = false
        var failure: String?
        var delivered = 0
        var retries = 0
    }

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
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        (newTracks, newTracksContinuation) = AsyncStream.makeStream(of: String.self)
        let dimensions = [("connection", endpoint.connection)]
        retriesCounter = Counter(label: "pushav_upload_retries_total", dimensions: dimensions)
        deliveredCounter = Counter(label: "pushav_upload_delivered_total", dimensions: dimensions)
        failedGauge = Gauge(label: "pushav_upload_connection_failed", dimensions: dimensions)
        for track in try spool.tracks(connection: endpoint.connection) { registerTrack(track) }
    }

    // MARK: - Input

    /// Spools headers and finished segments (durably, before upload) and feeds chunks to live uploads.
    /// Call in recording order.
    public func handle(_ event: IngestEvent) throws {
        switch event {
        case .header(let session, let track, let bytes):
            try spool.store(bytes, for: .header(session: session, track: track), connection: endpoint.connection)
            registerTrack(track)
            wake(track)
        case .chunk(let session, let track, let number, let bytes):
            let object = UploadObject(session: session, track: track, number: number)
            let (segment, isNew) = shared.withLock { shared -> (LiveSegment, Bool) in
                if let open = shared.live[track], open.object == object { return (open, false) }
                shared.live[track]?.finish()
                let created = LiveSegment(object: object)
                shared.live[track] = created
                return (created, true)
            }
            segment.append(bytes)
            if isNew { wake(track) }
        case .segment(let session, let track, let number, let bytes):
            let object = UploadObject(session: session, track: track, number: number)
            try spool.store(bytes, for: object, connection: endpoint.connection)
            let open = shared.withLock { shared -> LiveSegment? in
                guard let open = shared.live[track], open.object == object else { return nil }
                shared.live[track] = nil
                return open
            }
            open?.finish()
            registerTrack(track)
            wake(track)
        case .sessionFinished(let session):
            try spool.finishSession(session, connection: endpoint.connection)
        }
    }

    /// Makes ``run()`` return once every track has nothing left to send (or has given up). No events may follow:
    /// a segment still open (the recording stopped mid-segment) is abandoned and its streamed request aborted.
    public func finishWhenDrained() {
        let (wakers, open) = shared.withLock { shared in
            shared.draining = true
            let open = Array(shared.live.values)
            shared.live.removeAll()
            return (Array(shared.wakers.values), open)
        }
        for segment in open { segment.abandon() }
        newTracksContinuation.finish()
        for waker in wakers { waker.yield() }
    }

    /// Failed attempts so far (all tracks), for logs and tests.
    public var retryCount: Int { shared.withLock { $0.retries } }

    /// Whether anything waits for this connection (the transport model's BUSY).
    public func isBusy() -> Bool {
        let live = shared.withLock { !$0.live.isEmpty }
        return live || ((try? spool.isBusy(connection: endpoint.connection)) ?? true)
    }

    // MARK: - Running

    /// Uploads until ``finishWhenDrained()`` was called and everything is delivered, or the task is cancelled.
    /// Shuts the HTTP client down before returning.
    public func run() async -> UploadSummary {
        await withTaskGroup(of: Void.self) { group in
            for await track in newTracks {
                group.addTask { await self.runLane(track: track) }
            }
            await group.waitForAll()
        }
        try? await client.shutdown()
        let complete = !((try? spool.isBusy(connection: endpoint.connection)) ?? true)
        return shared.withLock { UploadSummary(delivered: $0.delivered, retries: $0.retries, failure: $0.failure, complete: complete) }
    }

    private func registerTrack(_ track: String) {
        let isNew = shared.withLock { shared -> Bool in
            guard !shared.tracks.contains(track) else { return false }
            shared.tracks.insert(track)
            return true
        }
        if isNew { newTracksContinuation.yield(track) }
    }

    private func wake(_ track: String) {
        _ = shared.withLock { $0.wakers[track] }?.yield()
    }

    private enum Work {
        case spooled(UploadObject, bytes: Int)
        case live(LiveSegment)
    }

    /// One track: strictly in order, never blocked by another track.
    private func runLane(track: String) async {
        let connection = endpoint.connection
        let (wakeups, waker) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        shared.withLock { $0.wakers[track] = waker }
        var wakeIterator = wakeups.makeAsyncIterator()
        var machine = UploadStateMachine(policy: policy)
        var random = SystemRandomNumberGenerator()
        var headerResend: UploadObject?
        while !Task.isCancelled {
            if shared.withLock({ $0.failure }) != nil { return }
            let work: Work
            do {
                if let header = headerResend, let entry = try spool.entry(connection: connection, object: header) {
                    work = .spooled(header, bytes: entry.bytes)
                } else if let entry = try spool.nextPending(connection: connection, track: track) {
                    headerResend = nil
                    let alreadyStreamed = shared.withLock { $0.deliveredLive.remove(entry.object) != nil }
                    if alreadyStreamed {
                        try spool.markDelivered(connection: connection, object: entry.object)
                        continue
                    }
                    work = .spooled(entry.object, bytes: entry.bytes)
                } else if let live = streamableLiveSegment(track: track) {
                    work = .live(live)
                } else {
                    let done = shared.withLock { $0.draining && $0.live[track] == nil }
                    if done { return }
                    _ = await wakeIterator.next()
                    continue
                }
            } catch {
                logger.error("spool read failed; retrying", metadata: ["track": "\(track)", "error": "\(error)"])
                try? await Task.sleep(for: policy.initialBackoff)
                continue
            }

            let object: UploadObject
            let outcome: UploadOutcome
            switch work {
            case .spooled(let spooled, let size):
                object = spooled
                guard let bytes = try? spool.bytes(connection: connection, object: spooled) else {
                    // Only after an eviction removed it under our feet: nothing left to send for this object.
                    logger.error("spooled file unreadable (evicted?); moving on", metadata: ["object": "\(spooled)"])
                    headerResend = nil
                    continue
                }
                try? spool.recordAttempt(connection: connection, object: spooled)
                outcome = await put(spooled, body: .bytes(ByteBuffer(bytes: bytes)), timeout: policy.deadline(forBytes: size))
            case .live(let live):
                object = live.object
                outcome = await put(live.object, body: .stream(live.makeBody(), length: .unknown),
                                    timeout: segmentDuration * 2 + policy.deadline(forBytes: 0))
            }

            switch machine.decide(after: outcome, for: object, using: &random) {
            case .delivered:
                let isLive = if case .live = work { true } else { false }
                shared.withLock { shared in
                    shared.lastDelivered[track] = object
                    shared.delivered += 1
                    if isLive { shared.deliveredLive.insert(object) }
                }
                deliveredCounter.increment()
                if !isLive {
                    try? spool.markDelivered(connection: connection, object: object)
                }
                if headerResend == object { headerResend = nil }
                logger.debug("delivered", metadata: ["object": "\(object)", "live": "\(isLive)"])
            case .retry(let delay):
                noteRetry(object, outcome: outcome, delay: delay)
                if !(await pause(delay)) { return }
            case .resendHeader(let delay):
                noteRetry(object, outcome: outcome, delay: delay)
                headerResend = .header(session: object.session, track: object.track)
                shared.withLock { $0.lastDelivered[track] = nil }
                if !(await pause(delay)) { return }
            case .connectionFailed(let reason):
                shared.withLock { $0.failure = "connection \(connection) failed: \(reason)" }
                failedGauge.record(1)
                logger.error("upload connection failed: authentication refused repeatedly; keeping the spool", metadata: [
                    "connection": "\(connection)", "url": "\(endpoint.url)", "reason": "\(reason)",
                ])
                finishWhenDrained()
                return
            case .budgetSpent(let reason):
                shared.withLock { $0.failure = "track \(track): retry budget spent: \(reason)" }
                logger.error("retry budget spent; keeping the spool", metadata: ["track": "\(track)", "reason": "\(reason)"])
                return
            }
        }
    }

    /// A live segment may be streamed only when it directly follows what this track delivered last.
    private func streamableLiveSegment(track: String) -> LiveSegment? {
        shared.withLock { shared in
            guard let live = shared.live[track], !live.wasStreamed,
                  let predecessor = live.object.predecessor, shared.lastDelivered[track] == predecessor
            else { return nil }
            return live
        }
    }

    private func noteRetry(_ object: UploadObject, outcome: UploadOutcome, delay: Duration) {
        shared.withLock { $0.retries += 1 }
        retriesCounter.increment()
        spool.refreshMetrics()
        logger.warning("upload failed; will retry", metadata: [
            "object": "\(object)", "outcome": "\(outcome)", "delay": "\(delay)",
        ])
    }

    /// Sleeps; false when cancelled.
    private func pause(_ delay: Duration) async -> Bool {
        guard delay > .zero else { return !Task.isCancelled }
        do {
            try await Task.sleep(for: delay)
            return true
        } catch {
            return false
        }
    }

    private func put(_ object: UploadObject, body: HTTPClientRequest.Body, timeout: Duration) async -> UploadOutcome {
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
            return .transportFailure(String(describing: error))
        }
    }
}

extension Duration {
    var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
