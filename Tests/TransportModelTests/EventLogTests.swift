import Domain
import Foundation
import Testing
import TestSupport
@testable import TransportModel

/// The server's event log: every Begin/End numbered, logged with its fabric and time, then broadcast; numbers reserved
/// in blocks so they only increase; a failing log never stops an event.
@Suite("Event log")
struct EventLogTests {
    private func server(log: any TransportEventLog, clock: ManualClock = ManualClock(),
                        errors: ErrorRecorder = ErrorRecorder()) throws -> PushAVStreamTransportServer {
        try PushAVStreamTransportServer(
            capabilities: TransportCapabilities(maxZones: 3),
            persistence: VolatileTransportPersistence(initialState: PersistentTransportState(registries: standardRegistries())),
            clock: clock, eventLog: log, reportEventLogFailure: errors.report)
    }

    private func activeTransport(fabric: FabricIndex, on server: PushAVStreamTransportServer) async throws -> UInt16 {
        let id = try await server.allocatePushTransport(continuousOptions(), fabric: fabric).connectionID
        try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric)
        return id
    }

    /// One recording on `connectionID`: its Begin and its End.
    private func record(_ connectionID: UInt16, on server: PushAVStreamTransportServer) async throws {
        let session = try await server.recordingStarted(connectionID: connectionID, trigger: .continuous)
        #expect(await server.recordingEnded(connectionID: connectionID, sessionNumber: session))
    }

    @Test("Begin/End are logged with increasing numbers, time and fabric, then broadcast as logged; an End after deallocate keeps its fabric")
    func appendedThenBroadcast() async throws {
        let log = VolatileTransportEventLog()
        let clock = ManualClock()
        let server = try server(log: log, clock: clock)
        let one = try await activeTransport(fabric: fabric1, on: server)
        let two = try await activeTransport(fabric: fabric2, on: server)
        let start = clock.now()
        let stream = await server.events()
        let session = try await server.recordingStarted(connectionID: one, trigger: .continuous)
        clock.advance(by: 1)
        _ = try await server.recordingStarted(connectionID: two, trigger: .continuous)
        clock.advance(by: 1)
        // Fabric 2's connection goes away during its recording: the End the recorder sends then is still fabric 2's.
        try await server.deallocatePushTransport(connectionID: two, fabric: fabric2)
        #expect(await server.storedConnection(two) == nil)
        #expect(await server.recordingEnded(connectionID: two, sessionNumber: 1))
        clock.advance(by: 1)
        #expect(await server.recordingEnded(connectionID: one, sessionNumber: session))
        await server.finishSubscriptions()
        let broadcast = await collect(stream)

        #expect(broadcast == log.allEntries)
        #expect(broadcast.map(\.number) == [1, 2, 3, 4])
        #expect(broadcast.map(\.fabricIndex) == [fabric1, fabric2, fabric2, fabric1])
        #expect(broadcast.map(\.time) == (0..<4).map { start.addingTimeInterval(TimeInterval($0)) })
        #expect(broadcast.map(\.event) == [
            .pushTransportBegin(.init(connectionID: one, triggerType: .continuous, containerType: .cmaf, cmafSessionNumber: 1)),
            .pushTransportBegin(.init(connectionID: two, triggerType: .continuous, containerType: .cmaf, cmafSessionNumber: 1)),
            .pushTransportEnd(.init(connectionID: two, containerType: .cmaf, cmafSessionNumber: 1)),
            .pushTransportEnd(.init(connectionID: one, containerType: .cmaf, cmafSessionNumber: 1)),
        ])
        #expect(await server.upcomingEventNumber == 5)
    }

    /// Where the persistence is the event log too (one store, as `pushav serve` has it), a Begin's event is written in
    /// the Begin's own commit: the Begin's fsync covers it, and nothing dirties the log's page right after that fsync.
    /// With a separate log the event is appended as any other.
    @Test("A Begin's event goes into the Begin's commit when the persistence is the log; an End's is appended", arguments: [true, false])
    func beginEventInTheBeginsCommit(persistenceIsTheLog: Bool) async throws {
        let store = CommitRecordingStore()
        let log = VolatileTransportEventLog()
        let server = try PushAVStreamTransportServer(
            capabilities: TransportCapabilities(maxZones: 3), persistence: store,
            eventLog: persistenceIsTheLog ? store : log)
        try await server.setRegistries(standardRegistries())
        let id = try await activeTransport(fabric: fabric1, on: server)
        try await record(id, on: server)
        let begin = CameraEvent.pushTransportBegin(.init(connectionID: id, triggerType: .continuous, containerType: .cmaf,
                                                         cmafSessionNumber: 1))
        let end = CameraEvent.pushTransportEnd(.init(connectionID: id, containerType: .cmaf, cmafSessionNumber: 1))
        let commits = store.commits.filter { $0.hasPrefix("begin") || $0.hasPrefix("append") }
        if persistenceIsTheLog {
            #expect(commits == ["begin 1 with \(begin.name) 1", "append \(end.name) 2"])
        } else {
            #expect(commits == ["begin 1"])
            #expect(log.allEntries.map(\.event) == [begin, end])
        }
    }

    @Test("Reading since N with a limit, for one fabric or all", arguments: [
        // (after, fabric, limit, expected numbers); events 1…6 alternate fabric 1 (odd recordings) and 2.
        (0, nil, 100, [1, 2, 3, 4, 5, 6]),
        (2, nil, 2, [3, 4]),
        (6, nil, 100, []),
        (1000, nil, 100, []),
        (0, 1, 100, [1, 2, 5, 6]),
        (0, 2, 100, [3, 4]),
        (2, 1, 1, [5]),
        (4, 2, 100, []),
        (0, 3, 100, []),
        (0, nil, 0, []),
    ] as [(UInt64, FabricIndex?, Int, [UInt64])])
    func readSince(after: UInt64, fabric: FabricIndex?, limit: Int, expected: [UInt64]) async throws {
        let server = try server(log: VolatileTransportEventLog())
        let one = try await activeTransport(fabric: fabric1, on: server)
        let two = try await activeTransport(fabric: fabric2, on: server)
        for connection in [one, two, one] { try await record(connection, on: server) }
        let read = try await server.loggedEvents(after: after, fabric: fabric, limit: limit)
        #expect(read.map(\.number) == expected)
        if let fabric { #expect(read.allSatisfy { $0.fabricIndex == fabric }) }
    }

    @Test("Numbers are reserved a block at a time; a restart continues after the reserved block, never reusing one")
    func reservationBlocks() async throws {
        let block = PushAVStreamTransportServer.eventNumberReservationBlock
        let log = VolatileTransportEventLog()
        #expect(try log.loadEventNumberReservation() == 1)
        let server = try server(log: log)
        let id = try await activeTransport(fabric: fabric1, on: server)
        try await record(id, on: server)
        #expect(try log.loadEventNumberReservation() == 1 + block, "the first event reserved 1…\(block)")
        // Use up the block: the event numbered 1 + block reserves the next one first.
        for _ in 0..<(Int(block) / 2) { try await record(id, on: server) }
        #expect(log.allEntries.map(\.number) == Array(1...(block + 2)))
        #expect(try log.loadEventNumberReservation() == 1 + 2 * block)

        // A restart (or a crash) over the same log: numbering resumes at the reservation, above every number used.
        let restarted = try self.server(log: log)
        let again = try await activeTransport(fabric: fabric1, on: restarted)
        try await record(again, on: restarted)
        #expect(log.allEntries.suffix(2).map(\.number) == [1 + 2 * block, 2 + 2 * block])
        #expect(try log.loadEventNumberReservation() == 1 + 3 * block)
    }

    @Test("A failing log (disk full) reports and keeps numbering: the events go out, the recording goes on, and the log gets them once it writes again")
    func failingLog() async throws {
        let log = FailingEventLog()
        let errors = ErrorRecorder()
        let server = try server(log: log, errors: errors)
        let id = try await activeTransport(fabric: fabric1, on: server)
        let stream = await server.events()
        log.setFailing(true)
        let session = try await server.recordingStarted(connectionID: id, trigger: .continuous)
        #expect(await server.runningSessionNumber(connectionID: id) == session)
        #expect(await server.recordingEnded(connectionID: id, sessionNumber: session))
        log.setFailing(false)
        try await record(id, on: server)
        await server.finishSubscriptions()

        let broadcast = await collect(stream)
        #expect(broadcast.map(\.number) == [1, 2, 3, 4])
        // Seed 139 of the 40-seed chaos run: an End broadcast while the log failed was in no log, so a controller
        // reading the log never saw it. The failed appends are made again, in number order, before the next event.
        #expect(log.inner.allEntries.map(\.number) == [1, 2, 3, 4], "the failed appends are logged once the log writes")
        // Each failed reservation (retried with the next event), and the first failed append (the next waits behind it).
        #expect(errors.all == Array(repeating: "\(FailingEventLog.DiskFull())", count: 3))
        // The reservation retried at event 3 covers it and what follows: a restart continues above 4.
        let restarted = try self.server(log: log)
        #expect(await restarted.upcomingEventNumber == 3 + PushAVStreamTransportServer.eventNumberReservationBlock)
    }

    @Test("The volatile log keeps the newest entries within its bounds")
    func volatileRetention() throws {
        let log = VolatileTransportEventLog(retention: EventLogRetention(maxEntries: 3, maxAge: 60))
        let start = Date(timeIntervalSince1970: 1_750_000_000)
        let end = CameraEvent.pushTransportEnd(.init(connectionID: 1))
        for (number, seconds) in [(1, 0), (2, 10), (3, 20), (4, 30), (5, 100)] as [(UInt64, TimeInterval)] {
            try log.append(LoggedTransportEvent(number: number, time: start.addingTimeInterval(seconds), fabricIndex: 1, event: end))
            if number == 4 { #expect(log.allEntries.map(\.number) == [2, 3, 4], "count bound") }
        }
        #expect(log.allEntries.map(\.number) == [5], "age bound: 4 is 70 s older than 5")
    }
}

/// A persistence that is also an event log and records each write as one line: which commit held what.
private final class CommitRecordingStore: TransportPersistence, TransportEventLog, @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    var commits: [String] { lock.withLock { lines } }
    private func note(_ line: String) { lock.withLock { lines.append(line) } }

    func load() throws -> PersistentTransportState { PersistentTransportState() }
    func save(connections: [StoredConnection], lastConnectionID: UInt16?) throws { note("connections") }
    func deleteConnections(_ connectionIDs: [UInt16]) throws { note("delete") }
    func save(registries: TransportRegistries, changed: RegistrySections) throws { note("registries") }
    func save(openRecording recording: OpenRecording?, connectionID: UInt16) throws { note("end record") }
    func saveBegin(sessionNumber: SessionNumber, openRecording recording: OpenRecording, connectionID: UInt16,
                   event: LoggedTransportEvent?) throws {
        note("begin \(sessionNumber)" + (event.map { " with \($0.event.name) \($0.number)" } ?? ""))
    }
    func loadEventNumberReservation() throws -> UInt64 { 1 }
    func reserveEventNumbers(below limit: UInt64) throws {}
    func append(_ entry: LoggedTransportEvent) throws { note("append \(entry.event.name) \(entry.number)") }
    func events(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent] { [] }
}
