import Foundation
import Hummingbird
import OpenAPIRuntime
import Logging
import Synchronization
import TransportModel

/// `GET /v1/cameras/{camera}/events`: the cluster's PushTransportBegin/End events as Server-Sent Events, as the
/// caller's fabric may see them.
///
/// The stream opens with the comment `: subscribed`, then one frame per event: `id: <event number>` (the cluster's
/// event number: it only increases, across restarts too), `event: PushTransportBegin|PushTransportEnd`, `data: <the
/// event as JSON>`. Without `Last-Event-ID` or `?since=N` it delivers events from then on. With either (the header
/// wins: it is where a reconnecting EventSource left off) it first replays every logged event numbered above N, then
/// follows live: the subscription is made before the log is read, and live events numbered at or below the last
/// replayed one are skipped, so nothing falls between replay and live and nothing comes twice. An idle stream sends
/// `: keep-alive` every `keepAlive`; a failed write ends the subscription. It ends when the subscriber goes away or
/// the cluster finishes its subscriptions (shutdown).
///
/// Fabric filtering: an event is delivered when its connection belonged to the caller's fabric when the event was
/// emitted (the logged event carries that fabric, so an End after a deallocation keeps its owner).
struct TransportEventStream: Sendable {
    let transport: PushAVStreamTransportServer
    let fabric: FabricIndex
    let logger: Logger
    let keepAlive: Duration
    /// Runs between subscribing and reading the log (tests use it to emit events in that window).
    var afterSubscribing: @Sendable () async -> Void = {}

    /// Most frames waiting for a slow subscriber; past this the stream is closed (logged), never silently thinned.
    static let maxPendingFrames = 1024
    /// Log entries read per query while replaying.
    static let replayPage = EventLogQuery.maxLimit

    /// The stream; `after` set replays the log above that number first.
    func body(after: UInt64?) async throws -> HTTPBody {
        // Subscribe before reading the log and before answering, so every later event is seen.
        let events = await transport.events()
        await afterSubscribing()
        var replay: [LoggedTransportEvent] = []
        var liveAbove: UInt64? = nil
        if let after {
            var cursor = after
            while true {
                let page = try await readLog(after: cursor, limit: Self.replayPage)
                replay += page
                guard page.count == Self.replayPage, let last = page.last else { break }
                cursor = last.number
            }
            liveAbove = replay.last?.number ?? after
        }
        let frames = EventFrames(
            events: events, replay: replay, liveAbove: liveAbove, fabric: fabric, keepAlive: keepAlive, logger: logger)
        return HTTPBody(frames, length: .unknown, iterationBehavior: .single)
    }

    /// `Accept: application/json`: one page of the log, without subscribing.
    func page(after: UInt64, limit: Int) async throws -> EventLogJSONPage {
        let entries = try await readLog(after: after, limit: limit)
        return EventLogJSONPage(events: entries.map(EventLogJSONPage.Entry.init), next: entries.last?.number ?? after)
    }

    /// The log's entries above `after`; a log that cannot be read (its database failed) is the cluster's FAILURE,
    /// logged, not a 500.
    private func readLog(after: UInt64, limit: Int) async throws(APIError) -> [LoggedTransportEvent] {
        do {
            return try await transport.loggedEvents(after: after, fabric: fabric, limit: limit)
        } catch {
            logger.error("event log could not be read", metadata: ["error": "\(error)"])
            throw .failure("event log: could not be read: \(error)")
        }
    }
}

/// The bytes of one subscriber's event stream, as the HTTP body iterates them: `: subscribed`, the replayed frames, then
/// live frames and keep-alives as they come. Iterating starts two tasks — one forwards the cluster's live events of
/// the caller's fabric into a buffer of at most ``TransportEventStream/maxPendingFrames``, one queues a keep-alive
/// every `keepAlive` — which end with the iterator: when the subscriber goes away the body stops pulling, the
/// iterator is released and the subscription with it. A subscriber that falls more than the buffer behind is closed
/// (logged), never silently thinned: it reconnects with `Last-Event-ID` and the log replays what it missed.
struct EventFrames: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    let events: AsyncStream<LoggedTransportEvent>
    let replay: [LoggedTransportEvent]
    let liveAbove: UInt64?
    let fabric: FabricIndex
    let keepAlive: Duration
    let logger: Logger

    fileprivate enum Item: Sendable {
        case event(LoggedTransportEvent)
        case keepAlive
    }

    fileprivate final class Flags: Sendable {
        /// A keep-alive is queued and not yet written.
        let keepAlivePending = Atomic<Bool>(false)
        /// The subscriber fell more than `maxPendingFrames` behind.
        let overflowed = Atomic<Bool>(false)
    }

    func makeAsyncIterator() -> Iterator {
        let (items, sink) = AsyncStream.makeStream(
            of: Item.self, bufferingPolicy: .bufferingOldest(TransportEventStream.maxPendingFrames))
        let flags = Flags()
        let (events, fabric, liveAbove, keepAlive) = (self.events, self.fabric, self.liveAbove, self.keepAlive)
        let forward = Task {
            for await entry in events {
                // Another fabric's event, or one the replay already delivered: not this subscriber's.
                guard entry.fabricIndex == fabric || entry.fabricIndex == CameraEvent.noFabric, entry.number > liveAbove ?? 0 else { continue }
                if case .dropped = sink.yield(.event(entry)) {
                    flags.overflowed.store(true, ordering: .relaxed)
                    break
                }
            }
            sink.finish()
        }
        let keepAlives = Task {
            while (try? await Task.sleep(for: keepAlive)) != nil {
                // At most one keep-alive waits: a stalled subscriber does not pile them up.
                if !flags.keepAlivePending.exchange(true, ordering: .relaxed) { sink.yield(.keepAlive) }
            }
        }
        logger.debug("event subscriber connected", metadata: ["replayed": "\(replay.count)"])
        return Iterator(
            head: [": subscribed\n\n"], replay: replay[...], items: items.makeAsyncIterator(), flags: flags,
            tasks: [forward, keepAlives], logger: logger)
    }

    /// Ends the two tasks when released (the subscriber went away, or the stream ended).
    final class Iterator: AsyncIteratorProtocol {
        private var head: [String]
        private var replay: ArraySlice<LoggedTransportEvent>
        private var items: AsyncStream<Item>.Iterator
        private let flags: Flags
        private let tasks: [Task<Void, Never>]
        private let logger: Logger

        fileprivate init(
            head: [String], replay: ArraySlice<LoggedTransportEvent>, items: AsyncStream<Item>.Iterator, flags: Flags,
            tasks: [Task<Void, Never>], logger: Logger
        ) {
            (self.head, self.replay, self.items, self.flags, self.tasks, self.logger) = (head, replay, items, flags, tasks, logger)
        }

        deinit {
            for task in tasks { task.cancel() }
            if flags.overflowed.load(ordering: .relaxed) {
                logger.warning("event subscriber too slow: more than \(TransportEventStream.maxPendingFrames) events waiting; stream closed, the subscriber must reconnect")
            }
            logger.debug("event subscriber gone")
        }

        func next() async throws -> ArraySlice<UInt8>? {
            if !head.isEmpty { return Array(head.removeFirst().utf8)[...] }
            if let entry = replay.popFirst() { return Array(try TransportEventStream.frame(entry).utf8)[...] }
            switch await items.next() {
            case .keepAlive:
                flags.keepAlivePending.store(false, ordering: .relaxed)
                return Array(": keep-alive\n\n".utf8)[...]
            case .event(let entry):
                return Array(try TransportEventStream.frame(entry).utf8)[...]
            case nil:
                return nil
            }
        }
    }
}

extension TransportEventStream {
    /// One SSE frame: `id` (the event number), `event`, one `data` line of JSON (JSON never contains a raw newline).
    static func frame(_ entry: LoggedTransportEvent) throws -> String {
        let data = try JSONResponse.encoder().encode(EventFields(entry.event))
        return "id: \(entry.number)\nevent: \(entry.event.name)\ndata: \(String(decoding: data, as: UTF8.self))\n\n"
    }
}

/// An event's own fields, encoded as its schema (PushTransportBegin, PushTransportEnd, ZoneTriggered, ZoneStopped).
struct EventFields: Encodable, Hashable, Sendable {
    let event: CameraEvent

    init(_ event: CameraEvent) { self.event = event }

    func encode(to encoder: any Encoder) throws {
        switch event {
        case .pushTransportBegin(let begin): try begin.encode(to: encoder)
        case .pushTransportEnd(let end): try end.encode(to: encoder)
        case .zoneTriggered(let triggered): try triggered.encode(to: encoder)
        case .zoneStopped(let stopped): try stopped.encode(to: encoder)
        }
    }
}

/// The JSON answer of `GET /v1/cameras/{camera}/events` with `Accept: application/json` (the document's
/// `EventLogPage`, generated as this type: each event is encoded as the schema its `type` names).
struct EventLogJSONPage: Encodable, Hashable, Sendable {
    struct Entry: Encodable, Hashable, Sendable {
        var number: UInt64
        var time: Date
        var type: String
        var event: EventFields

        init(_ logged: LoggedTransportEvent) {
            number = logged.number
            time = logged.time
            type = logged.event.name
            event = EventFields(logged.event)
        }
    }

    var events: [Entry]
    /// What to pass as `since` next time: the last number returned, else the `since` asked for.
    var next: UInt64
}

/// The event route's query and headers: `since` / `Last-Event-ID`, `limit`, and whether JSON is wanted.
struct EventLogQuery: Sendable, Hashable {
    static let defaultLimit = 100
    static let maxLimit = 1000

    /// Replay above this number; nil: from now on (SSE) or from the start (JSON).
    var after: UInt64?
    var limit: Int
    var wantsJSON: Bool

    /// The rule of both readers of the query (the middleware's ``read(_:)`` and the generated operation's input):
    /// Last-Event-ID wins over `since`, for it is where a reconnecting EventSource left off.
    init(since: UInt64?, lastEventID: UInt64?, limit: Int?, wantsJSON: Bool) {
        after = lastEventID ?? since
        self.limit = limit ?? Self.defaultLimit
        self.wantsJSON = wantsJSON
    }

    /// Reads the request; a bad value is a 400 naming it.
    static func read(_ request: Request) throws(APIError) -> EventLogQuery {
        let query = request.uri.queryParameters
        func single(_ name: String) throws(APIError) -> Substring? {
            let values = query[values: Substring(name)]
            guard values.count <= 1 else { throw .invalidCommand("\(name): give it at most once") }
            return values.first
        }
        var since: UInt64? = nil
        if let text = try single("since") {
            guard let value = UInt64(text) else {
                throw .invalidCommand("since: must be an event number, an integer 0…\(UInt64.max); got \"\(text)\"")
            }
            since = value
        }
        func values(_ name: String) -> [String] {
            request.headers.filter { $0.name.canonicalName == name }.map(\.value)
        }
        let lastEventIDs = values("last-event-id")
        var lastEventID: UInt64? = nil
        if !lastEventIDs.isEmpty {
            let text = lastEventIDs.joined(separator: ", ").trimmingCharacters(in: .whitespaces)
            guard lastEventIDs.count == 1, let value = UInt64(text) else {
                throw .invalidCommand("Last-Event-ID: must be one event number, an integer 0…\(UInt64.max); got \"\(text)\"")
            }
            lastEventID = value
        }
        var limit: Int? = nil
        if let text = try single("limit") {
            guard let value = Int(text), (1...maxLimit).contains(value) else {
                throw .invalidCommand("limit: must be an integer 1…\(maxLimit); got \"\(text)\"")
            }
            limit = value
        }
        let accept = values("accept").joined(separator: ",")
        let wantsJSON = accept.split(separator: ",").contains { part in
            part.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
        }
        return EventLogQuery(since: since, lastEventID: lastEventID, limit: limit, wantsJSON: wantsJSON)
    }
}
