import Foundation
import Testing
import Timeline
@testable import TransportModel

/// Plays a TC-PAVST script against the server through the pure clip timeline, in media time.
private struct Script {
    let server: PushAVStreamTransportServer
    var transport: TransportTimeline
    /// Begin/End decisions with their media times, in order.
    var log: [(kind: String, time: Double)] = []

    init(server: PushAVStreamTransportServer, id: UInt16, options: TransportOptionsStruct, status: TransportStatusEnum = .active) {
        self.server = server
        transport = TransportTimeline(connectionID: id, options: options, status: status)
    }

    /// Advances the media clock frame by frame (10 fps) up to `time`.
    mutating func run(to time: Double) async throws {
        let now = transport.timeline.now?.seconds ?? 0
        var t = (now * 10).rounded(.down) / 10 + 0.1
        while t <= time + 1e-9 {
            try await feed(.frame(MediaTime(seconds: t), isKeyframe: false))
            t += 0.1
        }
    }

    mutating func motion(at time: Double) async throws {
        try await run(to: time)
        try await feed(.motion(MediaTime(seconds: time)))
    }

    mutating func manual(at time: Double, timeControl: ClipTimeControl?) async throws {
        try await run(to: time)
        try await feed(.manualTrigger(MediaTime(seconds: time), timeControl: timeControl))
    }

    mutating func status(_ activity: TransportActivity, at time: Double) async throws {
        try await run(to: time)
        try await feed(.status(activity, MediaTime(seconds: time)))
    }

    private mutating func feed(_ input: TimelineInput) async throws {
        for decision in try await transport.handle(input, server: server) {
            switch decision {
            case .begin(let b): log.append(("begin", b.activationTime.seconds))
            case .end(let e): log.append(("end", e.end.seconds))
            case .extend: break
            }
        }
    }
}

private func activeTransport(_ options: TransportOptionsStruct, on server: PushAVStreamTransportServer,
                             status: TransportStatusEnum = .active) async throws -> UInt16 {
    let id = try await server.allocatePushTransport(options, fabric: fabric1).connectionID
    if status == .active { try await server.setTransportStatus(connectionID: id, transportStatus: .active, fabric: fabric1) }
    return id
}

@Suite("TC-PAVST-2.12")
struct TC_PAVST_2_12 {
    /// Motion transport (10, 5, 20, 1), MaxPreRollLen 4000: Active → motion → Begin; Deallocate → End; a new
    /// transport left Inactive → motion → no Begin; SetTransportStatus(Active) → Begin at once; End at t0 + 10.
    @Test func motionClipRecord() async throws {
        let server = try makeServer()
        let options = motionOptions(timeControl: .init(initialDuration: 10, augmentationDuration: 5, maxDuration: 20, blindDuration: 1))
        let first = try await activeTransport(options, on: server)
        var events = try await TransportModelTests.events(of: server) {
            var script = Script(server: server, id: first, options: options)
            try await script.motion(at: 2)
            #expect(script.log.map(\.kind) == ["begin"])
            #expect(script.log.first?.time == 2)
            try await server.deallocatePushTransport(connectionID: first, fabric: fabric1)
        }
        #expect(events.compactMap(\.begin).map(\.triggerType) == [.motion])
        #expect(events.compactMap(\.end).count == 1, "Deallocate ends the running recording")

        let second = try await activeTransport(options, on: server, status: .inactive)
        events = try await TransportModelTests.events(of: server) {
            var script = Script(server: server, id: second, options: options, status: .inactive)
            try await script.motion(at: 1)
            try await script.run(to: 6)
            #expect(script.log.isEmpty, "an Inactive transport records nothing")
            try await server.setTransportStatus(connectionID: second, transportStatus: .active, fabric: fabric1)
            try await script.status(.active, at: 6)
            #expect(script.log.map(\.kind) == ["begin"], "turning Active within t0 + D starts recording at once")
            try await script.run(to: 12)
            #expect(script.log.map(\.kind) == ["begin", "end"])
            #expect(abs(script.log[1].time - 11) < 1e-9, "End at t0 + InitialDuration (1 + 10 s)")
        }
        #expect(events.map { $0.begin != nil ? "B" : "E" } == ["B", "E"])
        try await server.deallocatePushTransport(connectionID: second, fabric: fabric1)
    }
}

@Suite("TC-PAVST-2.13")
struct TC_PAVST_2_13 {
    static let control = ClipTimeControl(initial: 5, augmentation: 2, max: 15, blind: 3)

    /// Manual trigger (5/2/15/3) → Begin (Command); motion during it → End after Initial + Augmentation;
    /// motion right after a manually started clip → Begin (no blind window after manual clips).
    @Test func manualClipThenMotionIgnoresBlind() async throws {
        let server = try makeServer()
        let options = motionOptions(timeControl: .init(initialDuration: 5, augmentationDuration: 2, maxDuration: 15, blindDuration: 3))
        let id = try await activeTransport(options, on: server)
        let events = try await TransportModelTests.events(of: server) {
            var script = Script(server: server, id: id, options: options)
            try await script.manual(at: 1, timeControl: Self.control)
            try await script.motion(at: 2)
            try await script.run(to: 8)
            #expect(script.log.map(\.kind) == ["begin", "end"])
            #expect(abs(script.log[1].time - 8) < 1e-9, "End at t0 + Initial + Augmentation = 1 + 7")
            try await script.motion(at: 8.1)
            #expect(script.log.map(\.kind) == ["begin", "end", "begin"], "no blind window after a manual clip")
        }
        let begins = events.compactMap(\.begin)
        #expect(begins.map(\.triggerType) == [.command, .motion])
        #expect(begins.first?.activationReason == .userInitiated)
        #expect(begins.map(\.cmafSessionNumber) == [1, 2])
    }

    /// Motion clip + motion → End after Initial + Augmentation; motion inside the blind window → nothing;
    /// after it → Begin, End after Initial. A motion during a running clip never produces a second Begin.
    @Test func blindWindowAfterMotionClip() async throws {
        let server = try makeServer()
        let options = motionOptions(timeControl: .init(initialDuration: 5, augmentationDuration: 2, maxDuration: 15, blindDuration: 3))
        let id = try await activeTransport(options, on: server)
        let events = try await TransportModelTests.events(of: server) {
            var script = Script(server: server, id: id, options: options)
            try await script.motion(at: 1)
            try await script.motion(at: 2)
            try await script.motion(at: 3)  // during the clip: no second Begin, no second increase yet
            try await script.run(to: 8.5)
            #expect(script.log.map(\.kind) == ["begin", "end"])
            #expect(abs(script.log[1].time - 8) < 1e-9)
            try await script.motion(at: 10)  // inside the blind window [8, 11)
            #expect(script.log.count == 2, "motion within BlindDuration after End: no event")
            try await script.motion(at: 11.2)
            try await script.run(to: 17)
            #expect(script.log.map(\.kind) == ["begin", "end", "begin", "end"])
            #expect(abs(script.log[3].time - 16.2) < 1e-9, "End at t0 + InitialDuration")
        }
        #expect(events.map { $0.begin != nil ? "B" : "E" } == ["B", "E", "B", "E"])
    }

    /// MaxDuration cap (5/15/10/3): two motions → End after MaxDuration.
    @Test func maxDurationCapsTheClip() async throws {
        let server = try makeServer()
        let options = motionOptions(timeControl: .init(initialDuration: 5, augmentationDuration: 15, maxDuration: 10, blindDuration: 3))
        let id = try await activeTransport(options, on: server)
        _ = try await TransportModelTests.events(of: server) {
            var script = Script(server: server, id: id, options: options)
            try await script.motion(at: 1)
            try await script.motion(at: 2)
            try await script.run(to: 12)
            #expect(script.log.map(\.kind) == ["begin", "end"])
            #expect(abs(script.log[1].time - 11) < 1e-9, "End at t0 + MaxDuration = 1 + 10")
        }
    }
}
