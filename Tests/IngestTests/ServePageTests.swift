import Foundation
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// `GET /` in a real headless Chromium (driven over the DevTools pipe) while the camera records, against the real
    /// `pushav serve`: a Motion transport records the looped file's motion and a Command transport is triggered while
    /// the page is open.
    ///
    /// - every delivered clip has a thumbnail that loads: `image/jpeg`, a JPEG whose SOF gives 320 px wide with the
    ///   video's 16:9 aspect ratio, and in the page a picture (not a flat grey) as the list's image;
    /// - the snapshot is a 640 px JPEG with the configured zone drawn over it, and the connections table lists both
    ///   transports;
    /// - a mouse click on the motion clip's timeline bar plays that clip from its start (the right source,
    ///   `currentTime` advancing) with its trigger marked, and seeks into it (byte ranges); Enter on the manual clip's bar, focused as a keyboard
    ///   user would, switches to that clip;
    /// - the event list shows the log (the motion clip's Begin, the zone's ZoneTriggered) and gains the manual
    ///   trigger's Begin while the test watches;
    /// - screenshots at 390 and 1280 px, light and dark, in `.build/test-artifacts/status-page-<width>-<scheme>.png`.
    @Test func statusPageShowsThumbnailsPlaysFromTheTimelineAndListsEvents() async throws {
        // A zone over the moving box's path, with a trigger: drawn over the snapshot, its events in the list.
        let zone = "zones: [{id: 1, name: door, polygon: [[180, 280], [980, 280], [980, 480], [180, 480]]}]"
        try await ServeScenario.run(camera: zone + "\n    audioStreamID: 2") { scenario in
            let (ingest, serve) = (scenario.ingest, scenario.serve)
            _ = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/createOrUpdateTrigger", JSON.text(["trigger": [
                "zoneID": 1, "initialDuration": 2, "augmentationDuration": 1, "maxDuration": 4, "blindDuration": 0]]))
            // The motion transport records the camera's sound as well: its clip must play with it.
            var motionOptions = scenario.options(
                path: "motion/", trigger: .motion(initial: 2, augmentation: 1, max: 4, blind: 0, sensitivity: 5, preRollMs: 2000))
            motionOptions["audioStreamID"] = 2
            let motion = try await serve.allocate(motionOptions)
            let manual = try await serve.allocate(scenario.options(path: "manual/", trigger: .command(preRollMs: 2000)))
            try await serve.setActive(motion)
            try await serve.setActive(manual)
            let motionClip = "cam1/\(motion)/1", manualClip = "cam1/\(manual)/1"
            // The looped file's motion (4–6 s into each pass) is recorded and delivered.
            try await Fixtures.waitUntil("the motion clip delivered and motion in the status", timeout: .seconds(45)) {
                let camera = try await serve.camera()
                let clips = camera["recentClips"] as? [[String: Any]] ?? []
                return clips.contains { $0["connectionID"] as? Int == motion && $0["delivered"] as? Bool == true }
                    && !(camera["recentMotion"] as? [[String: Any]] ?? []).isEmpty
            }
            try await Self.expectThumbnails(serve)
            let motionSeconds = try await Self.probedDuration(of: motionClip, serve: serve, scratch: ingest.directory)
            let (snapshotStatus, snapshot) = try await serve.bytes("/v1/cameras/cam1/snapshot.jpg")
            #expect(snapshotStatus == 200 && snapshot.contentType == "image/jpeg")
            #expect(JPEGHeader.size(of: snapshot.body).map { [$0.width, $0.height] } == [640, 360], "snapshot")

            let browser = try await ChromiumSession.start(profile: ingest.directory.appendingPathComponent("chromium"))
            do {
                try await browser.open(serve.api + "/")
                let card = "#camera-cam1"
                try await browser.waitUntil("the motion clip's bar and its thumbnail", """
                    document.querySelector('\(card) .clip-row button[data-clip="\(motionClip)"]')
                      && [...document.querySelectorAll('\(card) .clips img')].length > 0
                      && [...document.querySelectorAll('\(card) .clips img')].every((img) => img.complete && img.naturalWidth === 320)
                    """)
                // The thumbnail is a picture of the scene: its luma varies (a flat or grey-only image would not).
                let spread = try await browser.evaluate("""
                    (() => { const img = document.querySelector('\(card) .clips img'), c = document.createElement('canvas');
                      c.width = img.naturalWidth; c.height = img.naturalHeight; const g = c.getContext('2d'); g.drawImage(img, 0, 0);
                      const d = g.getImageData(0, 0, c.width, c.height).data; let sum = 0, sq = 0, n = 0;
                      for (let i = 0; i < d.length; i += 4) { const y = 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2]; sum += y; sq += y * y; n++; }
                      return Math.sqrt(sq / n - (sum / n) ** 2); })()
                    """) as? NSNumber
                #expect((spread?.doubleValue ?? 0) > 10, "thumbnail luma standard deviation \(String(describing: spread))")
                try await browser.waitUntil("both connections in the table and the snapshot loaded", """
                    document.querySelectorAll('\(card) tr[data-connection]').length === 2
                      && document.querySelector('\(card) .snapshot img').naturalWidth === 640
                      && document.querySelector('\(card) .state').dataset.state === 'streaming'
                    """)
                try await browser.waitUntil("the motion clip's Begin and the zone's event in the list, the zone drawn", """
                    [...document.querySelectorAll('#events-cam1 li')].map((li) => li.textContent).join('|')
                      .includes('Recording began: motion · connection \(motion) · session 1')
                      && document.querySelector('#events-cam1').textContent.includes('Motion in door')
                      && document.querySelectorAll('\(card) .snapshot polygon').length === 1
                    """)

                // A click on the clip's bar plays it from its start, its trigger marked.
                try await browser.click("\(card) .clip-row button[data-clip=\"\(motionClip)\"]")
                try await Self.waitForPlayback(of: motionClip, in: browser, withSound: true, seconds: motionSeconds)
                #expect(try await browser.evaluate("!document.querySelector('\(card) .scrub .trigger').hidden") as? Bool == true,
                        "no trigger mark")
                // Seeking: the player jumps into the clip — the route answers its byte ranges — and shows that picture.
                _ = try await browser.evaluate("""
                    (() => { const v = document.querySelector('\(card) .viewer video'); window.seekedTo = null;
                      v.addEventListener('seeked', () => { window.seekedTo = v.currentTime; }, { once: true });
                      v.currentTime = 2.5; return true; })()
                    """)
                try await browser.waitUntil("the clip seeked to 2.5 s", """
                    window.seekedTo !== null && Math.abs(window.seekedTo - 2.5) < 0.5
                      && document.querySelector('\(card) .viewer video').readyState >= 2
                    """)

                // While the page is open: a manual trigger appears in the event list, and its clip on the timeline.
                let entries = (try await browser.evaluate("document.querySelectorAll('#events-cam1 li').length") as? NSNumber)?.intValue ?? 0
                try await serve.trigger(manual, initial: 2, max: 3)
                try await browser.waitUntil("the manual trigger's Begin in the event list", """
                    document.querySelectorAll('#events-cam1 li').length > \(entries)
                      && document.querySelector('#events-cam1 li').textContent.includes('manual trigger (user initiated) · connection \(manual)')
                    """)
                // Keyboard: Enter on the manual clip's bar (once it has an MP4) switches the player to it.
                try await browser.waitUntil("the manual clip's bar", "document.querySelector('\(card) .clip-row button[data-clip=\"\(manualClip)\"]')",
                                            timeout: .seconds(30))
                try await browser.press("Enter", on: "\(card) .clip-row button[data-clip=\"\(manualClip)\"]")
                try await Self.waitForPlayback(of: manualClip, in: browser)
                try await Self.expectThumbnails(serve)

                let artifacts = TestPaths.packageRoot.appendingPathComponent(".build/test-artifacts")
                try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
                for width in [1280, 390] {
                    for dark in [false, true] {
                        let png = try await browser.screenshot(width: width, dark: dark)
                        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(width) px: \(png.count) bytes")
                        try png.write(to: artifacts.appendingPathComponent("status-page-\(width)-\(dark ? "dark" : "light").png"))
                    }
                }
                // At phone width nothing is wider than the screen (tables scroll inside their box).
                #expect(try await browser.evaluate("document.documentElement.scrollWidth <= 390") as? Bool == true, "horizontal scroll at 390 px")
            } catch {
                await browser.close()
                throw error
            }
            await browser.close()

            // The same page and clip in a WebKit engine (GStreamer's demuxer, not FFmpeg's): a click plays the
            // motion clip with its sound track, its length known from the header.
            let webkit = try await WebKitSession.start(logDirectory: ingest.directory.appendingPathComponent("webkit"))
            do {
                try await webkit.open(serve.api + "/")
                let bar = "#camera-cam1 .clip-row button[data-clip=\"\(motionClip)\"]"
                try await webkit.waitUntil("the motion clip's bar in WebKit", "document.querySelector(\(ChromiumSession.quoted(bar)))")
                try await webkit.click(bar)
                try await Self.waitForPlayback(of: motionClip, in: webkit, withSound: true, seconds: motionSeconds)
            } catch {
                let logs = webkit.output
                await webkit.close()
                throw TestFailure("\(error)\n\(logs)")
            }
            await webkit.close()
        }
    }

    /// Every delivered clip in `GET /v1/cameras` has a thumbnail: a JPEG 320 px wide with the video's aspect ratio.
    static func expectThumbnails(_ serve: Serve) async throws {
        let clips = try #require(try await serve.camera()["recentClips"] as? [[String: Any]])
        for clip in clips where clip["delivered"] as? Bool == true {
            let path = try #require(clip["thumbnail"] as? String, "no thumbnail: \(clip)")
            let (status, response) = try await serve.bytes(path)
            #expect(status == 200 && response.contentType == "image/jpeg", "\(path): \(status)")
            #expect(response.body.starts(with: [0xFF, 0xD8, 0xFF]), "\(path): no JPEG SOI marker")
            let size = try #require(JPEGHeader.size(of: response.body), "\(path): no SOF")
            // The test video is 1280×720.
            #expect(size.width == 320 && abs(Double(size.width) / Double(size.height) - 1280.0 / 720) < 0.02, "\(path): \(size)")
        }
    }

    /// Waits until the page's player plays `clip` (its MP4 as the source) and its time advances.
    /// Issue 48: a clip with sound plays its sound (Chromium counts the audio bytes it decoded), and the player
    /// knows the clip's length from its header — the duration FFmpeg reads from the same bytes — rather than
    /// learning it only at the end. `seconds` nil skips the duration check (a clip still being written).
    static func waitForPlayback(of clip: String, in browser: some PageBrowser, withSound: Bool = false,
                                seconds: Double? = nil) async throws {
        let parts = clip.split(separator: "/")
        let source = "/v1/cameras/\(parts[0])/clips/\(parts[1])/\(parts[2])"
        try await browser.waitUntil("\(clip) playing\(withSound ? " with sound" : "")\(seconds.map { ", \($0) s long" } ?? "")", """
            (() => { const v = document.querySelector('#camera-\(parts[0]) .viewer video');
              return v.dataset.clip === '\(clip)' && v.currentSrc.endsWith('\(source)') && !v.paused && v.currentTime > 0.3
                && (\(!withSound) || \(type(of: browser).playsSound))
                && (\(seconds == nil) || Math.abs(v.duration - \(seconds ?? 0)) < 0.1); })()
            """, timeout: .seconds(20))
    }

    /// The length of `clip` (`cam/connection/session`, one with sound) as ffprobe reads the bytes the clip route
    /// serves, which must hold a video and an audio stream.
    static func probedDuration(of clip: String, serve: Serve, scratch: URL) async throws -> Double {
        let parts = clip.split(separator: "/")
        let (status, fetched) = try await serve.bytes("/v1/cameras/\(parts[0])/clips/\(parts[1])/\(parts[2])")
        try #require(status == 200, "clip route: \(status)")
        let file = scratch.appendingPathComponent("probed-\(parts.joined(separator: "-")).mp4")
        try Data(fetched.body).write(to: file)
        let probe = try await ProcessRun.run(URL(fileURLWithPath: "/usr/bin/ffprobe"), [
            "-v", "error", "-show_entries", "format=duration:stream=codec_type", "-of", "csv=p=0", file.path,
        ])
        try #require(probe.succeeded, "\(probe.stderr)")
        let lines = probe.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("audio") && lines.contains("video"), "\(clip): \(lines)")
        return try #require(lines.compactMap(Double.init).first, "\(clip): no duration in \(lines)")
    }
}

/// A JPEG's picture size, read from its start-of-frame segment.
enum JPEGHeader {
    static func size(of bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard bytes.starts(with: [0xFF, 0xD8]) else { return nil }
        var index = 2
        while index + 9 < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            if marker == 0xFF { index += 1; continue }  // fill byte
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            // SOF0…SOF15 except DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (Int(bytes[index + 7]) << 8 | Int(bytes[index + 8]), Int(bytes[index + 5]) << 8 | Int(bytes[index + 6]))
            }
            index += 2 + length
        }
        return nil
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

/// A browser engine a page test drives: JavaScript polled until it holds.
protocol PageBrowser: Sendable {
    func waitUntil(_ what: String, _ expression: String, timeout: Duration) async throws
    /// A JavaScript condition on the `<video>` element `v`: true once the engine plays the source's sound.
    static var playsSound: String { get }
}

extension ChromiumSession: PageBrowser {
    /// Chromium counts the audio bytes its decoder consumed (muted output still decodes).
    static var playsSound: String { "v.webkitAudioDecodedByteCount > 0" }
}

extension WebKitSession: PageBrowser {
    /// WebKitGTK has no decoded-bytes counter; it lists the audio track GStreamer found and enabled.
    static var playsSound: String { "(v.audioTracks.length === 1 && v.audioTracks[0].enabled)" }
}
