import Foundation
import Hummingbird
import Logging
import Synchronization
import TransportModel

/// `GET /v1/cameras/{camera}/events`: the cluster's PushTransportBegin/End events as Server-Sent Events, as the
/// caller's fabric may see them.
///
/// The stream opens with the comment `: subscribed` (events from then on are delivered; there is no replay), then
/// one frame per event: `id: <n>` (1, 2, … per stream), `event: PushTransportBegin|PushTransportEnd`, `data: <the
/// event as JSON>`. An idle stream sends `: keep-alive` every `keepAlive`; a failed write ends the subscription.
/// It ends when the subscriber goes away or the cluster finishes its subscriptions (shutdown).
///
/// Fabric filtering: an event is delivered when its connection belongs to the caller's fabric. A connection's
/// fabric is looked up when the event arrives; an End often arrives after its connection was deallocated (the
/// cut that ended it), so the fabric seen at Begin, or at subscription for recordings already running, is kept.
struct TransportEventStream: Sendable {
    let transport: PushAVStreamTransportServer
    let fabric: FabricIndex
    let logger: Logger
    let keepAlive: Duration

    /// Most frames waiting for a slow subscriber; past this the stream is closed (logged), never silently thinned.
    static let maxPendingFrames = 1024

    func response() async -> Response {
        // Subscribe before answering, so every event after the response starts is seen.
        let events = await transport.events()
        var owners: [UInt16: FabricIndex] = [:]
        for connection in await transport.allConnections() { owners[connection.connectionID] = connection.fabricIndex }
        let initialOwners = owners
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await stream(events, owners: initialOwners, to: &writer)
        })
    }

    private final class StreamFlags: Sendable {
        /// A keep-alive is queued and not yet written.
        let keepAlivePending = Atomic<Bool>(false)
        /// The subscriber fell more than `maxPendingFrames` behind.
        let overflowed = Atomic<Bool>(false)
    }

    private enum Item: Sendable {
        case event(PushAVStreamTransportEvent)
        case keepAlive
    }

    private func stream(
        _ events: AsyncStream<PushAVStreamTransportEvent>, owners initialOwners: [UInt16: FabricIndex],
        to writer: inout any ResponseBodyWriter
    ) async throws {
        let (items, itemSink) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .bufferingOldest(Self.maxPendingFrames))
        let flags = StreamFlags()
        var owners = initialOwners
        var nextID = 1
        logger.debug("event subscriber connected")
        defer { logger.debug("event subscriber gone") }

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    if case .dropped = itemSink.yield(.event(event)) {
                        flags.overflowed.store(true, ordering: .relaxed)
                        break
                    }
                }
                itemSink.finish()
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: keepAlive)
                    // At most one keep-alive waits: a stalled subscriber does not pile them up.
                    if !flags.keepAlivePending.exchange(true, ordering: .relaxed) { itemSink.yield(.keepAlive) }
                }
            }
            defer { group.cancelAll() }

            try await writer.write(ByteBuffer(string: ": subscribed\n\n"))
            for await item in items {
                switch item {
                case .keepAlive:
                    flags.keepAlivePending.store(false, ordering: .relaxed)
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                case .event(let event):
                    guard await isVisible(event, owners: &owners) else { continue }
                    try await writer.write(ByteBuffer(string: try Self.frame(event, id: nextID)))
                    nextID += 1
                }
            }
        }
        if flags.overflowed.load(ordering: .relaxed) {
            logger.warning("event subscriber too slow: more than \(Self.maxPendingFrames) events waiting; stream closed, the subscriber must reconnect")
        }
        try await writer.finish(nil)
    }

    /// Whether the caller's fabric owns the event's connection; remembers owners across a recording.
    private func isVisible(_ event: PushAVStreamTransportEvent, owners: inout [UInt16: FabricIndex]) async -> Bool {
        let connectionID = event.connectionID
        switch event {
        case .pushTransportBegin:
            if let owner = await transport.storedConnection(connectionID)?.fabricIndex { owners[connectionID] = owner }
            guard let owner = owners[connectionID] else {
                logger.info("PushTransportBegin of connection \(connectionID) not delivered: the connection is gone and its fabric unknown")
                return false
            }
            return owner == fabric
        case .pushTransportEnd:
            // The owner seen at Begin wins: the ID may already belong to a new connection.
            let owner: FabricIndex?
            if let seen = owners.removeValue(forKey: connectionID) {
                owner = seen
            } else {
                owner = await transport.storedConnection(connectionID)?.fabricIndex
            }
            guard let owner else {
                logger.info("PushTransportEnd of connection \(connectionID) not delivered: the connection is gone and its fabric unknown")
                return false
            }
            return owner == fabric
        }
    }

    /// One SSE frame: `id`, `event`, one `data` line of JSON (JSON never contains a raw newline).
    static func frame(_ event: PushAVStreamTransportEvent, id: Int) throws -> String {
        let encoder = JSONResponse.encoder()
        let (name, data): (String, Data) = switch event {
        case .pushTransportBegin(let begin): ("PushTransportBegin", try encoder.encode(begin))
        case .pushTransportEnd(let end): ("PushTransportEnd", try encoder.encode(end))
        }
        return "id: \(id)\nevent: \(name)\ndata: \(String(decoding: data, as: UTF8.self))\n\n"
    }
}
