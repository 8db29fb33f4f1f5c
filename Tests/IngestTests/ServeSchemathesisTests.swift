import Foundation
import Testing
import TestSupport

/// schemathesis (a third-party OpenAPI fuzzer, pinned in .venv by Scripts/setup) against the real `pushav serve`
/// with a bearer token: it reads the served `/openapi.json`, generates valid and invalid requests for every operation
/// and checks each answer (`--checks all`): never a 5xx; status, headers, content type and body as the document
/// says; invalid data refused; an undocumented method refused with 405 and `Allow`. Plays the media in real time, so
/// it is one of Scripts/test's serve suites.
@Suite(.serialized) struct ServeSchemathesisTests {
    static let token = "schemathesis-token-0123456789abcdef"
    /// A fixed number of examples per operation and phase and a fixed seed: the same requests on every run.
    static let examplesPerOperation = 40
    static let seed = 20_261_123
    /// The whole run's bound (it takes about 40 s on a 2-core machine). A bound of the test, not `--max-time`,
    /// which is a budget schemathesis keeps fuzzing until it has spent.
    static let timeLimit = Duration.seconds(300)
    /// Every documented operation but two: `/openapi.json`, which schemathesis does not test (it is the document),
    /// and the event stream, which never ends by itself, so each request of it would only end at the request
    /// timeout (and a run of such timeouts reads to schemathesis as a server that stopped answering). Its answers
    /// are EventStreamTests' and BadRequestTests' subject.
    static let operationsTested = 20

    /// What the command line cannot say. `camera` is pinned to the configured camera so that requests get past the
    /// lookup into the handlers (an unknown camera's 404 is BadRequestTests' subject). `positive_data_acceptance`
    /// also expects 400 and 422: a request that fits the schema can still break a rule the cluster checks across
    /// fields or against its state (a TLS endpoint that does not exist, a URL that is not https, a segment duration
    /// that is not a multiple of the key-frame interval), and the document gives those answers those statuses.
    static let configuration = """
        [parameters]
        "path.camera" = "cam1"

        [checks.positive_data_acceptance]
        expected-statuses = ["2xx", "400", "401", "404", "409", "422"]
        """

    @Test func servedAPIMatchesItsDocument() async throws {
        let schemathesis = TestPaths.packageRoot.appendingPathComponent(".venv/bin/schemathesis")
        try #require(FileManager.default.isExecutableFile(atPath: schemathesis.path), "\(schemathesis.path) is missing: run Scripts/setup")
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokenFile = directory.appendingPathComponent("api-token")
        let configFile = directory.appendingPathComponent("schemathesis.toml")
        let workDirectory = directory.appendingPathComponent("schemathesis")
        try await BlockingWork.run {
            try Data("\(Self.token)\n".utf8).write(to: tokenFile)
            try Data(Self.configuration.utf8).write(to: configFile)
            try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        }
        let serve = try await Serve(
            directory: directory, source: TestPaths.media("a_720p30_h264_main.mp4").path,
            settings: "tokenFile: \(tokenFile.path)", authorization: "Bearer \(Self.token)")
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = workDirectory.path
        let run: ChildProcess
        do {
            run = try ChildProcess.start(schemathesis.path, [
                "--config-file", configFile.path, "--no-color", "run", serve.api + "/openapi.json",
                "--header", "Authorization: Bearer \(Self.token)",
                "--exclude-path", "/v1/cameras/{camera}/events",
                "--checks", "all", "--max-examples", "\(Self.examplesPerOperation)", "--seed", "\(Self.seed)",
                "--generation-database", "none", "--workers", "1", "--request-timeout", "10",
            ], log: directory.appendingPathComponent("schemathesis.log"), environment: environment,
            currentDirectory: workDirectory)  // its caches (.hypothesis, .schemathesis) stay in the scratch folder
        } catch {
            try await serve.shutdown()
            throw error
        }
        let finished = try await run.waitForExit(timeout: Self.timeLimit)
        if !finished { run.kill() }
        let output = run.output
        let serverAlive = serve.process.isRunning
        try await serve.shutdown()
        #expect(finished, "schemathesis ran longer than \(Self.timeLimit):\n\(output)")
        #expect(run.exitedNormally && run.status == 0, "schemathesis exited with \(run.status):\n\(output)")
        #expect(serverAlive, "pushav serve exited during the run:\n\(serve.process.output)")
        #expect(!serve.process.output.contains("failed unexpectedly"), "a handler failed:\n\(serve.process.output)")
        #expect(output.contains("Tested: \(Self.operationsTested)"), "not every operation was tested:\n\(output)")
        // The figures, for the log: operations, test cases, time.
        let summary = output.split(separator: "\n").filter {
            $0.contains("Tested:") || $0.contains("generated,") || $0.contains(" in ") && $0.contains("=====")
        }
        print("schemathesis: \(summary.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; "))")
    }
}
