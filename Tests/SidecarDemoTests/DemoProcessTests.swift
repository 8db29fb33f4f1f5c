import Foundation
import Testing
import TestSupport

/// `pushav serve --demo` as a newcomer runs it: the real process, its own ingest, its printed curl example.
@Suite(.timeLimit(.minutes(2))) struct DemoProcessTests {
    /// With a duration it exits 0 by itself after printing the Motion transport's first recording (Begin, End, and the
    /// folder the ingest stored it in, which holds its CMAF header and segments). The curl example it prints, run as
    /// printed, allocates a second transport whose manual trigger records and is stored too.
    @Test func demoPrintsClipsAsTheyArriveAndExitsZeroAfterItsDuration() async throws {
        let directory = try TestPaths.scratchDirectory("demo")
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("demo")
        // TestMedia/a_720p30 moves 4.0–6.0 s into each 20 s pass: that clip ends (3 s + 2 s augmentations after the
        // last motion) and is delivered by about 12 s (17 s seen on a loaded machine); if it were still open at 20 s,
        // the shutdown would end it and deliver it within its grace.
        let demo = try ChildProcess.start(TestPaths.pushav.path,
                                          ["serve", "--demo", "--demo-duration", "20", "--state", state.path],
                                          log: directory.appendingPathComponent("demo.log"),
                                          environment: TestPaths.isolatedEnvironment())
        defer { demo.kill() }

        try await waitUntil("the demo's banner", demo) { $0.contains("Clips as they arrive") }
        let example = try #require(Self.curlExample(in: demo.output), "\(demo.output)")
        let answers = try await ChildProcess.output("/bin/sh", ["-c", example])
        #expect(answers.contains(#""connectionID":2"#), "\(answers)")

        #expect(try await demo.waitForExit(timeout: .seconds(60)), "\(demo.output)")
        let output = demo.output
        #expect(demo.exitedNormally && demo.status == 0, "\(output)")
        let motion = state.appendingPathComponent("ingest/cam1/motion/session_1")
        let byHand = state.appendingPathComponent("ingest/cam1/by-hand/session_1")
        for expected in [
            "Begin  connection 1 session 1 (motion)", "End    connection 1 session 1",
            "stored connection 1 session 1 in \(motion.path)/",
            "Begin  connection 2 session 1 (command, reason 0)", "End    connection 2 session 1",
            "stored connection 2 session 1 in \(byHand.path)/",
            "pushav serve --demo: stopped",
        ] {
            #expect(output.contains(expected), "missing \"\(expected)\" in:\n\(output)")
        }
        // What it says was stored is there: a header and at least one segment per track.
        for session in [motion, byHand] {
            let video = session.appendingPathComponent("video")
            let files = (try? FileManager.default.contentsOfDirectory(atPath: video.path)) ?? []
            #expect(files.contains("video.init") && files.contains { $0.hasSuffix(".m4s") }, "\(video.path): \(files)")
        }
    }

    /// `pushav serve --demo | head -3`: once `head` has its lines and goes, the demo ends as a pipeline expects — by
    /// SIGPIPE (status 141), without Foundation's "Fatal error … Broken pipe" and its backtrace (issue 51: it exited
    /// with status 132 after a 10 s register dump).
    @Test func demoEndsQuietlyWhenItsOutputIsClosed() async throws {
        let directory = try TestPaths.scratchDirectory("demo-pipe")
        defer { try? FileManager.default.removeItem(at: directory) }
        let errors = directory.appendingPathComponent("stderr")
        let script = #""$0" serve --demo --demo-duration 30 --state "$1" 2>"$2" | head -3 >/dev/null; echo "status=${PIPESTATUS[0]}""#
        let output = try await ChildProcess.output("/bin/bash", ["-c", script, TestPaths.pushav.path,
                                                                 directory.appendingPathComponent("demo").path, errors.path])
        let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(output.contains("status=141"), "\(output)\n\(stderr.suffix(3000))")
        #expect(!stderr.contains("Fatal error") && !stderr.contains("Broken pipe"), "\(stderr.suffix(3000))")
    }

    /// The shell commands between the banner's curl heading and the clip list (the `#` line is a comment).
    static func curlExample(in output: String) -> String? {
        guard let start = output.range(of: "Allocate a second transport by hand"),
              let end = output.range(of: "Clips as they arrive", range: start.upperBound..<output.endIndex)
        else { return nil }
        let block = output[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
        return block.joined(separator: "\n")
    }

    func waitUntil(_ what: String, _ process: ChildProcess, timeout: Duration = .seconds(30),
                   _ condition: (String) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(process.output) {
            guard process.isRunning else { throw DemoTestFailure("pushav exited before \(what): \(process.output)") }
            guard ContinuousClock.now < deadline else { throw DemoTestFailure("no \(what) within \(timeout): \(process.output)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

struct DemoTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
