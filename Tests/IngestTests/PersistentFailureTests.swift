import Foundation
@testable import Ingest
import IngestServer
import Metrics
import MetricsTestKit
import Synchronization
import Testing

/// Failures that do not go away: an endpoint that refuses every segment with 412, a spooled file that cannot be read,
/// a segment the spool cannot write. Each must back off, count, give up per the retry budget and fail loudly — never
/// flood the endpoint, spin, or exit 0 after losing data. Every wait is bounded, so a regression fails instead of hanging.
@Suite(.timeLimit(.minutes(2))) struct PersistentFailureTests {
    let victim = UploadObject(session: 1, track: "video", number: 1002)

    /// An endpoint that stores headers and answers 412 to every segment (the issue's 8,227 PUTs in 20 s): the lane
    /// resends the header once for free, then backs off with growing delays and gives up after the budget.
    @Test func segmentsRefusedWith412AfterTheHeaderAreBackedOffAndGivenUp() async throws {
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(412), times: 10_000, matching: ".m4s")
        let server = try await setup.endpoint.start(pki: setup.pki)
        let budget = 5
        var policy = UploadRun.fastPolicy()
        policy.initialBackoff = .milliseconds(40)
        policy.maximumBackoff = .seconds(1)
        policy.retryBudget = budget
        let connection = "storm-\(UUID())"
        let retries = MetricsProbe(counter: "pushav_upload_retries_total", connection: connection)
        let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: setup.pki.clientMaterial,
                                      spool: setup.directory.appendingPathComponent("spool"), policy: policy, connection: connection)
        try await run.feed(setup.media.events)
        let started = ContinuousClock.now
        let outcome = await Result.awaiting {
            try await run.finish(within: .seconds(30)) {
                let count = setup.endpoint.arrivals.count
                return count > 200 ? "storm: \(count) PUTs in \(ContinuousClock.now - started)" : nil
            }
        }
        await server.stop()
        let summary = try outcome.get()

        let arrivals = setup.endpoint.arrivals
        let segmentPUTs = arrivals.filter { $0.path.hasSuffix(".m4s") }
        #expect(segmentPUTs.count == budget && segmentPUTs.allSatisfy { $0.status == 412 && $0.path == "session_1/video/segment_1001.m4s" },
                "\(segmentPUTs.map { "\($0.status) \($0.path)" })")
        #expect(arrivals.count <= 2 * (budget + 1), "\(arrivals.count) PUTs")
        #expect(arrivals.filter { $0.path.hasSuffix(".init") }.count == budget, "the header first, then once before each retry")
        // The first 412 is answered at once; after the k-th (k ≥ 2) the lane waits backoff(k−1), at least
        // initial·2^(k−2)·(1−jitter): 20, 40, 80 ms here — non-zero and doubling.
        let times = segmentPUTs.map(\.time)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        for (index, gap) in gaps.enumerated().dropFirst() {
            let least = policy.initialBackoff * (1 << (index - 1)) * (1 - policy.jitter)
            #expect(gap >= least, "delay before 412 number \(index + 2): \(gap), expected at least \(least)")
        }
        #expect(summary.failure?.contains("retry budget spent") == true && summary.failure?.contains("HTTP 412") == true,
                "\(summary.failure ?? "no failure")")
        #expect(!summary.complete)
        #expect(summary.retries == budget - 1)
        #expect(retries.increase == budget - 1)
        #expect(try await run.uploader.spool.statistics().queueDepth == setup.media.objects.count - 1, "the spool keeps every segment")
    }

    /// The CLI as the issue ran it: `pushav record --push` against that endpoint exits non-zero, names the 412, and
    /// sends about what the budget allows.
    @Test func recordPushAgainstAnEndpointRefusingEverySegmentExitsNonZero() async throws {
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        setup.endpoint.inject(.status(412), times: 10_000, matching: ".m4s")
        let server = try await setup.endpoint.start(pki: setup.pki)
        let budget = 3
        let input = try Self.writeClip(in: setup.directory)
        let outcome = await Result.awaiting {
            try await PushavProcess.run(
                ["record", input.path, "--out", setup.directory.appendingPathComponent("out").path, "--trigger", "continuous",
                 // 4 s segments: the request deadline follows the segment duration (2 × 4 s), so a loaded CI machine whose
                 // in-process endpoint answers the header late still gets it there (with 1 s segments its 2 s deadline
                 // ran out three times and no segment was ever sent).
                 "--segment-duration", "4000", "--no-audio", "--no-clip", "--retry-budget", "\(budget)", "--max-backoff", "300"]
                    + Self.pushArguments(setup, port: server.port),
                log: setup.directory.appendingPathComponent("record.log")
            ) {
                let count = setup.endpoint.arrivals.count
                return count > 200 ? "storm: \(count) PUTs" : nil
            }
        }
        await server.stop()
        let result = try outcome.get()
        let arrivals = setup.endpoint.arrivals
        #expect(result.status != 0, "\(result.output)")
        #expect(result.output.contains("retry budget spent") && result.output.contains("HTTP 412"), "\(result.output)")
        // At most one segment PUT per attempt of the budget (an attempt lost to a timeout on a loaded machine never
        // arrives, so fewer is possible); never a storm.
        let segmentPUTs = arrivals.filter { $0.path.hasSuffix(".m4s") }.count
        #expect((1...budget).contains(segmentPUTs), "\(segmentPUTs) segment PUTs")
        #expect(arrivals.count <= 2 * (budget + 1), "\(arrivals.count) PUTs")
    }

    /// A journalled segment whose file cannot be read (replaced by a directory: tests run as root, so chmod 000 would
    /// not stop a read): the lane backs off, counts every failed read, gives up per the budget and names the file;
    /// `pushav upload` on that spool exits non-zero.
    @Test func anUnreadableSpooledSegmentIsRetriedWithBackoffThenGivenUp() async throws {
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let server = try await setup.endpoint.start(pki: setup.pki)
        let url = "https://localhost:\(server.port)/"
        let spoolDirectory = setup.directory.appendingPathComponent("spool")
        let budget = 4
        var policy = UploadRun.fastPolicy()
        policy.initialBackoff = .milliseconds(20)
        policy.maximumBackoff = .seconds(1)
        policy.retryBudget = budget
        let readFailures = MetricsProbe(counter: "pushav_spool_read_failures_total", connection: url)
        let started = ContinuousClock.now
        let outcome = await Result.awaiting {
            let spool = try SegmentSpool(directory: spoolDirectory, logger: .quiet)
            for object in setup.media.objects { try await spool.store(object.bytes, for: object.object, connection: url) }
            try await spool.finishSession(1, connection: url)
            let file = spool.fileURL(connection: url, object: victim)
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
            let run = try UploadRun.start(url: url, tls: setup.pki.clientMaterial, spool: spool, policy: policy, connection: url)
            return try await run.finish(within: .seconds(20)) { nil }
        }
        let elapsed = ContinuousClock.now - started
        let summary = try outcome.get()
        #expect(summary.failure?.contains("retry budget spent") == true && summary.failure?.contains("segment_1002.m4s unreadable") == true,
                "\(summary.failure ?? "no failure")")
        #expect(!summary.complete)
        #expect(readFailures.increase == budget, "one counted read per attempt, no spinning")
        // The victim's attempts after the first, at least. Delivery is at-least-once: on a loaded machine a readable
        // object was once sent twice (the header stored twice, one retry more, the test run beside 240 others); the
        // victim's own attempts are pinned by `readFailures` above, and each readable object arrives.
        #expect(summary.retries >= budget - 1)
        // Backoff before attempts 2, 3 and 4: at least 10 + 20 + 40 ms.
        #expect(elapsed >= .milliseconds(70), "\(elapsed)")
        #expect(Set(setup.endpoint.storedPaths) == ["session_1/video/video.init", "session_1/video/segment_1001.m4s"],
                "\(setup.endpoint.storedPaths)")

        let replay = try await PushavProcess.run(
            ["upload", "--segment-duration", "1000", "--retry-budget", "2", "--max-backoff", "50"] + Self.pushArguments(setup, port: server.port),
            log: setup.directory.appendingPathComponent("upload.log")
        ) { nil }
        await server.stop()
        #expect(replay.status != 0 && replay.output.contains("segment_1002.m4s unreadable"), "\(replay.output)")
    }

    /// A spool whose segment a power failure cut short (written without its fsync, the file's length reached the disk
    /// and not all of its data): `pushav upload` delivers the rest, never the broken object, and exits non-zero naming
    /// it as lost. (Default timeouts and a large retry budget: the rest must get through on a loaded machine.)
    @Test func anObjectAPowerFailureCutShortIsNamedAndTheUploadFails() async throws {
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let server = try await setup.endpoint.start(pki: setup.pki)
        let url = "https://localhost:\(server.port)/"
        let victim = UploadObject(session: 1, track: "video", number: 1002)
        do {
            let spool = try SegmentSpool(directory: setup.directory.appendingPathComponent("spool"), logger: .quiet)
            for object in setup.media.objects { try await spool.store(object.bytes, for: object.object, connection: url) }
            try await spool.finishSession(1, connection: url)
            let file = spool.fileURL(connection: url, object: victim)
            let bytes = try Data(contentsOf: file)
            try bytes.prefix(bytes.count / 2).write(to: file)
        }
        let replay = try await PushavProcess.run(
            ["upload", "--retry-budget", "20", "--max-backoff", "200"] + Self.pushArguments(setup, port: server.port),
            log: setup.directory.appendingPathComponent("upload.log")
        ) { nil }
        await server.stop()
        #expect(replay.status != 0, "\(replay.output)")
        #expect(replay.output.contains("1 object(s) lost to a power failure") && replay.output.contains("segment_1002.m4s"),
                "\(replay.output)")
        #expect(!setup.endpoint.storedPaths.contains("session_1/video/segment_1002.m4s"))
        #expect(setup.endpoint.storedPaths.contains("session_1/video/segment_1003.m4s"), "\(setup.endpoint.storedPaths)")
    }

    /// A segment the spool cannot write (a directory sits where its file goes: the final rename fails even for root)
    /// is counted and, unless a live upload of it was already under way and delivers it, lost: the summary names it
    /// and everything else is still delivered.
    @Test(arguments: [false, true]) func aSegmentTheSpoolCannotWriteIsCountedAndLostUnlessStreamedLive(streamedLive: Bool) async throws {
        let setup = try await FaultTests.Setup("unwritable\(streamedLive)")
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let server = try await setup.endpoint.start(pki: setup.pki)
        let connection = "unwritable-\(UUID())"
        let writeFailures = MetricsProbe(counter: "pushav_spool_write_failures_total", connection: connection)
        let outcome = await Result.awaiting { () async throws -> (UploadSummary, [UploadObject]) in
            let spool = try SegmentSpool(directory: setup.directory.appendingPathComponent("spool"), logger: .quiet)
            try FileManager.default.createDirectory(at: spool.fileURL(connection: connection, object: victim), withIntermediateDirectories: true)
            let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: setup.pki.clientMaterial, spool: spool,
                                          connection: connection)
            var refused: [UploadObject] = []
            for event in setup.media.events {
                switch event {
                case .chunk where !streamedLive:
                    continue  // no live uploads: the spool is the only way
                case .segment(_, _, victim.number, _) where streamedLive:
                    // The lane, caught up, is streaming the victim from its chunk when the spool refuses it.
                    try await Fixtures.waitUntil("\(victim) streaming") { setup.endpoint.started.contains(victim.relativePath) }
                default:
                    break
                }
                do {
                    try await run.uploader.handle(event)
                } catch {
                    if case .segment(let session, let track, let number, _) = event {
                        refused.append(UploadObject(session: session, track: track, number: number))
                    }
                }
            }
            return (try await run.finish(within: .seconds(30)) { nil }, refused)
        }
        await server.stop()
        let (summary, refused) = try outcome.get()
        #expect(refused == [victim], "handle() throws for that segment only")
        #expect(writeFailures.increase == 1)
        #expect(summary.failure == nil && summary.complete, "everything else is delivered")
        let others = setup.media.objects.map(\.object).filter { $0 != victim }.map(\.relativePath)
        if streamedLive {
            #expect(summary.lost == 0 && summary.lostObjects.isEmpty)
            #expect(setup.endpoint.storedPaths == setup.media.objects.map(\.object.relativePath))
            expectDelivered(setup.media, under: setup.root)
        } else {
            #expect(summary.lost == 1 && summary.lostObjects == [victim])
            #expect(setup.endpoint.storedPaths == others)
        }
    }

    /// `pushav record --push` losing a segment to a failed spool write exits non-zero with a line naming it. The
    /// endpoint is down while recording, so no live upload can rescue the segment; it comes up once all is spooled.
    @Test func recordPushExitsNonZeroNamingASegmentItCouldNotSpool() async throws {
        let setup = try await FaultTests.Setup()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let port = try Fixtures.freePort()
        let spoolDirectory = setup.directory.appendingPathComponent("spool")
        let input = try Self.writeClip(in: setup.directory)
        do {
            let spool = try SegmentSpool(directory: spoolDirectory, logger: .quiet)
            try FileManager.default.createDirectory(at: spool.fileURL(connection: "https://localhost:\(port)/", object: victim),
                                                    withIntermediateDirectories: true)
        }
        let lastSegment = UploadObject(session: 1, track: "video", number: 1004)
        var server: RunningServer?
        let outcome = await Result.awaiting {
            try await PushavProcess.run(
                ["record", input.path, "--out", setup.directory.appendingPathComponent("out").path, "--trigger", "continuous",
                 "--segment-duration", "1000", "--no-audio", "--no-clip", "--retry-budget", "100000", "--max-backoff", "50"]
                    + Self.pushArguments(setup, port: port),
                log: setup.directory.appendingPathComponent("record.log")
            ) {
                if server == nil {
                    let spooled = FileManager.default.enumerator(atPath: spoolDirectory.appendingPathComponent("objects").path)?
                        .allObjects as? [String] ?? []
                    if spooled.contains(where: { $0.hasSuffix(lastSegment.spoolFileName) }) {
                        server = try await setup.endpoint.start(pki: setup.pki, port: port)
                    }
                }
                return nil
            }
        }
        await server?.stop()
        let result = try outcome.get()
        #expect(result.status != 0, "\(result.output)")
        let errorLine = result.output.split(separator: "\n").first { $0.hasPrefix("Error:") }.map(String.init) ?? ""
        #expect(errorLine.contains("lost") && errorLine.contains(victim.relativePath), "\(result.output)")
        let stored = setup.endpoint.storedPaths
        #expect(stored.contains("session_1/video/segment_1001.m4s") && stored.contains(lastSegment.relativePath)
                && !stored.contains(victim.relativePath), "\(stored)")
    }

    static func pushArguments(_ setup: FaultTests.Setup, port: Int) -> [String] {
        ["--push", "https://localhost:\(port)/", "--ca", setup.pki.path("ca.pem"), "--cert", setup.pki.path("client.pem"),
         "--key", setup.pki.path("client.key"), "--spool", setup.directory.appendingPathComponent("spool").path]
    }

    /// Four seconds of generated video: four 1 s segments.
    static func writeClip(in directory: URL) throws -> URL {
        let input = directory.appendingPathComponent("input.y4m")
        _ = FileManager.default.createFile(atPath: input.path, contents: nil)
        let handle = try FileHandle(forWritingTo: input)
        defer { try? handle.close() }
        try SampleMedia.writeY4M(to: handle, frames: 0..<100, header: true)
        return input
    }
}

/// swift-metrics' backend for the tests. It can be bootstrapped once per process and counters made before that stay
/// no-ops, so a probe is created before the uploader it watches; it reads how much a per-connection counter grew.
struct MetricsProbe {
    static let backend: TestMetrics = {
        let metrics = TestMetrics()
        MetricsSystem.bootstrap(metrics)
        return metrics
    }()

    let label: String
    let dimensions: [(String, String)]
    private let before: Int64

    init(counter label: String, connection: String) {
        self.label = label
        dimensions = [("connection", connection)]
        before = Self.total(label, dimensions)
    }

    var increase: Int { Int(Self.total(label, dimensions) - before) }

    private static func total(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
        (try? backend.expectCounter(label, dimensions).totalValue) ?? 0
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async body, so cleanup (stopping a server) can run before the error is rethrown.
    static func awaiting(_ body: () async throws -> Success) async -> Result {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }
}

extension UploadRun {
    /// ``finish()`` with a bound: cancels the run and throws when `runaway` reports a reason or `timeout` passes.
    func finish(within timeout: Duration, failingIf runaway: () -> String?) async throws -> UploadSummary {
        uploader.finishWhenDrained()
        let result = SummaryBox()
        let running = task
        let waiter = Task { result.set(await running.value) }
        do {
            try await Fixtures.waitUntil("the uploader to finish", timeout: timeout) {
                if let reason = runaway() { throw TestFailure(reason) }
                return result.value != nil
            }
        } catch {
            running.cancel()
            await waiter.value
            throw error
        }
        return result.value!
    }
}

private final class SummaryBox: Sendable {
    private let storage = Mutex<UploadSummary?>(nil)
    var value: UploadSummary? { storage.withLock { $0 } }
    func set(_ summary: UploadSummary) { storage.withLock { $0 = summary } }
}

/// Runs `pushav` with a bound: output goes to `log` (a storm of log lines cannot fill a pipe), and the process is
/// killed when `runaway` (polled while waiting; it may also act, e.g. start a server) reports a reason or `timeout`
/// passes, which then fails the test.
enum PushavProcess {
    static func run(_ arguments: [String], log: URL, timeout: Duration = .seconds(60),
                    failingIf runaway: () async throws -> String?) async throws -> (status: Int32, output: String) {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = Fixtures.pushav
        process.arguments = arguments
        process.environment = Fixtures.isolatedEnvironment()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        do {
            try await Fixtures.waitUntil("pushav \(arguments.first ?? "") to exit", timeout: timeout) {
                if let reason = try await runaway() { throw TestFailure(reason) }
                return !process.isRunning
            }
        } catch {
            kill(process.processIdentifier, SIGKILL)
            try? await Fixtures.offPool { process.waitUntilExit() }
            throw error
        }
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }
}
