import Foundation
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// `GET /` in a real headless Chromium while the camera records: the camera's state, motion and a delivered clip on
    /// the timeline, and the clip's player loaded with a duration. A screenshot is saved as a test artifact
    /// (`.build/test-artifacts/serve-page.png`).
    @Test func statusPageShowsMotionAndPlaysTheDeliveredClip() async throws {
        try await ServeScenario.run { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            let id = try await serve.allocate(scenario.options(path: "page/", trigger: .command(preRollMs: 2000)))
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 2, max: 4)
            try await events.wait("Begin and End", timeout: .seconds(20)) { $0.count >= 2 }
            // The clip is delivered, and the looped file's motion (4–6 s into each pass) has been seen.
            try await Fixtures.waitUntil("a delivered clip and a motion period in the status", timeout: .seconds(40)) {
                let camera = try await serve.camera()
                let clips = camera["recentClips"] as? [[String: Any]] ?? []
                let motion = camera["recentMotion"] as? [[String: Any]] ?? []
                return clips.first?["delivered"] as? Bool == true && clips.first?["clip"] is String && !motion.isEmpty
            }

            let dom = try await Chromium.dumpDOM(serve.api + "/", profile: ingest.directory.appendingPathComponent("chromium"))
            #expect(dom.contains(#"data-state="streaming""#), "\(dom)")
            #expect(dom.contains(#"class="motion""#), "no motion on the timeline: \(dom)")
            #expect(dom.contains(#"class="clip delivered""#), "no delivered clip on the timeline: \(dom)")
            let video = try #require(dom.firstMatch(of: /<video[^>]*>/).map { String($0.output) }, "no player: \(dom)")
            let readyState = video.firstMatch(of: /data-ready-state="(\d)"/).flatMap { Int($0.output.1) } ?? -1
            let duration = video.firstMatch(of: /data-duration="([0-9.]+)"/).flatMap { Double($0.output.1) } ?? 0
            #expect(readyState >= 2, "the clip did not load: \(video)")
            #expect(duration >= 2 && duration <= 8, "the clip's duration: \(video)")

            let artifacts = TestPaths.packageRoot.appendingPathComponent(".build/test-artifacts")
            try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
            let screenshot = artifacts.appendingPathComponent("serve-page.png")
            try? FileManager.default.removeItem(at: screenshot)
            try await Chromium.screenshot(serve.api + "/", to: screenshot, profile: ingest.directory.appendingPathComponent("chromium"))
            let png = try Data(contentsOf: screenshot)
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(png.count) bytes")
        }
    }
}

/// Debian's chromium, headless: what a page's DOM is once its scripts ran, and how it looks.
enum Chromium {
    /// The page after `budget` of virtual time (timers run, network and media load in real time).
    static func dumpDOM(_ url: String, profile: URL, budget: Duration = .seconds(15)) async throws -> String {
        try await run(["--virtual-time-budget=\(budget.milliseconds)", "--dump-dom", url], profile: profile)
    }

    static func screenshot(_ url: String, to file: URL, profile: URL, budget: Duration = .seconds(10)) async throws {
        _ = try await run(["--virtual-time-budget=\(budget.milliseconds)", "--window-size=1280,860",
                           "--screenshot=\(file.path)", url], profile: profile)
    }

    private static func run(_ arguments: [String], profile: URL) async throws -> String {
        // As root (CI) Chromium needs --no-sandbox; each run gets a profile of its own.
        let result = try await ProcessRun.run(URL(fileURLWithPath: "/usr/bin/chromium"), [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio",
            "--autoplay-policy=no-user-gesture-required", "--user-data-dir=\(profile.path)",
        ] + arguments)
        guard result.status == 0 else {
            throw TestFailure("chromium \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr.suffix(2000))")
        }
        return result.stdout
    }
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
