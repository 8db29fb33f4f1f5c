import AsyncHTTPClient
import CMAF
import Domain
import Foundation
import IngestServer
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import TestSupport
import Testing

// Watching a running `pushav serve`: its event stream and its log as they grow; apart to keep ServeSupport.swift short.

/// The camera's Server-Sent Events, collected as they arrive with the instant each was read.
final class EventFeed: Sendable {
    struct Event: Sendable, CustomStringConvertible {
        /// The cluster's event number (the frame's `id`).
        var number: UInt64?
        /// When it was read (wall clock).
        var received = Date()
        var name: String
        var connectionID: Int
        var session: Int
        var triggerType: Int?
        var activationReason: Int?
        var time: ContinuousClock.Instant
        var isBegin: Bool { name == "PushTransportBegin" }
        var description: String {
            "\(isBegin ? "Begin" : "End") c\(connectionID) s\(session)"
                + (triggerType.map { " trigger \($0)" } ?? "") + (activationReason.map { " reason \($0)" } ?? "")
        }
    }

    private let state = Mutex<(events: [Event], subscribed: Bool, closed: String?)>(([], false, nil))
    private let reader = Mutex<Task<Void, Never>?>(nil)

    static func start(client: HTTPClient, url: String, authorization: String? = nil) async throws -> EventFeed {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await client.execute(request, timeout: .minutes(5))
        try #require(response.status == .ok)
        let feed = EventFeed()
        feed.reader.withLock { $0 = Task { await feed.read(response.body) } }
        try await Fixtures.waitUntil("event subscription", timeout: .seconds(10)) { feed.state.withLock { $0.subscribed } }
        return feed
    }

    private func read(_ body: HTTPClientResponse.Body) async {
        var pending = ""
        do {
            for try await chunk in body {
                pending += String(buffer: chunk)
                while let end = pending.range(of: "\n\n") {
                    let frame = String(pending[..<end.lowerBound])
                    pending = String(pending[end.upperBound...])
                    accept(frame)
                }
            }
            state.withLock { $0.closed = "stream ended" }
        } catch {
            state.withLock { $0.closed = "\(error)" }
        }
    }

    private func accept(_ frame: String) {
        let now = ContinuousClock.now
        var name: String?
        var number: UInt64?
        var fields: [String: Any]?
        for line in frame.split(separator: "\n") {
            if line.hasPrefix("id:") { number = UInt64(line.dropFirst(3).trimmingCharacters(in: .whitespaces)) }
            if line.hasPrefix(": subscribed") { state.withLock { $0.subscribed = true } }
            if line.hasPrefix("event:") { name = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("data:") {
                fields = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(5).utf8)) as? [String: Any]
            }
        }
        guard let name, let fields else { return }
        let event = Event(number: number, name: name, connectionID: fields["connectionID"] as? Int ?? -1,
                          session: fields["cmafSessionNumber"] as? Int ?? -1, triggerType: fields["triggerType"] as? Int,
                          activationReason: fields["activationReason"] as? Int, time: now)
        state.withLock { $0.events.append(event) }
    }

    var events: [Event] { state.withLock { $0.events } }
    func events(of connectionID: Int) -> [Event] { events.filter { $0.connectionID == connectionID } }
    var closed: String? { state.withLock { $0.closed } }

    /// Waits until `condition` holds for the events so far; fails after `timeout` naming `what` and listing them.
    @discardableResult
    func wait(_ what: String, timeout: Duration, _ condition: @escaping ([Event]) -> Bool) async throws -> [Event] {
        do {
            try await Fixtures.waitUntil(what, timeout: timeout) { condition(self.events) }
        } catch {
            throw TestFailure("\(error); events: \(events)")
        }
        return events
    }

    func stop() { reader.withLock { $0?.cancel() } }
}

/// Reads `pushav serve`'s log as it grows and notes when each line was first seen (polled every 20 ms), so tests can
/// place the events on the media timeline of a file source: each pass over the file starts with the "recording" line.
final class ServeLog: Sendable {
    struct Line: Sendable {
        var text: String
        var seen: ContinuousClock.Instant
    }

    private let lines = Mutex<[Line]>([])
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init(file: URL) {
        let task = Task { [self] in await follow(file) }
        reader.withLock { $0 = task }
    }

    private func follow(_ file: URL) async {
        var offset = 0
        var partial = ""
        while !Task.isCancelled {
            if let handle = try? FileHandle(forReadingFrom: file) {
                try? handle.seek(toOffset: UInt64(offset))
                let data = (try? handle.readToEnd()) ?? Data()
                try? handle.close()
                offset += data.count
                partial += String(decoding: data, as: UTF8.self)
                let now = ContinuousClock.now
                while let newline = partial.firstIndex(of: "\n") {
                    let text = String(partial[..<newline])
                    partial = String(partial[partial.index(after: newline)...])
                    lines.withLock { $0.append(Line(text: text, seen: now)) }
                }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    var all: [Line] { lines.withLock { $0 } }

    /// When each pass over the source started (the recorder's "recording" line, logged as it opens the input).
    var passStarts: [ContinuousClock.Instant] {
        all.filter { $0.text.hasSuffix(" recording") && $0.text.contains("input=") }.map(\.seen)
    }

    /// Which pass `instant` falls in and how far into it, in seconds of the file's timeline (a live file is paced in
    /// real time from its start).
    func position(of instant: ContinuousClock.Instant) -> (pass: Int, seconds: Double)? {
        guard let index = passStarts.lastIndex(where: { $0 <= instant }) else { return nil }
        return (index, (instant - passStarts[index]).inSeconds)
    }

    func stop() { reader.withLock { $0?.cancel() } }
}

extension Duration {
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
