import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TestSupport

/// A page in a WebKit engine: Debian's WebKitGTK MiniBrowser, driven over W3C WebDriver by `WebKitWebDriver`
/// (package `webkit2gtk-driver`) on an Xvfb display of its own. Safari's engine decodes media through GStreamer,
/// not FFmpeg as Chromium does, so a clip both play is one that more than one demuxer accepts.
///
/// One start, one page: open a URL, evaluate JavaScript, click an element (WebDriver's element click, a user
/// gesture), close. Every request has a deadline; the driver's and the display's output go to `logDirectory`.
final class WebKitSession: Sendable {
    private let display: ChildProcess
    private let driver: ChildProcess
    private let client: HTTPClient
    private let base: String
    private let session: String

    /// What MiniBrowser is called on this machine (its folder carries the multiarch triplet).
    static var miniBrowser: String? {
        let lib = URL(fileURLWithPath: "/usr/lib")
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        return folders.map { lib.appendingPathComponent($0).appendingPathComponent("webkit2gtk-4.1/MiniBrowser").path }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func start(logDirectory: URL) async throws -> WebKitSession {
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        guard let browser = miniBrowser else { throw TestFailure("no WebKitGTK MiniBrowser under /usr/lib/*/webkit2gtk-4.1") }
        let (display, number) = try await startDisplay(logDirectory: logDirectory)
        let port = try LocalPorts.freeTCPPort()
        var environment = TestPaths.isolatedEnvironment()
        environment["DISPLAY"] = ":\(number)"
        let driver: ChildProcess
        do {
            driver = try ChildProcess.start("/usr/bin/WebKitWebDriver", ["--port=\(port)"],
                                            log: logDirectory.appendingPathComponent("webdriver.log"), environment: environment)
        } catch {
            display.kill()
            throw error
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let base = "http://127.0.0.1:\(port)"
        do {
            try await Fixtures.waitUntil("WebKitWebDriver ready", timeout: .seconds(30)) {
                guard driver.isRunning else { throw TestFailure("WebKitWebDriver exited: \(driver.output)") }
                let status = try? await Self.request(client, .GET, base + "/status")
                return (status?["ready"] as? Bool) == true
            }
            let created = try await Self.request(client, .POST, base + "/session", [
                "capabilities": ["alwaysMatch": ["webkitgtk:browserOptions": ["binary": browser, "args": ["--automation"]]]],
            ])
            guard let session = created["sessionId"] as? String else { throw TestFailure("no WebDriver session: \(created)") }
            return WebKitSession(display: display, driver: driver, client: client, base: base, session: session)
        } catch {
            driver.kill()
            display.kill()
            try? await client.shutdown()
            throw error
        }
    }

    private init(display: ChildProcess, driver: ChildProcess, client: HTTPClient, base: String, session: String) {
        self.display = display
        self.driver = driver
        self.client = client
        self.base = base
        self.session = session
    }

    /// An Xvfb server on the first display number no other X server holds (its lock file says so; two starts that
    /// race for one number: the loser exits and the next number is tried). Ready once its socket exists.
    private static func startDisplay(logDirectory: URL) async throws -> (ChildProcess, Int) {
        let first = 100 + Int(getpid() % 400)
        for number in first..<(first + 50) where !FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") {
            let display = try ChildProcess.start("/usr/bin/Xvfb", [":\(number)", "-screen", "0", "1280x900x24", "-nolisten", "tcp"],
                                                 log: logDirectory.appendingPathComponent("xvfb-\(number).log"))
            let deadline = ContinuousClock.now + .seconds(20)
            while display.isRunning, ContinuousClock.now < deadline {
                if FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") { return (display, number) }
                try await Task.sleep(for: .milliseconds(20))  // polling for the socket, with a deadline
            }
            display.kill()
        }
        throw TestFailure("no Xvfb display could start (tried 50 numbers from \(first))")
    }

    func open(_ url: String) async throws {
        _ = try await command(.POST, "/url", ["url": url])
        try await waitUntil("\(url) loaded", "document.readyState === 'complete'")
    }

    /// The value of a JavaScript expression, as JSON gives it.
    func evaluate(_ expression: String) async throws -> Any? {
        try await command(.POST, "/execute/sync", ["script": "return (\(expression));", "args": []])
    }

    /// Polls `expression` until it is true, failing after `timeout` with `what`.
    func waitUntil(_ what: String, _ expression: String, timeout: Duration = .seconds(20)) async throws {
        try await Fixtures.waitUntil(what, timeout: timeout) {
            try await self.evaluate("Boolean(\(expression))") as? Bool == true
        }
    }

    /// WebDriver's element click on the first element `selector` matches: scrolled into view, a real user gesture.
    func click(_ selector: String) async throws {
        let found = try await command(.POST, "/element", ["using": "css selector", "value": selector]) as? [String: Any]
        guard let element = found?["element-6066-11e4-a52e-4f735466cecf"] as? String else {
            throw TestFailure("nothing to click: \(selector)")
        }
        _ = try await command(.POST, "/element/\(element)/click", [:])
    }

    /// Ends the session (MiniBrowser quits), then stops the driver and the display.
    func close() async {
        _ = try? await command(.DELETE, "", nil)
        driver.signal(SIGTERM)
        if (try? await driver.waitForExit(timeout: .seconds(5))) != true { driver.kill() }
        display.signal(SIGTERM)
        if (try? await display.waitForExit(timeout: .seconds(5))) != true { display.kill() }
        try? await client.shutdown()
    }

    /// The logs, for failure messages.
    var output: String { "webdriver: \(driver.output.suffix(2000))\nxvfb: \(display.output.suffix(1000))" }

    private func command(_ method: HTTPMethod, _ path: String, _ body: [String: Any]?) async throws -> Any? {
        let answer = try await Self.request(client, method, base + "/session/\(session)" + path, body)
        return answer["value"] ?? answer
    }

    /// One WebDriver request; the answer's `value` (an error's `error` and `message` thrown).
    @discardableResult
    private static func request(_ client: HTTPClient, _ method: HTTPMethod, _ url: String,
                                _ body: [String: Any]? = nil) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await client.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 8 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(bytes.readableBytesView), options: [.fragmentsAllowed])
        guard let answer = object as? [String: Any] else { throw TestFailure("\(method) \(url): \(object)") }
        if let value = answer["value"] as? [String: Any], let error = value["error"] as? String {
            throw TestFailure("\(method) \(url): \(error): \(value["message"] ?? "")")
        }
        if let value = answer["value"] as? [String: Any], url.hasSuffix("/session") || url.hasSuffix("/status") { return value }
        return answer
    }
}
