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
    private let writing = Mutex<(count: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))

    public init(uploader: SegmentUploader) {
        self.uploader = uploader
        let (stream, continuation) = AsyncStream.makeStream(of: IngestEvent.self)
        events = continuation
        let spoolQueue = DispatchQueue(label: "pushav-spool-\(uploader.endpoint.connection)")
        feeding = Task {
            for await event in stream {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    spoolQueue.async {
                        // A failure is logged and counted by the uploader, and the object is reported lost.
                        try? uploader.handle(event)
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

    /// Returns once no session of this connection is being written.
    private func sessionsWritten() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = writing.withLock { state in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

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
