import AsyncHTTPClient
import ConcurrencyPrimitives
import Foundation
import GRDB
import Ingest
import NIOHTTP1
import Synchronization
import Testing
import TestSupport

/// Runs one ``ChaosSchedule`` against the real `pushav serve` and collects ``ChaosObservations``.
///
/// The process runs in a network namespace of its own (`ip netns`), under libfiu's POSIX preload (`fiu-run -x`, its
/// failure points switched with `fiu-ctrl`). Its two ingests (A and B, each with a PKI of its own: each accepts only its
/// own CA's client certificates) listen on the host's end of a veth pair; the lossy link drops packets on that path
/// only (`tc netem` where the kernel has it, else an nftables rule dropping a share of the packets at random), so the
/// control API the test drives stays clean.
final class ChaosRun: @unchecked Sendable {
    // @unchecked: the mutable state is only touched from the run's own task, fault windows go through `faults`.
    typealias Ingest = ChaosSchedule.Ingest

    let schedule: ChaosSchedule
    let directory: URL
    let network: ChaosNetwork
    private var ingests: [Ingest: ServeIngest] = [:]
    private var ingestPorts: [Ingest: Int] = [:]
    private var endpointIDs: [Ingest: Int] = [:]
    private let servers = Mutex<[Ingest: RunningServer]>([:])
    /// Per ingest, how many down windows are open now; per fault, how many windows.
    private let windows = Mutex<[String: Int]>([:])
    private var serve: Serve!
    /// Commands and restarts, one at a time. A fault window closes on a task of its own (privacy off when its time is
    /// up); without this its command could reach a process a restart is stopping — recorded as "no answer in time"
    /// (seed 111 of the 40-seed run) — or read `serve` while the restart replaces it.
    private let lifecycle = SerialGate()
    /// Every command's answer, from the run's task and the windows' alike.
    private let commandLog = Mutex<[ChaosObservations.Command]>([])
    private var feed: EventFeed?
    private var feeds: [EventFeed] = []
    private var runs = 0
    private let token = "chaos-token-" + UUID().uuidString
    private var observations = ChaosObservations()

    /// A slot's connection: its ID, the allocation number that names its URLs, its destination generation.
    private struct Slot {
        var connection: Int
        var allocation: Int
        var generation: Int
        var ingest: Ingest
        var trigger: ChaosSchedule.Trigger
        var active = false
        var segmentMs = 2000
    }

    private var slots: [Int: Slot] = [:]
    private var allocations = 0

    init(schedule: ChaosSchedule, directory: URL, network: ChaosNetwork) {
        self.schedule = schedule
        self.directory = directory
        self.network = network
    }

    // MARK: Running

    func run() async throws -> ChaosObservations {
        for ingest in Ingest.allCases {
            let made = try await ServeIngest("chaos-\(schedule.seed)-\(ingest.rawValue)", addresses: [network.hostAddress])
            ingests[ingest] = made
            let server = try await made.start(host: network.hostAddress)
            ingestPorts[ingest] = server.port
            servers.withLock { $0[ingest] = server }
        }
        network.ingestPorts = Array(ingestPorts.values)
        defer {
            for ingest in ingests.values { try? FileManager.default.removeItem(at: ingest.directory) }
        }
        defer { feeds.forEach { $0.stop() } }
        do {
            try await start()
            for ingest in Ingest.allCases {
                endpointIDs[ingest] = try await serve.addTLSEndpoint(pki: ingests[ingest]!.pki, port: ingestPorts[ingest]!)
            }
            try await withThrowingTaskGroup(of: Void.self) { windows in
                for step in schedule.steps {
                    if step.after > 0 { try await Task.sleep(for: .milliseconds(Int(step.after * 1000))) }
                    try await perform(step.action, windows: &windows)
                }
                try await windows.waitForAll()  // every fault window closes
            }
            try await heal()
        } catch {
            // Whichever start failed, the last one made is shut down (its HTTP client must be, before it goes).
            if serve != nil { try? await serve.shutdown() }
            await stopIngests()
            throw error
        }
        try await serve.shutdown()
        await stopIngests()
        observations.commands = commandLog.withLock { $0 }
        return observations
    }

    private func stopIngests() async {
        for server in servers.withLock({ Array($0.values) }) { await server.stop() }
    }

    private func start() async throws {
        runs += 1
        let tokenFile = directory.appendingPathComponent("token")
        try Data((token + "\n").utf8).write(to: tokenFile)
        serve = try await Serve(
            directory: directory, source: TestPaths.media(ServeEndToEndTests.media).path, run: runs,
            listenHost: network.namespaceAddress, settings: "tokenFile: \(tokenFile.path)\nuploadMaxBackoffMs: 2000\nspoolCapacityMiB: 4",
            authorization: "Bearer \(token)", launcher: network.launcher + ["fiu-run", "-x"],
            connectHost: network.namespaceAddress)
        try await serve.waitUntilStreaming()
        let feed = try await serve.subscribe()
        self.feed = feed
        feeds.append(feed)
    }

    private func url(_ slot: Slot) -> String {
        "https://\(network.hostAddress):\(ingestPorts[slot.ingest]!)/" + path(slot)
    }

    private func path(_ slot: Slot) -> String { "k\(slot.allocation)/g\(slot.generation)/" }

    private func options(_ slot: Slot, expiry: Int? = nil) -> [String: Any] {
        let trigger: TransportJSON.Trigger = switch slot.trigger {
        case .continuous: .continuous
        case .motion: .motion(initial: 2, augmentation: 1, max: 6, blind: 1)
        case .command: .command(preRollMs: 0)
        }
        var options = TransportJSON.options(endpointID: endpointIDs[slot.ingest]!, ingestPort: ingestPorts[slot.ingest]!,
                                            trigger: trigger, segmentMs: slot.segmentMs)
        options["url"] = url(slot)
        if let expiry { options["expiryTime"] = expiry }
        return options
    }

    /// A command through the API, recorded with its answer (nil status: no answer in time).
    @discardableResult
    private func send(_ name: String, _ body: [String: Any], method: HTTPMethod = .POST, path: String? = nil) async -> UInt? {
        let text = JSON.text(body)
        return await lifecycle.run { () async -> UInt? in
            do {
                let (status, text) = try await self.serve.request(method, path ?? "/v1/cameras/cam1/commands/\(name)", text)
                self.commandLog.withLock { $0.append(.init(name: name, status: status, body: text)) }
                return status
            } catch {
                self.commandLog.withLock { $0.append(.init(name: name, status: nil, body: "\(error)")) }
                return nil
            }
        }
    }

    private func perform(_ action: ChaosSchedule.Action, windows: inout ThrowingTaskGroup<Void, any Error>) async throws {
        switch action {
        case .allocate(let index, let trigger, let ingest):
            allocations += 1
            var slot = Slot(connection: 0, allocation: allocations, generation: 1, ingest: ingest, trigger: trigger)
            let from = Date()
            let (status, text) = try await serve.request(.POST, "/v1/cameras/cam1/commands/allocatePushTransport",
                                                         JSON.text(["transportOptions": options(slot)]))
            commandLog.withLock { $0.append(.init(name: "allocatePushTransport", status: status, body: text)) }
            guard status == 200,
                  let body = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let configuration = body["transportConfiguration"] as? [String: Any],
                  let id = configuration["connectionID"] as? Int
            else { return }
            slot.connection = id
            slots[index] = slot
            observations.generations.append(.init(connection: id, path: path(slot), ingest: ingest, from: from))
        case .modify(let index, let modification):
            guard var slot = slots[index] else { return }
            var replaced = false
            switch modification {
            case .moveTo(let ingest):
                slot.ingest = ingest
                slot.generation += 1
                replaced = true
            case .expiryOnly:
                break
            case .segmentDuration(let ms):
                slot.segmentMs = ms
            }
            let from = Date()
            let status = await send("modifyPushTransport", ["connectionID": slot.connection,
                                                           "transportOptions": options(slot, expiry: modification == .expiryOnly ? 3600 : nil)])
            guard status == 200 else { return }
            if replaced {
                close(slots[index]!)
                observations.generations.append(.init(connection: slot.connection, path: path(slot), ingest: slot.ingest, from: from))
            }
            slots[index] = slot
        case .setActive(let index, let active):
            guard let slot = slots[index] else { return }
            if await send("setTransportStatus", ["connectionID": slot.connection, "transportStatus": active ? 0 : 1]) == 200 {
                slots[index]?.active = active
            }
        case .deallocate(let index):
            guard let slot = slots[index] else { return }
            if await send("deallocatePushTransport", ["connectionID": slot.connection]) == 200 {
                close(slot)
                slots[index] = nil
            }
        case .trigger(let index):
            guard let slot = slots[index] else { return }
            await send("manuallyTriggerTransport", [
                "connectionID": slot.connection, "activationReason": 0,
                "timeControl": ["initialDuration": 2, "augmentationDuration": 1, "maxDuration": 4, "blindDuration": 0],
            ])
        case .privacy(let seconds):
            try await open("privacy") { await self.setPrivacy(true) }
            windows.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                try await self.close("privacy") { await self.setPrivacy(false) }
            }
        case .ingestDown(let ingest, let seconds):
            note(.ingestDown(ingest), seconds: seconds)
            try await open("down-\(ingest)") { await self.stopIngest(ingest) }
            windows.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                try await self.close("down-\(ingest)") { try await self.startIngest(ingest) }
            }
        case .ingestRefuses(let ingest, let times):
            note(.ingestRefuses(ingest), seconds: nil)
            ingests[ingest]!.endpoint.inject(.status(401), times: times)
        case .ingestRejectsOneObject(let ingest):
            note(.ingestRejectsObject(ingest), seconds: nil)
            // More refusals than the uploader takes before it gives the object up (every segment 1003 while they last).
            ingests[ingest]!.endpoint.inject(.status(400), times: 8, matching: "segment_1003.m4s")
        case .ingestSlow(let ingest, let times):
            note(.ingestSlow(ingest), seconds: nil)
            ingests[ingest]!.endpoint.inject(.stall, times: times)
        case .restart(let kill):
            note(kill ? .kill : .terminate, seconds: 0)
            try await lifecycle.run {
                // The live stream stays subscribed until the process exits: the Ends of a SIGTERM go out on it, and
                // with the store failing they may reach no log (seed 140).
                if kill {
                    _ = try await self.serve.stop(SIGKILL)
                } else {
                    let exited = try await self.serve.stop(SIGTERM, timeout: .seconds(30))
                    if !exited {
                        self.commandLog.withLock { $0.append(.init(name: "SIGTERM", status: nil, body: "still running after 30 s")) }
                    }
                }
                self.feed?.stop()
                try await self.serve.shutdown()
                self.noteProcessExited()
                try await self.start()
            }
        case .ioFault(let fault, let seconds):
            note(.ioFault("\(fault)"), seconds: seconds)
            let pid = serve.process.pid
            let point = switch fault {
            // fsync and fdatasync (SQLite's) alike.
            case .fsync: ("posix/io/sync/*", "enable name=posix/io/sync/*")
            case .pwrite: ("posix/io/rw/pwrite", "enable_random name=posix/io/rw/pwrite,probability=0.1")
            case .open: ("posix/io/oc/open", "enable_random name=posix/io/oc/open,probability=0.2")
            }
            try await open("fiu-\(point.0)") { try? await Self.fiuControl(pid, point.1) }
            windows.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                // A restart since ends the fault with the process it was set in.
                try await self.close("fiu-\(point.0)") { try? await Self.fiuControl(pid, "disable name=\(point.0)") }
            }
        case .triggerThenModify(let index, let ingest):
            guard var slot = slots[index] else { return }
            await send("manuallyTriggerTransport", [
                "connectionID": slot.connection, "activationReason": 0,
                "timeControl": ["initialDuration": 2, "augmentationDuration": 1, "maxDuration": 4, "blindDuration": 0],
            ])
            slot.ingest = ingest
            slot.generation += 1
            let from = Date()
            guard await send("modifyPushTransport", ["connectionID": slot.connection, "transportOptions": options(slot)]) == 200
            else { return }
            close(slots[index]!)
            observations.generations.append(.init(connection: slot.connection, path: path(slot), ingest: slot.ingest, from: from))
            slots[index] = slot
        case .drainUnderWriteFaults(let ingest, let seconds):
            note(.ingestDown(ingest), seconds: seconds)
            note(.ioFault("pwrite"), seconds: 5, startingIn: seconds)
            try await open("down-\(ingest)") { await self.stopIngest(ingest) }
            let pid = serve.process.pid
            windows.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                try await self.open("fiu-posix/io/rw/pwrite") {
                    try? await Self.fiuControl(pid, "enable_random name=posix/io/rw/pwrite,probability=0.3")
                }
                try await self.close("down-\(ingest)") { try await self.startIngest(ingest) }
                try await Task.sleep(for: .seconds(5))
                try await self.close("fiu-posix/io/rw/pwrite") { try? await Self.fiuControl(pid, "disable name=posix/io/rw/pwrite") }
            }
        case .lossyLink(let seconds):
            note(.lossyLink, seconds: seconds)
            try await open("lossy") { try await self.network.setLossy(true) }
            windows.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                try await self.close("lossy") { try await self.network.setLossy(false) }
            }
        }
    }

    /// A fault window from now, `seconds` long (nil: until the end of the run).
    private func note(_ kind: ChaosObservations.Fault.Kind, seconds: Double?, startingIn delay: Double = 0) {
        let now = Date() + delay
        observations.faults.append(.init(kind: kind, from: now, until: seconds.map { now + $0 } ?? .distantFuture))
    }

    /// A restart's stopped process has exited: its fault ends here, before the next process starts. A 2xx before this
    /// and a copy after it are one per process (the old process may have been cut off in its shutdown grace before it
    /// read the answer: seed 120 of the 40-seed run).
    private func noteProcessExited() {
        guard let index = observations.faults.lastIndex(where: { $0.kind == .kill || $0.kind == .terminate }) else { return }
        observations.faults[index].until = Date()
    }

    private func setPrivacy(_ on: Bool) async {
        await send("softRecordingPrivacyModeEnabled", ["value": on], method: .PUT,
                   path: "/v1/cameras/cam1/attributes/softRecordingPrivacyModeEnabled")
    }

    /// The replaced or deallocated destination of `slot` takes no more sessions from now on.
    private func close(_ slot: Slot) {
        let path = path(slot)
        if let index = observations.generations.lastIndex(where: { $0.path == path }) {
            observations.generations[index].until = Date()
        }
    }

    /// Counted windows: the first opening applies `apply`, the last closing applies `undo`.
    private func open(_ key: String, _ apply: () async throws -> Void) async throws {
        let first = windows.withLock { windows in
            windows[key, default: 0] += 1
            return windows[key] == 1
        }
        if first { try await apply() }
    }

    private func close(_ key: String, _ undo: () async throws -> Void) async throws {
        let last = windows.withLock { windows in
            windows[key, default: 1] -= 1
            return windows[key] == 0
        }
        if last { try await undo() }
    }

    private func stopIngest(_ ingest: Ingest) async {
        let server = servers.withLock { $0.removeValue(forKey: ingest) }
        await server?.stop()
    }

    private func startIngest(_ ingest: Ingest) async throws {
        let server = try await ingests[ingest]!.start(port: ingestPorts[ingest]!, host: network.hostAddress)
        servers.withLock { $0[ingest] = server }
    }

    static func fiuControl(_ pid: Int32, _ command: String) async throws {
        _ = try await Shell.run("fiu-ctrl -c '\(command)' \(pid)")
    }

    // MARK: The end

    /// Clears every fault, checks that Continuous transports record again, lets the spool drain, stops the process
    /// gracefully and reads its whole event log.
    private func heal() async throws {
        try await network.setLossy(false)
        // A privacy window's closing command can fail under an I/O fault of the schedule (422: the store could not
        // write it; seed 119), leaving privacy on and nothing recording: once the faults are over it is sent again.
        if schedule.steps.contains(where: { if case .privacy = $0.action { true } else { false } }) {
            for _ in 0..<5 {
                if await send("softRecordingPrivacyModeEnabled", ["value": false], method: .PUT,
                              path: "/v1/cameras/cam1/attributes/softRecordingPrivacyModeEnabled") == 200 { break }
            }
        }
        let healed = ContinuousClock.now
        for slot in slots.values where slot.trigger == .continuous && slot.active {
            var recording = false
            while ContinuousClock.now - healed < .seconds(5), !recording {
                recording = (try? await isRecording(slot.connection)) ?? false
                if !recording { try await Task.sleep(for: .milliseconds(100)) }
            }
            observations.recovered[slot.connection] = recording
        }
        // Deliveries: the backoff is at most 2 s here, so a minute is plenty for what waits.
        let drained = ContinuousClock.now
        while ContinuousClock.now - drained < .seconds(60) {
            if let pending = try? await serve.pendingUploads(), pending == 0 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        note(.terminate, seconds: 0)
        _ = try await serve.stop(SIGTERM, timeout: .seconds(30))
        feed?.stop()
        try await serve.shutdown()
        noteProcessExited()
        // A last start reads the event log (and would send any End the last stop still owed). What was logged before
        // it is read from the stopped process's store first: the last start's own recordings are told apart by number.
        let store = directory.appendingPathComponent("state/cameras/cam1.sqlite")
        observations.lastEventBeforeLastStart = try await DatabaseQueue(path: store.path).read { db in
            try UInt64.fetchOne(db, sql: "SELECT MAX(number) FROM eventLog") ?? 0
        }
        try await start()
        var events: [UInt64: ChaosObservations.Event] = [:]
        for event in feeds.flatMap(\.events) {
            guard let number = event.number else { continue }
            events[number] = .init(number: number, time: event.received, isBegin: event.isBegin, connection: event.connectionID,
                                   session: event.session)
        }
        var after: UInt64 = 0
        while true {
            let (status, text) = try await serve.request(.GET, "/v1/cameras/cam1/events?since=\(after)&limit=1000",
                                                         headers: [("Accept", "application/json")])
            guard status == 200, let page = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let entries = page["events"] as? [[String: Any]] else { throw TestFailure("event log: \(status) \(text)") }
            for entry in entries {
                guard let number = (entry["number"] as? NSNumber)?.uint64Value, let type = entry["type"] as? String,
                      let fields = entry["event"] as? [String: Any], let time = entry["time"] as? String,
                      type == "PushTransportBegin" || type == "PushTransportEnd" else { continue }
                // The log keeps whole seconds: the middle of that second, unless the live stream saw it (its time).
                if events[number] != nil { continue }
                events[number] = .init(number: number, time: (ISO8601DateFormatter().date(from: time) ?? .distantPast) + 0.5,
                                       isBegin: type == "PushTransportBegin", connection: fields["connectionID"] as? Int ?? -1,
                                       session: fields["cmafSessionNumber"] as? Int ?? -1)
            }
            guard entries.count == 1000, let next = (page["next"] as? NSNumber)?.uint64Value else { break }
            after = next
        }
        observations.events = events.values.sorted { $0.number < $1.number }
        let (clock, wall) = (ContinuousClock.now, Date())
        for ingest in Ingest.allCases {
            observations.stored[ingest] = ingests[ingest]!.endpoint.storedPaths
            observations.arrivals[ingest] = ingests[ingest]!.endpoint.arrivals.filter { (200..<300).contains($0.status) }.map {
                .init(path: $0.path, time: wall - (clock - $0.time) / .seconds(1))
            }
        }
        observations.logLines = (1...runs).flatMap { run in
            ((try? String(contentsOf: directory.appendingPathComponent("serve-\(run).log"), encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }
    }

    private func isRecording(_ connection: Int) async throws -> Bool {
        let transports = try await serve.camera()["transports"] as? [[String: Any]] ?? []
        return transports.contains { ($0["connectionID"] as? Int) == connection && $0["recordingSession"] != nil }
    }
}
