import Domain
import Foundation
import Ingest
import Logging
import Metrics
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

/// The delivery of one destination (see ``UploadDestination``): recording events are spooled durably (fsync, on a
/// queue of their own, never on Swift's cooperative pool) under the destination's label, and a ``SegmentUploader``
/// sends them to its URL with its certificates. Only the sessions recorded for this destination ever reach it.
///
/// Run it with ``run()`` (a child task of its owner). ``close()`` says no new session will come: once the sessions
/// being written are handed over, the events end and `run()` returns when everything is delivered or given up.
/// ``stop()`` makes `run()` return at once (what is left stays in the spool, for the next start).
///
/// Between the media thread and the spool the events wait in a stream the media thread never blocks on. Its bound is
/// the spool's pace: it holds what the spool has not written yet (a few segments unless the disk stalls;
/// ``pendingEvents`` shows it). An event that comes after the stream ended (a session still writing past
/// ``sessionWriteLimit`` after `close()`) is not silently dropped: it is logged and counted as lost.
public final class DestinationUpload: Sendable {
    public let uploader: SegmentUploader
    private let stream: AsyncStream<IngestEvent>
    private let events: AsyncStream<IngestEvent>.Continuation
    private let spoolFailed: @Sendable (_ session: SessionNumber, any Error) -> Void
    private let writing = Mutex<(count: Int, idle: Latch)>((0, { let idle = Latch(); idle.open(); return idle }()))
    private let closed = Latch()
    private let stopped = Latch()
    /// Events handed over and not yet spooled.
    private let queued = Atomic<Int>(0)

    /// The spool label of the destination.
    public var destination: String { uploader.endpoint.connection }

    /// `spoolFailed` hears of every event the spool could not take (a full disk): the recording of that session has
    /// a hole now, so its owner ends it (End) and begins anew once the spool takes objects again.
    public init(uploader: SegmentUploader, spoolFailed: @escaping @Sendable (_ session: SessionNumber, any Error) -> Void = { _, _ in }) {
        self.uploader = uploader
        self.spoolFailed = spoolFailed
        (stream, events) = AsyncStream.makeStream(of: IngestEvent.self)
    }

    /// From the media thread: returns at once.
    public func handle(_ event: RecordingEvent) {
        guard let mapped = IngestEvent(event) else { return }
        queued.add(1, ordering: .relaxed)
        if case .terminated = events.yield(mapped) {
            queued.subtract(1, ordering: .relaxed)
            lateEvent(mapped)
        }
    }

    /// A recording kept for the status page ended (nil: it produced nothing and is not kept): after its last object,
    /// through the same queue.
    public func recentFinished(session: SessionNumber, _ summary: RecentSummary?) {
        queued.add(1, ordering: .relaxed)
        let event = IngestEvent.recentFinished(session: session, summary)
        if case .terminated = events.yield(event) { queued.subtract(1, ordering: .relaxed) }
    }

    /// Events handed over and not yet spooled (for status and tests).
    public var pendingEvents: Int { queued.load(ordering: .relaxed) }

    /// A session for this destination began; its events follow until ``sessionWritten()``.
    public func sessionBegan() {
        writing.withLock { state in
            if state.count == 0 { state.idle = Latch() }
            state.count += 1
        }
    }

    /// A session for this destination finished writing (or was dropped): all its events were handed over.
    public func sessionWritten() {
        let idle = writing.withLock { state -> Latch? in
            guard state.count > 0 else { return nil }
            state.count -= 1
            return state.count == 0 ? state.idle : nil
        }
        idle?.open()
    }

    /// No new session will be recorded for this destination: ``run()`` returns once the sessions being written are
    /// handed over (at most ``sessionWriteLimit``) and everything is delivered or given up.
    public func close() { closed.open() }

    /// ``run()`` returns now: uploads in flight are cancelled, what is left stays in the spool. Events already handed
    /// over are still spooled.
    public func stop() {
        closed.open()
        stopped.open()
    }

    public var isClosed: Bool { closed.isOpen }

    /// How long ``close()`` waits for sessions still being written: a session whose ``sessionWritten()`` never comes
    /// (a recorder stuck on a dead source) must not hold a Deallocate's delivery or a shutdown forever.
    public static let sessionWriteLimit = Duration.seconds(15)

    /// Spools and uploads until closed and drained, or stopped (or the task is cancelled).
    public func run() async -> UploadSummary {
        await withTaskGroup(of: UploadSummary?.self) { group in
            group.addTask { await self.spoolEvents(); return nil }
            group.addTask { await self.endEventsOnceClosed(); return nil }
            group.addTask {
                await withTaskGroup(of: UploadSummary?.self) { uploading in
                    uploading.addTask { await self.uploader.run() }
                    uploading.addTask { await self.stopped.wait(); return nil }
                    var summary: UploadSummary?
                    for await result in uploading {
                        if let result { summary = result }
                        uploading.cancelAll()
                    }
                    return summary
                }
            }
            var summary = UploadSummary(delivered: 0, retries: 0, complete: false)
            for await result in group {
                if let result { summary = result }
            }
            return summary
        }
    }

    /// Hands each event to the spool on a queue of its own, until the events end; then lets the uploader finish.
    /// Not cancelled by ``stop()``: what was handed over is written before the delivery ends.
    private func spoolEvents() async {
        let spoolQueue = DispatchQueue(label: "pushav-spool-\(destination)")
        let uploader = self.uploader
        let spoolFailed = self.spoolFailed
        for await event in stream {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                spoolQueue.async {
                    // A failure is logged and counted by the uploader, and the object is reported lost.
                    do { try uploader.handle(event) } catch { spoolFailed(event.session, error) }
                    done.resume()
                }
            }
            queued.subtract(1, ordering: .relaxed)
        }
        uploader.finishWhenDrained()
    }

    /// After ``close()``: waits for the sessions being written (at most ``sessionWriteLimit``), then ends the events.
    private func endEventsOnceClosed() async {
        await closed.wait()
        guard !Task.isCancelled else { return }
        let written = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.sessionsWritten(); return true }
            group.addTask { try? await Task.sleep(for: Self.sessionWriteLimit); return false }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
        if !written && !stopped.isOpen {
            uploader.logger.warning("sessions still being written after \(Self.sessionWriteLimit); delivering what was handed over",
                                    metadata: ["destination": "\(destination)"])
        }
        events.finish()
    }

    private func sessionsWritten() async {
        while !Task.isCancelled, let idle = writing.withLock({ $0.count > 0 ? $0.idle : nil }) {
            await idle.wait()
        }
    }

    /// An event after the events ended: its object cannot be spooled any more. Logged and counted as lost.
    private func lateEvent(_ event: IngestEvent) {
        switch event {
        case .header(let session, let track, _):
            uploader.noteLost(.header(session: session, track: track), reason: "handed over after its delivery closed")
        case .segment(let session, let track, let number, _):
            uploader.noteLost(UploadObject(session: session, track: track, number: number),
                              reason: "handed over after its delivery closed")
        case .manifest(let session, let isFinal, _):
            uploader.noteLost(.manifest(session: session, isFinal: isFinal), reason: "handed over after its delivery closed")
        case .chunk, .sessionFinished, .sessionAbandoned, .recentFinished:
            break  // a chunk's bytes come again in its segment; the session marks carry no object
        }
    }
}
