import AsyncHTTPClient
import Domain
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Synchronization

// What the recording hands the uploader: segments and headers, whole or as they are written; what it could not
// spool; the end of its input.
extension SegmentUploader {
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
}
