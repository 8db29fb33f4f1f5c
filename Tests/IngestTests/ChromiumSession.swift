import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Debian's headless Chromium driven over the DevTools protocol through `--remote-debugging-pipe`: the test sends
/// JSON commands on the browser's file descriptor 3 and reads answers and events on descriptor 4 (each message ends
/// with a NUL byte). One browser, one page: the test loads a page, reads it with JavaScript, clicks and types as a
/// user would (real input events, so a click is a user gesture), changes the window width and the colour scheme,
/// and takes screenshots — everything a page test needs in one browser start.
///
/// The reads happen on a thread of their own (blocking `read`), never on the cooperative pool. Every command has a
/// deadline; a browser that dies fails the waiting command instead of hanging the test.
final class ChromiumSession: Sendable {
    private let pid: pid_t
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private let state = Mutex(State())
    private let log: URL

    private struct State {
        var nextID = 0
        var waiting: [Int: CheckedContinuation<Data, any Error>] = [:]
        var closed: String?
        var sessionID: String?
    }

    /// Starts the browser (its output goes to `profile/chromium.log`) and attaches to its page.
    static func start(profile: URL) async throws -> ChromiumSession {
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        let session = try ChromiumSession(profile: profile)
        let targets = try await session.send("Target.getTargets", [:], toPage: false)
        let infos = (targets["targetInfos"] as? [[String: Any]]) ?? []
        guard let page = infos.first(where: { $0["type"] as? String == "page" })?["targetId"] as? String else {
            throw TestFailure("chromium has no page target: \(infos)")
        }
        let attached = try await session.send("Target.attachToTarget", ["targetId": page, "flatten": true], toPage: false)
        guard let id = attached["sessionId"] as? String else { throw TestFailure("no session for the page: \(attached)") }
        session.state.withLock { $0.sessionID = id }
        _ = try await session.send("Page.enable")
        _ = try await session.send("Runtime.enable")
        return session
    }

    private init(profile: URL) throws {
        log = profile.appendingPathComponent("chromium.log")
        var commands: [Int32] = [0, 0], answers: [Int32] = [0, 0]
        // Close-on-exec: only the browser gets these (as 3 and 4), not the other processes tests start.
        guard pipe(&commands) == 0, pipe(&answers) == 0 else { throw TestFailure("pipe: \(String(cString: strerror(errno)))") }
        for fd in commands + answers { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let arguments = [
            "/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio",
            "--autoplay-policy=no-user-gesture-required", "--remote-debugging-pipe", "--user-data-dir=\(profile.path)",
            "--window-size=1280,900", "--hide-scrollbars", "about:blank",
        ]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The browser reads commands on 3 and writes answers on 4 (dup2 clears close-on-exec on the copies).
        posix_spawn_file_actions_adddup2(&actions, commands[0], 3)
        posix_spawn_file_actions_adddup2(&actions, answers[1], 4)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, arguments[0], &actions, nil, argv, environ)
        Glibc.close(commands[0])
        Glibc.close(answers[1])
        guard spawned == 0 else {
            Glibc.close(commands[1])
            Glibc.close(answers[0])
            throw TestFailure("chromium could not start: \(String(cString: strerror(spawned)))")
        }
        pid = child
        toBrowser = commands[1]
        fromBrowser = answers[0]
        let thread = Thread { [self] in readAnswers() }
        thread.name = "chromium-devtools"
        thread.start()
    }

    /// Reads NUL-terminated messages until the browser closes its end; answers go to the command waiting for them.
    private func readAnswers() {
        var pending = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(fromBrowser, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            pending.append(contentsOf: buffer[0..<count])
            while let end = pending.firstIndex(of: 0) {
                let message = pending[pending.startIndex..<end]
                pending = Data(pending[(end + 1)...])
                guard let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any],
                      let id = object["id"] as? Int else { continue }  // an event: not waited for here
                let waiter = state.withLock { $0.waiting.removeValue(forKey: id) }
                waiter?.resume(returning: Data(message))
            }
        }
        Glibc.close(fromBrowser)
        let waiting = state.withLock { state in
            state.closed = "the browser closed its DevTools pipe (see \(log.path))"
            defer { state.waiting.removeAll() }
            return state.waiting.values
        }
        for waiter in waiting { waiter.resume(throwing: TestFailure("chromium exited")) }
    }

    /// Sends `method` (to the page unless `toPage` is false) and returns its `result`; throws its `error`, or after
    /// `timeout`.
    @discardableResult
    func send(_ method: String, _ params: [String: Any] = [:], toPage: Bool = true,
              timeout: Duration = .seconds(20)) async throws -> [String: Any] {
        let (id, sessionID) = state.withLock { state in
            state.nextID += 1
            return (state.nextID, state.sessionID)
        }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if toPage, let sessionID { message["sessionId"] = sessionID }
        var bytes = try JSONSerialization.data(withJSONObject: message)
        bytes.append(0)
        let answer: Data = try await withCheckedThrowingContinuation { continuation in
            let closed = state.withLock { state -> String? in
                if state.closed == nil { state.waiting[id] = continuation }
                return state.closed
            }
            if let closed {
                continuation.resume(throwing: TestFailure(closed))
                return
            }
            let written = bytes.withUnsafeBytes { raw in write(toBrowser, raw.baseAddress, raw.count) }
            if written != bytes.count, let waiter = state.withLock({ $0.waiting.removeValue(forKey: id) }) {
                waiter.resume(throwing: TestFailure("writing \(method) to chromium failed"))
            }
            Task {
                try? await Task.sleep(for: timeout)
                if let waiter = self.state.withLock({ $0.waiting.removeValue(forKey: id) }) {
                    waiter.resume(throwing: TestFailure("chromium did not answer \(method) within \(timeout)"))
                }
            }
        }
        let object = try JSONSerialization.jsonObject(with: answer) as? [String: Any] ?? [:]
        if let error = object["error"] { throw TestFailure("\(method): \(error)") }
        return object["result"] as? [String: Any] ?? [:]
    }

    /// Loads `url` and waits until its scripts can be evaluated.
    func open(_ url: String) async throws {
        try await send("Page.navigate", ["url": url])
        try await waitUntil("\(url) loaded", "document.readyState === 'complete'")
    }

    /// The value of a JavaScript expression (promises awaited), as JSON gives it.
    func evaluate(_ expression: String) async throws -> Any? {
        let result = try await send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] { throw TestFailure("\(expression): \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `expression` until it is true, failing after `timeout` with `what` and the last value.
    func waitUntil(_ what: String, _ expression: String, timeout: Duration = .seconds(20)) async throws {
        try await Fixtures.waitUntil(what, timeout: timeout) {
            try await self.evaluate("Boolean(\(expression))") as? Bool == true
        }
    }

    /// A real mouse click at the middle of the first element `selector` matches (scrolled into view first).
    func click(_ selector: String) async throws {
        let box = (try await evaluate("""
            (() => { const e = document.querySelector(\(Self.quoted(selector))); if (!e) return null;
              e.scrollIntoView({block: "center"}); const r = e.getBoundingClientRect();
              return [r.left + r.width / 2, r.top + r.height / 2]; })()
            """) as? [Any])?.compactMap { ($0 as? NSNumber)?.doubleValue }
        guard let box, box.count == 2 else { throw TestFailure("nothing to click: \(selector)") }
        for type in ["mousePressed", "mouseReleased"] {
            try await send("Input.dispatchMouseEvent", ["type": type, "x": box[0], "y": box[1], "button": "left", "clickCount": 1])
        }
    }

    /// Focuses the first element `selector` matches and presses a key on it (`Enter`, ` ` for Space), as a keyboard
    /// user would after tabbing to it.
    func press(_ key: String, on selector: String) async throws {
        guard try await evaluate("(() => { const e = document.querySelector(\(Self.quoted(selector))); if (!e) return false; "
                                 + "e.focus(); return document.activeElement === e; })()") as? Bool == true else {
            throw TestFailure("cannot focus \(selector)")
        }
        let code = key == " " ? "Space" : key
        let keyCode = key == " " ? 32 : 13
        try await send("Input.dispatchKeyEvent", ["type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": keyCode,
                                                 "text": key == " " ? " " : "\r"])
        try await send("Input.dispatchKeyEvent", ["type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": keyCode])
    }

    /// A PNG of the whole page at `width` CSS pixels, in the light or dark colour scheme.
    func screenshot(width: Int, dark: Bool) async throws -> Data {
        try await send("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": dark ? "dark" : "light"]]])
        try await send("Emulation.setDeviceMetricsOverride", ["width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600])
        // Layout at the new width and scheme is done once two animation frames have passed.
        _ = try await evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        let height = (try await evaluate("Math.ceil(document.documentElement.getBoundingClientRect().height)") as? NSNumber)?.intValue ?? 900
        try await send("Emulation.setDeviceMetricsOverride", ["width": width, "height": min(max(height, 200), 6000),
                                                             "deviceScaleFactor": 1, "mobile": width < 600])
        _ = try await evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        let shot = try await send("Page.captureScreenshot", ["format": "png"])
        guard let base64 = shot["data"] as? String, let png = Data(base64Encoded: base64) else { throw TestFailure("no screenshot") }
        return png
    }

    /// Closes the browser and reaps it (killed if it does not exit within 5 s).
    func close() async {
        _ = try? await send("Browser.close", toPage: false, timeout: .seconds(5))
        let deadline = ContinuousClock.now + .seconds(5)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        Glibc.close(toBrowser)
    }

    /// `text` as a JavaScript string literal.
    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast().description
    }
}
