import Foundation
import Ingest
import Logging
import Recorder
import Synchronization

extension IngestEvent {
    /// What the uploader needs of a recording event; nil for the rest.
    public init?(_ event: RecordingEvent) {
        switch event {
        case .sessionStarted: return nil
        case .initSegment(let session, let track, _, let bytes): self = .header(session: session, track: track, bytes: bytes)
        case .chunk(let session, let track, let number, let bytes):
            self = .chunk(session: session, track: track, number: number, bytes: bytes)
        case .segmentFinished(let session, let track, let number, _, let bytes):
            self = .segment(session: session, track: track, number: number, bytes: bytes)
        case .manifest(let session, let isFinal, _, let bytes): self = .manifest(session: session, isFinal: isFinal, bytes: bytes)
        case .sessionFinished(let record): self = .sessionFinished(session: record.session)
        case .sessionAbandoned(let session, _): self = .sessionAbandoned(session: session)
        }
    }
}

/// One transport connection's delivery: recording events are spooled durably (fsync, on a queue of their own, never
/// on Swift's cooperative pool) and uploaded by a ``SegmentUploader`` to the connection's ingest URL.
///
/// Between the media thread and the spool the events wait in an unbounded stream: the media thread must never
/// block on disk, and what it hands over is at most what the spool has not yet written (a few segments unless the
/// disk stalls; `pendingEvents` shows it).
public final class ConnectionUpload: Sendable {
    public let uploader: SegmentUploader
    private let events: AsyncStream<IngestEvent>.Continuation
    private let feeding: Task<Void, Never>
    private let uploading: Task<UploadSummary, Never>
    /// Sessions begun and not yet finished writing: finishing waits for them, so a recording ended by Deallocate or
    /// Modify still hands its last segments over before the event stream closes.
    private let writing = Mutex<(count: Int, waiters: [CheckedContinuation<Void, Never>], gaveUp: Bool)>((0, [], false))

    /// `spoolFailed` hears of every event the spool could not take (a full disk): the recording of that session has
    /// a hole now, so its owner ends it (End) and begins anew once the spool takes objects again.
    public init(uploader: SegmentUploader, spoolFailed: @escaping @Sendable (_ session: Int, any Error) -> Void = { _, _ in }) {
        self.uploader = uploader
        let (stream, continuation) = AsyncStream.makeStream(of: IngestEvent.self)
        events = continuation
        let spoolQueue = DispatchQueue(label: "pushav-spool-\(uploader.endpoint.connection)")
        feeding = Task {
            for await event in stream {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    spoolQueue.async {
                        // A failure is logged and counted by the uploader, and the object is reported lost.
                        do { try uploader.handle(event) } catch { spoolFailed(event.session, error) }
                        done.resume()
                    }
                }
            }
        }
        uploading = Task { await uploader.run() }
    }

    /// From the media thread: returns at once.
    public func handle(_ event: RecordingEvent) {
        if let mapped = IngestEvent(event) { events.yield(mapped) }
    }

    /// A session of this connection began; its events follow until ``sessionWritten()``.
    public func sessionBegan() { writing.withLock { $0.count += 1 } }

    /// A session of this connection finished writing (or was dropped): all its events were handed over.
    public func sessionWritten() {
        let waiters = writing.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count = max(0, state.count - 1)
            guard state.count == 0 else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no session of this connection is being written, or after `limit`: a session whose ``sessionWritten()``
    /// never comes (a recorder stuck on a dead source) must not hold a Deallocate's delivery or a shutdown forever.
    private func sessionsWritten(within limit: Duration = ConnectionUpload.sessionWriteLimit) async {
        guard writing.withLock({ $0.count > 0 }) else { return }
        let timer = Task { [self] in
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled, stopWaitingForSessions() else { return }
            uploader.logger.warning("sessions still being written after \(limit); delivering what was handed over",
                                    metadata: ["connection": "\(uploader.endpoint.connection)"])
        }
        defer { timer.cancel() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = writing.withLock { state in
                if state.count == 0 || state.gaveUp { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Ends every wait for sessions being written (for good: later waits return at once); true if one was waiting.
    private func stopWaitingForSessions() -> Bool {
        let waiters = writing.withLock { state in
            state.gaveUp = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
        return !waiters.isEmpty
    }

    /// How long finishing waits for sessions still being written.
    public static let sessionWriteLimit = Duration.seconds(15)

    /// Spools what was handed over, then uploads until the spool is empty (or the retry budget gives up).
    public func finish() async -> UploadSummary {
        await sessionsWritten()
        events.finish()
        await feeding.value
        uploader.finishWhenDrained()
        return await uploading.value
    }

    /// Spools what was handed over and uploads until the spool is empty, but for at most `grace` after `stop` is
    /// requested (at once if `stop` is nil); what is left then stays in the spool for the next run.
    public func finish(grace: Duration, after stop: RecordingStop? = nil) async -> UploadSummary {
        await sessionsWritten()
        events.finish()
        await feeding.value
        uploader.finishWhenDrained()
        let uploading = self.uploading
        let stop = stop ?? { let now = RecordingStop(); now.request(); return now }()
        stop.whenRequested {
            Task {
                try? await Task.sleep(for: grace)
                uploading.cancel()  // no effect if everything was delivered in time
            }
        }
        return await uploading.value
    }
}
