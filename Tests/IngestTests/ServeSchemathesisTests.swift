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
    /// Each run's bound (together they take about a minute on a 2-core machine). A bound of the test, not
    /// `--max-time`, which is a budget schemathesis keeps fuzzing until it has spent.
    static let timeLimit = Duration.seconds(300)
    /// Every documented operation but `/openapi.json`, which schemathesis does not test (it is the document). The
    /// event stream gets a run of its own: it never ends by itself, so each accepted request of it lasts until the
    /// request timeout; that run reads one event at most and has few examples and a short timeout.
    static let operationsTested = 47
    static let streamExamples = 5

    /// What the command line cannot say. `camera` is pinned to the configured camera so that requests get past the
    /// lookup into the handlers (an unknown camera's 404 is BadRequestTests' subject). `positive_data_acceptance`
    /// also expects 400 and 422: a request that fits the schema can still break a rule the cluster checks across
    /// fields or against its state (a TLS endpoint that does not exist, a URL that is not https, a segment duration
    /// that is not a multiple of the key-frame interval), and the document gives those answers those statuses.
    /// `allow-extra-parameters = false`: an unknown header or query parameter is not invalid in HTTP, and the API
    /// ignores them as it ignores unknown body fields (README), so schemathesis does not send them as invalid data
    /// (its coverage phase did, for the event log's two optional headers).
    static let configuration = """
        max-stream-events = 1

        [generation]
        allow-extra-parameters = false

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
        /// One schemathesis run against the served document; its output.
        func schemathesisRun(_ name: String, _ arguments: [String]) async throws -> String {
            let run = try ChildProcess.start(schemathesis.path, [
                "--config-file", configFile.path, "--no-color", "run", serve.api + "/openapi.json",
                "--header", "Authorization: Bearer \(Self.token)", "--checks", "all", "--seed", "\(Self.seed)",
                "--generation-database", "none", "--workers", "1",
            ] + arguments, log: directory.appendingPathComponent("schemathesis-\(name).log"), environment: environment,
            currentDirectory: workDirectory)  // its caches (.hypothesis, .schemathesis) stay in the scratch folder
            let finished = try await run.waitForExit(timeout: Self.timeLimit)
            if !finished { run.kill() }
            let output = run.output
            #expect(finished, "schemathesis (\(name)) ran longer than \(Self.timeLimit):\n\(output)")
            #expect(run.exitedNormally && run.status == 0, "schemathesis (\(name)) exited with \(run.status):\n\(output)")
            // The figures, for the log: operations, test cases, time.
            let summary = output.split(separator: "\n").filter {
                $0.contains("Tested:") || $0.contains("generated,") || $0.contains("API Links:")
                    || $0.contains(" in ") && $0.contains("=====")
            }
            print("schemathesis (\(name)): \(summary.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; "))")
            return output
        }
        do {
            let operations = try await schemathesisRun("operations", [
                "--exclude-path", "/v1/cameras/{camera}/events",
                "--max-examples", "\(Self.examplesPerOperation)", "--request-timeout", "10",
            ])
            #expect(operations.contains("Tested: \(Self.operationsTested)"), "not every operation was tested:\n\(operations)")
            let stream = try await schemathesisRun("event stream", [
                "--include-path", "/v1/cameras/{camera}/events",
                "--max-examples", "\(Self.streamExamples)", "--request-timeout", "2",
                // The document's links (for the stateful phase) join other operations: none of them is selected here.
                "--phases", "examples,coverage,fuzzing",
            ])
            #expect(stream.contains("Tested: 1"), "the event stream was not tested:\n\(stream)")
        } catch {
            try await serve.shutdown()
            throw error
        }
        let serverAlive = serve.process.isRunning
        try await serve.shutdown()
        #expect(serverAlive, "pushav serve exited during the run:\n\(serve.process.output)")
        #expect(!serve.process.output.contains("failed unexpectedly"), "a handler failed:\n\(serve.process.output)")
    }
}
