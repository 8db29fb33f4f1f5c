import Foundation
import Ingest
import IngestServer
import Testing

/// Faults at the endpoint must never lose a segment: after recovery everything spooled arrives byte-identical
/// and in order per track. Every test is bounded by short timeouts and millisecond backoff caps.
@Suite(.timeLimit(.minutes(2))) struct FaultTests {
    struct Setup {
        let directory: URL
        let pki: TestPKI
        let media: SampleMedia
        let root: URL
        let endpoint: ScriptedEndpoint

        init(_ label: String = #function, chunked: Bool = false) async throws {
            directory = try Fixtures.scratchDirectory(label)
            pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
            media = try await SampleMedia.make(chunked: chunked)
            root = directory.appendingPathComponent("received")
            endpoint = ScriptedEndpoint(root: root)
        }

        func upload(port: Int, policy: UploadPolicy = UploadRun.fastPolicy()) throws -> UploadRun {
            try UploadRun.start(url: "https://localhost:\(port)/", tls: pki.clientMaterial, spool: directory.appendingPathComponent("spool"),
                                policy: policy)
        }
    }

    @Test func serverErrorsForAWhile() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(500), times: 3)
        setup.endpoint.inject(.status(503), times: 3, matching: "segment_1002")
        let server = try await setup.endpoint.start(pki: setup.pki)
        let run = try setup.upload(port: server.port)
        try await run.feed(setup.media.events)
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        #expect(summary.retries == 6)
        #expect(setup.endpoint.pendingFaults == 0)
        expectDelivered(setup.media, under: setup.root)
        expectInOrder(setup.endpoint.storedPaths)
        await server.stop()
    }

    @Test func preconditionFailedOnceResendsTheHeaderThenTheSegment() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(412), matching: "segment_1002")
        let server = try await setup.endpoint.start(pki: setup.pki)
        let run = try setup.upload(port: server.port)
        try await run.feed(setup.media.events)
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        let paths = setup.endpoint.arrivals.map { "\($0.status) \($0.path)" }
        let failed = try #require(paths.firstIndex(of: "412 session_1/video/segment_1002.m4s"))
        #expect(Array(paths[(failed + 1)...].prefix(2)) == ["204 session_1/video/video.init", "201 session_1/video/segment_1002.m4s"])
        expectDelivered(setup.media, under: setup.root)
        await server.stop()
    }

    @Test func stallPastTheTimeoutIsRetried() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.stall, matching: "segment_1001")
        let server = try await setup.endpoint.start(pki: setup.pki)
        var policy = UploadRun.fastPolicy()
        policy.requestTimeout = .milliseconds(700)  // the endpoint stalls for 1.5 s
        let run = try setup.upload(port: server.port, policy: policy)
        try await run.feed(setup.media.events)
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        #expect(summary.retries >= 1)
        let attempts = setup.endpoint.arrivals.filter { $0.path.hasSuffix("segment_1001.m4s") }.map(\.status)
        #expect(attempts.first == 0 && attempts.dropFirst().contains(201), "stalled, then stored: \(attempts)")
        expectDelivered(setup.media, under: setup.root)
        expectInOrder(setup.endpoint.storedPaths)
        await server.stop()
    }

    /// The ingest stores the header but its answer is lost (the client times out), then refuses every copy (as the CSA
    /// test server in strict mode refuses a header twice): the header counts as delivered, unconfirmed — not given up —
    /// and everything after it arrives.
    @Test func copiesRefusedAfterALostAnswerCountAsDeliveredUnconfirmed() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.storeThenLoseTheAnswer, matching: "video.init")
        // More refusals than the uploader will take (3): a refusal whose answer is late counts as unanswered too.
        setup.endpoint.inject(.status(400), times: 6, matching: "video.init")
        let server = try await setup.endpoint.start(pki: setup.pki)
        var policy = UploadRun.fastPolicy()
        // Only the first attempt waits this long (its answer is held until the retry comes); the 400s are at once.
        policy.requestTimeout = .seconds(2)
        let run = try setup.upload(port: server.port, policy: policy)
        try await run.feed(setup.media.events)
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        #expect(summary.givenUp == 0 && summary.givenUpObjects.isEmpty, "given up: \(summary.givenUpObjects)")
        #expect(summary.unconfirmed == 1 && summary.unconfirmedObjects == [.header(session: 1, track: "video")],
                "unconfirmed: \(summary.unconfirmedObjects)")
        let attempts = setup.endpoint.arrivals.filter { $0.path.hasSuffix("video/video.init") }.map(\.status)
        #expect(attempts.count >= 4 && (200..<300).contains(attempts[0]) && attempts.dropFirst().allSatisfy { $0 == 400 },
                "stored, then three copies refused: \(attempts)")
        expectDelivered(setup.media, under: setup.root)
        expectInOrder(setup.endpoint.storedPaths)
        #expect(setup.endpoint.pendingFaults == 6 - (attempts.count - 1), "every refusal sent was one injected")
        await server.stop()
    }

    /// After a restart the first spooled object of a track may have reached the ingest just before the stop (sent,
    /// then killed before its journal commit). A strict ingest refuses the copy; that refusal is not the header given
    /// up (issue 47): it counts as delivered unconfirmed, and the session's segments follow. Before the fix the header
    /// was given up and every segment after it too (a 412 for a header given up is final).
    @Test func aRecoveredHeaderRefusedAsACopyCountsAsDeliveredUnconfirmed() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        // What an earlier run left: every object spooled a minute ago, none journalled as delivered.
        let spool = try SegmentSpool(directory: setup.directory.appendingPathComponent("spool"), logger: .quiet)
        let earlier = Date().addingTimeInterval(-60)
        for object in setup.media.objects { try await spool.store(object.bytes, for: object.object, connection: "test", now: earlier) }
        for session in Set(setup.media.objects.map(\.object.session)) { try await spool.finishSession(session, connection: "test") }
        setup.endpoint.inject(.status(400), times: 3, matching: "video.init")
        let server = try await setup.endpoint.start(pki: setup.pki)
        let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: setup.pki.clientMaterial, spool: spool)
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        #expect(summary.givenUp == 0 && summary.givenUpObjects.isEmpty, "given up: \(summary.givenUpObjects)")
        #expect(summary.unconfirmedObjects == [.header(session: 1, track: "video")], "unconfirmed: \(summary.unconfirmedObjects)")
        let segments = setup.media.objects.filter { !$0.object.isHeader && $0.object.track == "video" }.count
        let stored = setup.endpoint.storedPaths.filter { $0.contains("/video/") && $0.hasSuffix(".m4s") }.count
        #expect(stored == segments, "\(stored) of \(segments) video segments stored")
        #expect(setup.endpoint.pendingFaults == 0)
        await server.stop()
    }

    /// An object spooled by this uploader itself is no copy: refused for good, it is given up as before.
    @Test func anObjectSpooledAfterTheStartRefusedForGoodIsGivenUp() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(400), times: 3, matching: "video.init")
        let server = try await setup.endpoint.start(pki: setup.pki)
        let run = try setup.upload(port: server.port)
        try await run.feed(setup.media.events)
        let summary = await run.finish()
        #expect(summary.givenUpObjects.contains(.header(session: 1, track: "video")), "given up: \(summary.givenUpObjects)")
        #expect(summary.unconfirmed == 0)
        await server.stop()
    }

    /// Down (connection refused), then resetting every connection, then up: nothing lost, order kept.
    @Test func endpointDownThenResettingThenBack() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let port = try Fixtures.freePort()
        let run = try setup.upload(port: port)
        try await run.feed(setup.media.events)
        try await Fixtures.waitUntil("retries while down") { run.uploader.retryCount >= 3 }
        let resetter = try ResettingListener.start(port: port)
        let before = run.uploader.retryCount
        try await Fixtures.waitUntil("retries while resetting") { run.uploader.retryCount >= before + 3 }
        #expect(try await run.uploader.spool.statistics().queueDepth == setup.media.objects.count, "nothing delivered, nothing dropped")
        resetter.stop()
        let server = try await setup.endpoint.start(pki: setup.pki, port: port)
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        expectDelivered(setup.media, under: setup.root)
        expectInOrder(setup.endpoint.storedPaths)
        await server.stop()
    }

    /// A long outage must not delay recovery: once the endpoint is back, the next attempt comes within the uploader's
    /// own (capped) backoff. AsyncHTTPClient's pool would otherwise add its own connection backoff, which grows to a
    /// minute after about 30 refused connections.
    @Test func recoveryAfterALongOutageIsPacedByTheUploadersBackoff() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let port = try Fixtures.freePort()
        let run = try setup.upload(port: port)
        try await run.feed(setup.media.events)
        try await Fixtures.waitUntil("40 refused attempts", timeout: .seconds(60)) { run.uploader.retryCount >= 40 }
        let server = try await setup.endpoint.start(pki: setup.pki, port: port)
        let back = ContinuousClock.now
        try await Fixtures.waitUntil("a delivery after the endpoint is back", timeout: .seconds(60)) {
            !setup.endpoint.storedPaths.isEmpty
        }
        let waited = ContinuousClock.now - back
        // fastPolicy caps the backoff at 80 ms; 5 s leaves room for a TLS handshake on a loaded machine.
        #expect(waited < .seconds(5), "first delivery \(waited) after the endpoint came back")
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        expectDelivered(setup.media, under: setup.root)
        await server.stop()
    }

    /// 403 far past `maximumAuthFailures` never stops the uploader (a stopped daemon would hold its spool until
    /// restarted): it keeps retrying with the data kept, and delivers everything once the endpoint accepts it.
    @Test func repeatedForbiddenKeepsRetryingWithTheDataKeptUntilAccepted() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let refusals = 60
        setup.endpoint.inject(.status(403), times: refusals)
        let server = try await setup.endpoint.start(pki: setup.pki)
        let policy = UploadRun.fastPolicy()
        let run = try setup.upload(port: server.port, policy: policy)
        try await run.feed(setup.media.events)
        try await Fixtures.waitUntil("retries well past the authentication limit") {
            run.uploader.retryCount >= 3 * policy.maximumAuthFailures
        }
        let depth = try await run.uploader.spool.statistics().queueDepth
        let busy = await run.uploader.isBusy()
        if setup.endpoint.pendingFaults > 0 {  // still refusing after those reads: nothing could have been delivered
            #expect(depth == setup.media.objects.count && busy, "the data is kept while refused")
        }
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete, "\(summary)")
        #expect(summary.retries == refusals)
        #expect(setup.endpoint.pendingFaults == 0)
        expectDelivered(setup.media, under: setup.root)
        #expect(await !run.uploader.isBusy())
        await server.stop()
    }

    /// `kill -9` of a recording `pushav record --push` mid-clip (endpoint down), then `pushav upload` replays the spool.
    @Test(.timeLimit(.minutes(2))) func killDashNineMidClipThenRestartDeliversTheSpool() async throws {
        let setup = try await Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let port = try Fixtures.freePort()
        let fifo = setup.directory.appendingPathComponent("camera.y4m")
        guard mkfifo(fifo.path, 0o600) == 0 else { throw TestFailure("mkfifo failed") }
        let out = setup.directory.appendingPathComponent("out")
        let spool = setup.directory.appendingPathComponent("spool")
        let push = ["--push", "https://localhost:\(port)/", "--ca", setup.pki.path("ca.pem"), "--cert", setup.pki.path("client.pem"),
                    "--key", setup.pki.path("client.key"), "--spool", spool.path, "--max-backoff", "50"]
        let recorder = Process()
        recorder.executableURL = Fixtures.pushav
        recorder.arguments = ["record", fifo.path, "--out", out.path, "--trigger", "continuous", "--segment-duration", "1000", "--no-audio"] + push
        recorder.environment = Fixtures.isolatedEnvironment()
        recorder.standardOutput = FileHandle.nullDevice
        let log = setup.directory.appendingPathComponent("record.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        recorder.standardError = try FileHandle(forWritingTo: log)
        try recorder.run()
        // Opening the FIFO blocks until pushav opens it. Frames go in batches of one second (FFmpeg probes a few
        // seconds before the first packet) until segment 1002 is spooled; the clip stays open.
        let camera = try await Fixtures.offPool { try FileHandle(forWritingTo: fifo) }
        let spooledSegments = spool.appendingPathComponent("objects")
        var written = 0
        try await Fixtures.waitUntil("two segments spooled (log: \(log.path))") {
            let files = FileManager.default.enumerator(atPath: spooledSegments.path)?.allObjects as? [String] ?? []
            if files.contains(where: { $0.hasSuffix("segment_1002.m4s") }) { return true }
            if written < 25 * 20 {
                try SampleMedia.writeY4M(to: camera, frames: written..<(written + 25), header: written == 0)
                written += 25
            }
            return false
        }
        kill(recorder.processIdentifier, SIGKILL)
        recorder.waitUntilExit()
        try? camera.close()
        #expect(recorder.terminationReason == .uncaughtSignal)

        // Endpoint still down: a run with a small retry budget gives up with a non-zero exit and keeps the spool.
        let givingUp = try await Fixtures.run(Fixtures.pushav.path, ["upload", "--segment-duration", "1000", "--retry-budget", "2"] + push)
        #expect(givingUp.status != 0 && givingUp.output.contains("is kept"), "\(givingUp.output)")

        let server = try await IngestServer.startForTest(root: setup.root, pki: setup.pki, port: port)
        let replay = try await Fixtures.run(Fixtures.pushav.path, ["upload", "--segment-duration", "1000"] + push)
        #expect(replay.status == 0, "\(replay.output)")
        await server.stop()

        let recorded = out.appendingPathComponent("session_1/video")
        let received = setup.root.appendingPathComponent("session_1/video")
        let recordedSegments = try FileManager.default.contentsOfDirectory(atPath: recorded.path).filter { $0.hasPrefix("segment_") }.sorted()
        let receivedSegments = try FileManager.default.contentsOfDirectory(atPath: received.path).filter { $0.hasPrefix("segment_") }.sorted()
        #expect(receivedSegments.count >= 2 && receivedSegments == Array(recordedSegments.prefix(receivedSegments.count)),
                "recorded \(recordedSegments), received \(receivedSegments)")
        #expect(recordedSegments.count - receivedSegments.count <= 1, "at most the segment being written is lost")
        for name in receivedSegments + ["video.init"] {
            let a = FileManager.default.contents(atPath: recorded.appendingPathComponent(name).path)
            let b = FileManager.default.contents(atPath: received.appendingPathComponent(name).path)
            #expect(a != nil && a.map(Fixtures.sha256) == b.map(Fixtures.sha256), "\(name)")
        }
    }
}
