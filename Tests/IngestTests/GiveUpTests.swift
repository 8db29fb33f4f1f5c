import Foundation
import Ingest
import IngestServer
import Logging
import MetricsTestKit
import Testing
import TestSupport

/// The two answers that used to hold a daemon's uploads forever: an object the ingest refuses for good (it is given
/// up after `maximumRejections` attempts, explicitly: logged, counted, summarised and recorded in the spool, and the
/// rest of the connection goes on), and refused credentials (reported on the gauge, retried until accepted again).
/// Against the real in-process HTTPS endpoint; every wait is bounded.
@Suite(.timeLimit(.minutes(2))) struct UploadGiveUpTests {
    let victim = UploadObject(session: 1, track: "video", number: 1002)

    static func dashManifest(_ type: String) -> [UInt8] {
        Array(#"<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="\#(type)"/>"#.utf8)
    }

    /// One segment answered 400 forever, everything else stored. With `dash`, the session is framed by its two
    /// manifests (CMAF Interface-2): the static one waits for every segment, so the give-up must wake its lane.
    @Test(arguments: [false, true]) func aSegmentRefusedForGoodIsGivenUpAndEverythingElseArrives(dash: Bool) async throws {
        let setup = try await FaultTests.Setup("giveup\(dash)")
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(400), times: 10_000, matching: victim.relativePath)
        let server = try await setup.endpoint.start(pki: setup.pki)
        let connection = "give-up-\(UUID())"
        let givenUpCount = MetricsProbe(counter: "pushav_upload_objects_given_up_total", connection: connection)
        let log = LogRecorder()
        let policy = UploadRun.fastPolicy()
        var events = setup.media.events
        var expected = setup.media.objects.map { ($0.object, $0.bytes) }
        if dash {
            let dynamic = Self.dashManifest("dynamic"), final = Self.dashManifest("static")
            events.insert(.manifest(session: 1, isFinal: false, bytes: dynamic), at: 0)
            let finished = try #require(events.firstIndex { if case .sessionFinished = $0 { true } else { false } })
            events.insert(.manifest(session: 1, isFinal: true, bytes: final), at: finished)
            expected.append((.manifest(session: 1, isFinal: true), final))
        }
        let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: setup.pki.clientMaterial,
                                      spool: setup.directory.appendingPathComponent("spool"), policy: policy,
                                      connection: connection, logger: Logger(label: "give-up") { _ in log })
        try await run.feed(events)
        let outcome = await Result.awaiting {
            try await run.finish(within: .seconds(30)) {
                let count = setup.endpoint.arrivals.count
                return count > 200 ? "storm: \(count) PUTs" : nil
            }
        }
        await server.stop()
        let summary = try outcome.get()

        let arrivals = setup.endpoint.arrivals
        let victimAttempts = arrivals.filter { $0.path == victim.relativePath }
        #expect(victimAttempts.count == policy.maximumRejections && victimAttempts.allSatisfy { $0.status == 400 },
                "\(victimAttempts.map(\.status))")
        #expect(summary.givenUp == 1 && summary.givenUpObjects == [victim], "\(summary)")
        #expect(summary.failure == nil && summary.lost == 0 && summary.complete, "\(summary)")
        #expect(givenUpCount.increase == 1)

        // Every other object arrived byte for byte; the victim never did.
        for (object, bytes) in expected where object != victim {
            let stored = FileManager.default.contents(atPath: setup.root.appendingPathComponent(object.relativePath).path)
            #expect(stored.map(Fixtures.sha256) == Fixtures.sha256(bytes), "\(object)")
        }
        #expect(!FileManager.default.fileExists(atPath: setup.root.appendingPathComponent(victim.relativePath).path))
        let laterSegments = arrivals.filter { $0.path.contains("/segment_") && $0.path > victim.relativePath && $0.status == 201 }
        #expect(!laterSegments.isEmpty, "the lane went on after the victim: \(arrivals.map(\.path))")
        if dash {
            let lastVictimAttempt = try #require(arrivals.lastIndex { $0.path == victim.relativePath })
            let manifests = arrivals.enumerated().filter { $0.element.path == "session_1/index.mpd" && (200..<300).contains($0.element.status) }
            #expect(manifests.count == 2 && manifests.last!.offset > lastVictimAttempt,
                    "the static manifest follows the give-up: \(arrivals.map { "\($0.status) \($0.path)" })")
        }

        let errors = log.allWithMetadata.filter { $0.hasPrefix("upload given up") }
        #expect(errors.count == 1, "\(log.allWithMetadata)")
        for field in ["connection=\(connection)", "session=1", "track=video", "object=\(victim.relativePath)", "status=HTTP 400"] {
            #expect(errors.first?.contains(field) == true, "\(field) in \(errors)")
        }

        let spool = run.uploader.spool
        #expect(try await !spool.isBusy(connection: connection))
        #expect(await !run.uploader.isBusy())
        #expect(try await spool.sessionDelivery(1, connection: connection) == .givenUp([victim]))
        #expect(try await !spool.isSessionDelivered(1, connection: connection), "a session missing a segment is not delivered")
        let recorded = try spool.givenUpObjects(connection: connection)
        #expect(recorded.map(\.object) == [victim] && recorded.first?.reason.contains("HTTP 400") == true, "\(recorded)")
        #expect(try await spool.statistics().bytes == 0, "the given-up file and the finished session's headers are gone")
    }

    /// `pushav upload` on a spool holding a segment the ingest refuses for good: everything else is delivered, and
    /// the run exits non-zero with a line naming the given-up segment (a CLI run must not exit 0 without it).
    @Test func pushavUploadExitsNonZeroNamingAGivenUpSegment() async throws {
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(415), times: 10_000, matching: victim.relativePath)
        let server = try await setup.endpoint.start(pki: setup.pki)
        let url = "https://localhost:\(server.port)/"
        let outcome = await Result.awaiting {
            do {
                let spool = try SegmentSpool(directory: setup.directory.appendingPathComponent("spool"), logger: .quiet)
                for object in setup.media.objects { try await spool.store(object.bytes, for: object.object, connection: url) }
                try await spool.finishSession(1, connection: url)
            }
            return try await PushavProcess.run(
                ["upload", "--segment-duration", "4000", "--max-backoff", "50"] + PersistentFailureTests.pushArguments(setup, port: server.port),
                log: setup.directory.appendingPathComponent("upload.log")
            ) {
                let count = setup.endpoint.arrivals.count
                return count > 200 ? "storm: \(count) PUTs" : nil
            }
        }
        await server.stop()
        let result = try outcome.get()
        #expect(result.status != 0, "\(result.output)")
        let errorLine = result.output.split(separator: "\n").first { $0.hasPrefix("Error:") }.map(String.init) ?? ""
        #expect(errorLine.contains("given up") && errorLine.contains(victim.relativePath), "\(result.output)")
        #expect(setup.endpoint.arrivals.filter { $0.path == victim.relativePath }.count == UploadPolicy(segmentDuration: .seconds(4)).maximumRejections)
        // A request the loaded machine answered after the client's deadline is sent again: compare what was stored,
        // not how often.
        let others = setup.media.objects.map(\.object).filter { $0 != victim }.map(\.relativePath)
        #expect(Set(setup.endpoint.storedPaths) == Set(others), "\(setup.endpoint.storedPaths)")
    }

    /// 401 for the first seven requests (more than `maximumAuthFailures`, 4 in the fast policy), then accepted: the
    /// uploader never stops, the gauge goes to 1 once and back to 0 with the first 2xx, and everything arrives.
    @Test func refusedAuthenticationIsReportedWhileRetryingAndClearedByTheFirstSuccess() async throws {
        let backend = MetricsProbe.backend  // before the uploader makes its gauge
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(401), times: 7)
        let server = try await setup.endpoint.start(pki: setup.pki)
        let connection = "auth-\(UUID())"
        let log = LogRecorder()
        let policy = UploadRun.fastPolicy()
        #expect(policy.maximumAuthFailures < 7)
        let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: setup.pki.clientMaterial,
                                      spool: setup.directory.appendingPathComponent("spool"), policy: policy,
                                      connection: connection, logger: Logger(label: "auth") { _ in log })
        try await run.feed(setup.media.events)
        let outcome = await Result.awaiting { try await run.finish(within: .seconds(30)) { nil } }
        await server.stop()
        let summary = try outcome.get()

        #expect(summary.failure == nil && summary.complete && summary.givenUp == 0, "\(summary)")
        #expect(setup.endpoint.pendingFaults == 0)
        #expect(setup.endpoint.arrivals.prefix(7).allSatisfy { $0.status == 401 })
        expectDelivered(setup.media, under: setup.root)
        let gauge = try backend.expectGauge("pushav_upload_connection_failed", [("connection", connection)])
        #expect(gauge.values == [1, 0])
        let messages = log.all
        let refused = messages.indices.filter { messages[$0].hasPrefix("upload connection failed: authentication refused") }
        let accepted = messages.indices.filter { messages[$0] == "authentication accepted again" }
        #expect(refused.count == 1 && accepted.count == 1 && refused[0] < accepted[0], "\(messages)")
        #expect(try await !run.uploader.spool.isBusy(connection: connection))
    }
}
