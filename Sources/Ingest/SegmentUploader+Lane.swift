import AsyncHTTPClient
import Domain
import Foundation
import Logging
import NIOCore

// One upload lane per track, in three named steps: choose what goes next (`nextWork`: a header the ingest lost, the
// track's oldest spooled object, or the segment being recorded now), send it (`send`), and act on the state
// machine's decision (`settle`). The lane's own state is `Lane`; what lanes share is the uploader's `Shared`.
extension SegmentUploader {
    enum Work {
        case spooled(UploadObject, bytes: Int)
        case live(LiveSegment, body: AsyncThrowingStream<ByteBuffer, any Error>)

        var isLive: Bool { if case .live = self { true } else { false } }
    }

    /// What a lane does after a step.
    enum LaneStep<Value> {
        case proceed(Value)
        /// Start over with the next choice (something changed, or the lane was woken).
        case again
        /// The lane ends (its work is done, the retry budget is spent, or it was cancelled).
        case stop
    }

    /// One track's lane: its retry state machine and the header it must send again before the next segment.
    struct Lane {
        let track: TrackName
        var machine: UploadStateMachine
        var random = SystemRandomNumberGenerator()
        /// Set when a 412 said the ingest lost the session's header: sent before anything else of the track.
        var headerResend: UploadObject?
        var wakeups: AsyncStream<Void>.AsyncIterator
        /// Failed journal commits in a row of the object the lane is at (see ``journalDelivered(_:)``).
        var journalFailures = 0
        /// Whether the lane has chosen a spooled object yet: only its first can have been sent by an earlier delivery
        /// (a lane sends in order and commits each delivery before the next).
        var choseSpooledObject = false
    }

    /// Commits `object`'s delivery to the spool's journal. A failed commit is a fault, not silence: it is logged and
    /// counted (`pushav_spool_journal_failures_total`), and the object is kept in memory as delivered, so this process
    /// never sends it again (a send after a 2xx was PUT again within milliseconds, and a strict ingest refused the
    /// second header as a duplicate: issue 47). Returns whether the commit succeeded.
    func journalDelivered(_ object: UploadObject) async -> Bool {
        do {
            try await spool.markDelivered(connection: endpoint.connection, object: object)
            shared.withLock { _ = $0.deliveredUnjournalled.remove(object) }
            return true
        } catch {
            shared.withLock { _ = $0.deliveredUnjournalled.insert(object) }
            journalFailuresCounter.increment()
            logger.error("could not record a delivery in the spool's journal; this process will not send it again, and writes it again", metadata: [
                "object": "\(object)", "error": "\(error)",
            ])
            return false
        }
    }

    /// Commits again a delivery whose commit failed (the lane's next object): on success the lane moves on; on
    /// failure it waits (the state machine's backoff) and tries again — it never sends the object.
    private func journalAgain(_ object: UploadObject, lane: inout Lane) async -> LaneStep<Work> {
        if await journalDelivered(object) {
            lane.journalFailures = 0
            wakeDependents(of: object)
            return .again
        }
        lane.journalFailures += 1
        let delay = lane.machine.delay(afterJournalFailure: lane.journalFailures, using: &lane.random)
        return await pause(delay) ? .again : .stop
    }

    /// One track: strictly in order, never blocked by another track.
    func runLane(track: TrackName) async {
        let (wakeups, waker) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        shared.withLock { $0.wakers[track] = waker }
        var lane = Lane(track: track, machine: UploadStateMachine(policy: policy), wakeups: wakeups.makeAsyncIterator())
        while !Task.isCancelled {
            if shared.withLock({ $0.failure }) != nil { return }
            let work: Work
            switch await nextWork(&lane) {
            case .proceed(let next): work = next
            case .again: continue
            case .stop: return
            }
            let object: UploadObject
            let outcome: UploadOutcome
            switch await send(work, lane: &lane) {
            case .proceed(let sent): (object, outcome) = sent
            case .again: continue
            case .stop: return
            }
            if !(await settle(object, outcome: outcome, live: work.isLive, lane: &lane)) { return }
        }
    }

    /// What the lane sends next: the lost header first, then the track's oldest spooled object (recording on the way
    /// what was streamed live or given up before the spool had it), then the segment being recorded now; otherwise
    /// it waits to be woken, or ends once the uploader drains and nothing is left.
    private func nextWork(_ lane: inout Lane) async -> LaneStep<Work> {
        let connection = endpoint.connection
        do {
            if let header = lane.headerResend {
                if let entry = try await spool.entry(connection: connection, object: header) {
                    return .proceed(.spooled(header, bytes: entry.bytes))
                }
                // Its segment is still pending, so the header was not pruned or evicted: it was given up (or dropped
                // as unreadable at start-up) and will not be sent again; a 412 for its segments is final.
                lane.machine.headerIsGone(header)
                lane.headerResend = nil
            }
            if let entry = try await spool.nextPending(connection: connection, track: lane.track) {
                let delivered = shared.withLock { shared in
                    // Streamed live before the spool had it, or delivered with a commit that failed: never sent again.
                    if shared.deliveredLive.remove(entry.object) != nil { shared.deliveredUnjournalled.insert(entry.object) }
                    return shared.deliveredUnjournalled.contains(entry.object)
                }
                if delivered { return await journalAgain(entry.object, lane: &lane) }
                if let reason = shared.withLock({ $0.givenUpUnrecorded[entry.object] }) {
                    try await spool.markGivenUp(connection: connection, object: entry.object, reason: reason)
                    shared.withLock { _ = $0.givenUpUnrecorded.removeValue(forKey: entry.object) }
                    wakeDependents(of: entry.object)
                    return .again
                }
                if try await spool.waitsForOtherTracks(connection: connection, object: entry.object) {
                    // Interface-2 order across lanes; the lane that delivers what this waits for wakes it.
                    _ = await lane.wakeups.next()
                    return .again
                }
                if !lane.choseSpooledObject {
                    lane.choseSpooledObject = true
                    if entry.createdAt < startedAt { lane.machine.mayHaveArrivedBefore(entry.object) }
                }
                return .proceed(.spooled(entry.object, bytes: entry.bytes))
            }
            if let (live, body) = claimStreamableLiveSegment(track: lane.track) {
                return .proceed(.live(live, body: body))
            }
            let done = shared.withLock { $0.draining && $0.live[lane.track] == nil }
            if done { return .stop }
            _ = await lane.wakeups.next()
            return .again
        } catch {
            let decision = lane.machine.decide(afterSpoolFailure: "spool journal failed: \(error)", using: &lane.random)
            return await spoolReadFailed(track: lane.track, decision: decision, error: error) ? .again : .stop
        }
    }

    /// Sends `work` and returns what the ingest answered. A spooled object evicted under our feet is skipped; one
    /// still journalled but unreadable is a failed attempt the state machine decides on.
    private func send(_ work: Work, lane: inout Lane) async -> LaneStep<(UploadObject, UploadOutcome)> {
        switch work {
        case .spooled(let object, let size):
            let bytes: [UInt8]
            do {
                bytes = try await spool.bytes(connection: endpoint.connection, object: object)
            } catch {
                let row: Result<SpoolEntry?, any Error>
                do { row = .success(try await spool.entry(connection: endpoint.connection, object: object)) } catch { row = .failure(error) }
                if SpoolReadFailure(rowAfterwards: row) == .evicted {
                    // An eviction removed it (journal row first, then the file): nothing to send.
                    logger.warning("spooled object evicted before upload; moving on", metadata: ["object": "\(object)"])
                    lane.headerResend = nil
                    return .again
                }
                // Still journalled but unreadable (file gone, damaged, I/O error): a failed attempt.
                let decision = lane.machine.decide(afterSpoolFailure: "spooled file \(object) unreadable: \(error)",
                                                   using: &lane.random)
                return await spoolReadFailed(track: lane.track, decision: decision, error: error) ? .again : .stop
            }
            // No journal commit per attempt (each one fsyncs the spool's WAL): the state machine counts attempts in
            // memory, and no decision reads a stored count.
            let outcome = await put(object, body: .bytes(ByteBuffer(bytes: bytes)), timeout: policy.deadline(forBytes: size))
            return .proceed((object, outcome))
        case .live(let live, let body):
            let outcome = await put(live.object, body: .stream(body, length: .unknown),
                                    timeout: segmentDuration * 2 + policy.deadline(forBytes: 0))
            return .proceed((live.object, outcome))
        }
    }

    /// Acts on the state machine's decision about `outcome`: records a delivery, waits before a retry (sending the
    /// header again first after a 412), gives the object up, or ends the lane when the retry budget is spent.
    /// Returns false when the lane ends.
    private func settle(_ object: UploadObject, outcome: UploadOutcome, live isLive: Bool, lane: inout Lane) async -> Bool {
        let track = lane.track
        let decision = lane.machine.decide(after: outcome, for: object, using: &lane.random)
        let unspooled = isLive && shared.withLock { $0.unspooledStreaming.remove(object) } != nil
        if unspooled {
            // The spool could not take this segment: this upload was its only chance.
            if decision == .delivered {
                logger.warning("\(object) was not spooled, but its live upload delivered it")
            } else if case .deliveredUnconfirmed = decision {
                logger.warning("\(object) was not spooled; its live upload most likely delivered it (unconfirmed)")
            } else if case .giveUp = decision {
                // Counted and logged as given up below: the ingest refused it, a spooled copy would not have helped.
            } else {
                noteLost(object, reason: "could not be spooled, and its live upload failed: \(outcome)")
            }
        }
        switch decision {
        case .delivered, .deliveredUnconfirmed:
            if case .deliveredUnconfirmed(let reason) = decision { noteUnconfirmed(object, reason: reason, outcome: outcome) }
            shared.withLock { shared in
                shared.lastDelivered[track] = object
                shared.delivered += 1
                shared.activity.lastDelivery = Date()
                // Matched (and marked delivered) when the spool lists it; a segment it could not take never appears.
                if isLive, !unspooled { shared.deliveredLive.insert(object) }
            }
            deliveredCounter.increment()
            authenticationAccepted()
            if !isLive {
                // A failed commit is kept in memory and written again when the lane meets the object next.
                _ = await journalDelivered(object)
            }
            wakeDependents(of: object)
            if lane.headerResend == object { lane.headerResend = nil }
            logger.debug("delivered", metadata: ["object": "\(object)", "live": "\(isLive)"])
            return true
        case .retry(let delay):
            noteRetry(object, outcome: outcome, delay: delay)
            await spool.refreshMetrics()
            return await pause(delay)
        case .resendHeader(let delay):
            noteRetry(object, outcome: outcome, delay: delay)
            await spool.refreshMetrics()
            lane.headerResend = .header(session: object.session, track: object.track)
            shared.withLock { $0.lastDelivered[track] = nil }
            return await pause(delay)
        case .authenticationRefused(let delay, let reason):
            noteRetry(object, outcome: outcome, delay: delay)
            authenticationRefused(reason: reason)
            await spool.refreshMetrics()
            return await pause(delay)
        case .giveUp(let reason):
            await giveUp(object, reason: reason, outcome: outcome, recordWhenSpooled: isLive && !unspooled)
            lane.headerResend = nil
            wakeDependents(of: object)
            return true
        case .budgetSpent(let reason):
            budgetSpent(track: track, reason: reason)
            return false
        }
    }
}
