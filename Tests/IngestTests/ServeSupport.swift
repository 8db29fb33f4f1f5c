import AsyncHTTPClient
import CMAF
import Domain
import Foundation
import IngestServer
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import TestSupport
import Testing

/// A running `pushav serve` with one camera, an HTTP client for its API, and a watch on its log.
struct Serve {
    let directory: URL
    let process: ChildProcess
    let api: String
    let client: HTTPClient
    let log: ServeLog
    /// Sent with every request of ``request(_:_:_:headers:)`` (the API's bearer token).
    let authorization: String?

    init(directory: URL, media: String) async throws {
        try await self.init(directory: directory, source: TestPaths.media(media).path)
    }

    /// Starts `pushav serve` with its state in `directory/state` (kept across starts on the same directory) and one
    /// camera `cam1` reading `source`. `run` numbers the log of each start (serve-1.log, serve-2.log, …).
    ///
    /// `listenHost` is the configuration's `listen` host, `settings` more top-level YAML lines (`tokenFile`,
    /// `tls`) and `camera` one more key of the camera (`analysisSource: …`); `arguments` go on the command line. The client connects to 127.0.0.1, over HTTPS when `clientTLS` is
    /// given, sending `authorization` with every request.
    ///
    /// `launcher` runs it (`ip netns exec NAME fiu-run -x`: the command before the `pushav` binary), and `connectHost`
    /// is where the client finds it (a namespace's address).
    init(directory: URL, source: String, live: Bool = true, run: Int = 1, listenHost: String = "127.0.0.1",
         settings: String = "", camera: String = "", arguments: [String] = [], clientTLS: TLSConfiguration? = nil,
         authorization: String? = nil, launcher: [String] = [], connectHost: String = "127.0.0.1") async throws {
        self.directory = directory
        self.authorization = authorization
        let port = try LocalPorts.freeTCPPort()
        let config = directory.appendingPathComponent("serve.yaml")
        try """
            listen: "\(listenHost.contains(":") ? "[\(listenHost)]" : listenHost):\(port)"
            state: \(directory.appendingPathComponent("state").path)
            \(settings)
            cameras:
              - id: cam1
                source: \(source)
                live: \(live)
                videoStreamID: 1
                \(camera)
            """.write(to: config, atomically: true, encoding: .utf8)
        let logFile = directory.appendingPathComponent("serve-\(run).log")
        let command = launcher + [Fixtures.pushav.path, "serve", "--config", config.path] + arguments
        process = try ChildProcess.start(command[0], Array(command.dropFirst()), log: logFile,
                                         environment: TestPaths.isolatedEnvironment())
        log = ServeLog(file: logFile)
        if let clientTLS {
            client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: clientTLS))
            api = "https://\(connectHost):\(port)"
        } else {
            client = HTTPClient(eventLoopGroupProvider: .singleton)
            api = "http://\(connectHost):\(port)"
        }
        let process = self.process
        do {
            // Start-up opens SQLite journals and replays what the last run left. A chaos restart in CI once failed to
            // start within 30 s while the serve suites ran side by side (why was not captured: that failure crashed the
            // test process; it now throws with the log), and the disk of a loaded machine was seen to stall a write
            // for 19 s: hence 60 s.
            try await Fixtures.waitUntil("pushav serve listening", timeout: .seconds(60)) {
                guard process.isRunning else { throw TestFailure("pushav serve exited (status \(process.status))") }
                return process.output.contains("listening on")
            }
        } catch {
            // The client must be shut down before it goes (AsyncHTTPClient asserts it in its deinit, which would
            // crash the whole test process and hide this failure), and the process must not outlive the test.
            log.stop()
            try? await client.shutdown()
            process.kill()
            throw TestFailure("pushav serve did not start listening: \(error)\n\(process.output.suffix(4000))")
        }
    }

    func request(_ method: HTTPMethod, _ path: String, _ body: String? = nil,
                 headers: [(String, String)] = []) async throws -> (status: UInt, text: String) {
        var request = HTTPClientRequest(url: api + path)
        request.method = method
        if let body {
            request.body = .bytes(ByteBuffer(string: body))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (response.status.code, String(buffer: bytes))
    }

    /// What a GET of a picture or a clip answered.
    struct Fetched {
        var contentType: String?
        var body: [UInt8]
    }

    /// GET `path`: the status, the Content-Type and the body's bytes.
    func bytes(_ path: String) async throws -> (status: UInt, response: Fetched) {
        var request = HTTPClientRequest(url: api + path)
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 16 << 20)
        return (response.status.code, Fetched(contentType: response.headers.first(name: "Content-Type"), body: Array(buffer: body)))
    }

    func json(_ method: HTTPMethod, _ path: String, _ body: String? = nil) async throws -> [String: Any] {
        let (status, text) = try await request(method, path, body)
        try #require((200..<300).contains(status), "\(method) \(path): \(status) \(text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    /// POST `/v1/cameras/cam1/commands/<name>` with `body` (a JSON object); the command's response.
    @discardableResult
    func command(_ name: String, _ body: [String: Any]) async throws -> [String: Any] {
        try await json(.POST, "/v1/cameras/cam1/commands/\(name)", JSON.text(body))
    }

    /// A TLS endpoint for the ingest at `port` with the test PKI's CA and client identity; its ID.
    func addTLSEndpoint(pki: TestPKI, port: Int) async throws -> Int {
        let pem = { (name: String) in String(decoding: FileManager.default.contents(atPath: pki.path(name)) ?? Data(), as: UTF8.self) }
        let body = JSON.text(["hostname": "localhost", "port": port, "caCertificate": pem("ca.pem"),
                              "clientCertificate": pem("client.pem"), "clientKey": pem("client.key")])
        return try #require(try await json(.POST, "/v1/tls/endpoints", body)["endpointID"] as? Int)
    }

    /// AllocatePushTransport; the new connection's ID (the connection starts Inactive).
    func allocate(_ options: [String: Any]) async throws -> Int {
        let allocated = try await command("allocatePushTransport", ["transportOptions": options])
        let configuration = try #require(allocated["transportConfiguration"] as? [String: Any], "\(allocated)")
        return try #require(configuration["connectionID"] as? Int)
    }

    func setActive(_ connectionID: Int, _ active: Bool = true) async throws {
        try await command("setTransportStatus", ["connectionID": connectionID, "transportStatus": active ? 0 : 1])
    }

    /// ManuallyTriggerTransport with a time control (seconds).
    func trigger(_ connectionID: Int, reason: Int = 0, initial: Int, augmentation: Int = 0, max: Int, blind: Int = 0) async throws {
        try await command("manuallyTriggerTransport", [
            "connectionID": connectionID, "activationReason": reason,
            "timeControl": ["initialDuration": initial, "augmentationDuration": augmentation, "maxDuration": max,
                            "blindDuration": blind],
        ])
    }

    /// The camera's entry of `GET /v1/cameras`.
    func camera() async throws -> [String: Any] {
        let cameras = try #require(try await json(.GET, "/v1/cameras")["cameras"] as? [[String: Any]])
        return try #require(cameras.first)
    }

    /// `GET /health`'s count of objects in the spool not yet delivered.
    func pendingUploads() async throws -> Int {
        try #require(try await json(.GET, "/health")["pendingUploads"] as? Int)
    }

    /// Waits until the camera streams and the log follower has read the pass's "recording" line: tests that place
    /// themselves on the file's timeline (`ServeLog.position(of:)`) need that line, which the follower reads up to a
    /// poll later than the API reports streaming.
    func waitUntilStreaming(timeout: Duration = .seconds(30)) async throws {
        try await Fixtures.waitUntil("camera streaming", timeout: timeout) {
            try await camera()["state"] as? String == "streaming"
        }
        try await Fixtures.waitUntil("the pass's start in the log", timeout: timeout) { !log.passStarts.isEmpty }
    }

    /// How the tests that restart the process begin: streaming, subscribed to the events, the ingest's TLS endpoint
    /// added, and an Active Command connection to it. Returns the connection and the event feed.
    func activeCommandConnection(to ingest: ServeIngest, port: Int, preRollMs: Int = 2000) async throws -> (id: Int, events: EventFeed) {
        try await waitUntilStreaming()
        let events = try await subscribe()
        let endpointID = try await addTLSEndpoint(pki: ingest.pki, port: port)
        let id = try await allocate(TransportJSON.options(endpointID: endpointID, ingestPort: port, trigger: .command(preRollMs: preRollMs)))
        try await setActive(id)
        return (id, events)
    }

    /// Waits until the camera analysed `count` more pictures than it had when called: what a test waits for to show
    /// that something did *not* happen while the pipeline kept running.
    func waitForFrames(_ count: Int, timeout: Duration = .seconds(20)) async throws {
        let start = try #require(try await camera()["framesAnalysed"] as? Int)
        try await Fixtures.waitUntil("\(count) more analysed pictures", timeout: timeout) {
            (try await camera()["framesAnalysed"] as? Int ?? 0) >= start + count
        }
    }

    /// Subscribes to the camera's events (returns once the server confirmed the subscription).
    func subscribe() async throws -> EventFeed {
        try await EventFeed.start(client: client, url: api + "/v1/cameras/cam1/events", authorization: authorization)
    }

    /// Sends `signal` and waits for the exit (SIGKILL: killed at once).
    func stop(_ signal: Int32 = SIGTERM, timeout: Duration = .seconds(15)) async throws -> Bool {
        if signal == SIGKILL {
            process.kill()
            return true
        }
        process.signal(signal)
        return try await process.waitForExit(timeout: timeout)
    }

    func shutdown() async throws {
        log.stop()
        try await client.shutdown()
        process.kill()
    }
}

enum JSON {
    static func text(_ object: Any) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }
}

/// TransportOptionsStruct bodies as the API reads them (numeric enums, durations in ms / seconds as the cluster has them).
enum TransportJSON {
    enum Trigger {
        /// Command: clips only from ManuallyTriggerTransport.
        case command(preRollMs: Int = 2000)
        case motion(initial: Int, augmentation: Int, max: Int, blind: Int, sensitivity: Int = 5, preRollMs: Int = 0)
        case continuous
    }

    static func options(endpointID: Int, ingestPort: Int, path: String = "", trigger: Trigger,
                        segmentMs: Int = 2000, chunkMs: Int = 0, cmafInterface: Int = 0,
                        cenc: (key: String, keyID: String)? = nil) -> [String: Any] {
        var triggerOptions: [String: Any]
        switch trigger {
        case .command(let preRoll):
            triggerOptions = ["triggerType": 0, "maxPreRollLen": preRoll]
        case .motion(let initial, let augmentation, let max, let blind, let sensitivity, let preRoll):
            triggerOptions = [
                "triggerType": 1, "motionZones": NSNull(), "motionSensitivity": sensitivity, "maxPreRollLen": preRoll,
                "motionTimeControl": ["initialDuration": initial, "augmentationDuration": augmentation,
                                      "maxDuration": max, "blindDuration": blind],
            ]
        case .continuous:
            triggerOptions = ["triggerType": 2]
        }
        var cmaf: [String: Any] = ["cmafInterface": cmafInterface, "segmentDuration": segmentMs, "chunkDuration": chunkMs]
        if let cenc { (cmaf["cencKey"], cmaf["cencKeyID"]) = (cenc.key, cenc.keyID) }
        return [
            "streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": endpointID,
            "url": "https://localhost:\(ingestPort)/\(path)", "triggerOptions": triggerOptions, "ingestMethod": 0,
            "containerOptions": ["containerType": 0, "cmafContainerOptions": cmaf],
        ]
    }
}
