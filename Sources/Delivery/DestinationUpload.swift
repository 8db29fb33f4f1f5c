import ConcurrencyPrimitives
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
/// Run it with ``run()`` (a child task of its owner). ``close(recorderCatchesUp:)`` says no new session will come:
/// once the sessions it owes are handed over (``DeliveryLifecycle``), the events end and `run()` returns when
/// everything is delivered or given up.
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
    /// What it owes and when its events end (see ``DeliveryLifecycle``); every input goes through ``feed(_:)``.
    private let lifecycle = Mutex(DeliveryLifecycle())
    /// Opens once the recorder applied a desired state without this destination (set by ``close(recorderCatchesUp:)``).
    private let recorderCatchUp = Mutex<Latch?>(nil)
    private let tickets = Atomic<Int>(0)
    private let closed = Latch()
    private let eventsEnded = Latch()
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

    /// The recorder asks for a Begin recorded for this destination (on the media thread, before the cluster answers):
    /// from now on the destination owes that session's events. Answer with ``beginAccepted(_:session:)`` or
    /// ``beginRefused(_:)``.
    public func beginAsked() -> DeliveryLifecycle.Ticket {
        let ticket = DeliveryLifecycle.Ticket(tickets.add(1, ordering: .relaxed).newValue)
        feed(.beginAsked(ticket))
        return ticket
    }

    /// The cluster accepted the Begin as `session`; its events follow until ``sessionWritten(_:)``.
    public func beginAccepted(_ ticket: DeliveryLifecycle.Ticket, session: SessionNumber) {
        feed(.beginAccepted(ticket, session))
    }

    /// The cluster refused the Begin: nothing is recorded for it.
    public func beginRefused(_ ticket: DeliveryLifecycle.Ticket) { feed(.beginRefused(ticket)) }

    /// Session `session` finished writing (or was dropped, or its Begin withdrawn): all its events were handed over.
    public func sessionWritten(_ session: SessionNumber) { feed(.sessionWritten(session)) }

    /// No new session will be recorded for this destination once the recorder caught up (`recorderCatchesUp` opens
    /// when it applied a state without this destination; nil: it already has, or there is no recorder). ``run()``
    /// returns once the sessions owed are handed over (at most ``sessionWriteLimit``) and everything is delivered or
    /// given up.
    public func close(recorderCatchesUp: Latch? = nil) {
        if let recorderCatchesUp { recorderCatchUp.withLock { $0 = $0 ?? recorderCatchesUp } }
        feed(.closed(recorderCaughtUp: recorderCatchesUp == nil || recorderCatchesUp?.isOpen == true))
    }

    /// ``run()`` returns now: uploads in flight are cancelled, what is left stays in the spool. Events already handed
    /// over, and those of sessions still owed (at most ``sessionWriteLimit``), are still spooled.
    public func stop() {
        feed(.stopped)
        stopped.open()
    }


    /// How long ``close(recorderCatchesUp:)`` waits for sessions still owed: a session whose end never comes (a
    /// recorder stuck on a dead source) must not hold a Deallocate's delivery or a shutdown forever.
    public static let sessionWriteLimit = Duration.seconds(15)

    private func feed(_ input: DeliveryLifecycle.Input) {
        let actions = lifecycle.withLock { $0.handle(input) }
        for action in actions {
            switch action {
            case .startWriteLimit:
                closed.open()
            case .endEvents:
                events.finish()
                eventsEnded.open()
            case .warnStillOwed(let asked, let writing, let caughtUp):
                uploader.logger.warning("sessions still owed after \(Self.sessionWriteLimit); delivering what was handed over", metadata: [
                    "destination": "\(destination)", "beginsUnanswered": "\(asked.count)",
                    "sessionsWriting": "\(writing.map(\.description).joined(separator: ","))",
                    "recorderCaughtUp": "\(caughtUp)",
                ])
            }
        }
    }

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

    /// After ``close(recorderCatchesUp:)``: tells the lifecycle when the recorder caught up and when the write limit
    /// passed, until the events ended.
    private func endEventsOnceClosed() async {
        await closed.wait()
        guard !Task.isCancelled else { return }
        await withTaskGroup(of: Void.self) { group in
            if let catchUp = recorderCatchUp.withLock({ $0 }) {
                group.addTask {
                    await catchUp.wait()
                    if catchUp.isOpen { self.feed(.recorderCaughtUp) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: Self.sessionWriteLimit)
                if !Task.isCancelled { self.feed(.writeLimitExpired) }
            }
            await eventsEnded.wait()
            group.cancelAll()
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
