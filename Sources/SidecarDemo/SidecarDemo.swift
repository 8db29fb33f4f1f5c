import Foundation
import Hummingbird
import IngestServer
import Logging
import Prometheus
import ServiceLifecycle
import Sidecar
import SidecarAPI

/// `pushav serve --demo`: the whole sidecar on one machine with nothing to configure. A media file, paced at real time
/// and looped, stands in for camera `cam1`; `pushav receive`'s ingest server runs in the same process on a free
/// loopback port with ``LocalPKI`` certificates; a ``DemoController`` provisions the TLS endpoint and allocates a
/// Motion transport through the sidecar's own HTTP API (exactly as a Matter controller would), then prints each
/// recording's Begin and End events and, once a session is delivered, where the ingest stored it.
public struct SidecarDemo: Sendable {
    public struct Options: Sendable {
        /// The file that plays the camera (looped; a file with motion in it shows clips).
        public var media: URL
        /// Holds `state/` (the sidecar's state) and `ingest/` (what the ingest received). Must be new or empty: the
        /// demo's certificates and ports are new on every run, so an earlier run's connections could not upload.
        public var directory: URL
        /// The control API's address; port 0 picks a free one.
        public var listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 0)
        /// Stop gracefully after this long (nil: until SIGINT or SIGTERM).
        public var duration: Duration?
        /// What the API's `/metrics` renders (the process's swift-metrics backend); empty when not given.
        public var metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry()

        public init(
            media: URL, directory: URL, listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 0),
            duration: Duration? = nil, metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry()
        ) {
            self.media = media
            self.directory = directory
            self.listen = listen
            self.duration = duration
            self.metrics = metrics
        }
    }

    /// The file the demo plays when none is named: clear motion twice in 20 s (4–6 s and 12–14.5 s), H.264 and AAC.
    public static let defaultMediaName = "a_720p30_h264_main.mp4"

    /// Looks for `TestMedia/<defaultMediaName>` in `currentDirectory` and then beside `executable` and up to five
    /// folders above it (`.build/release/pushav` sits three below the package root).
    public static func findDefaultMedia(currentDirectory: URL, executable: URL) -> URL? {
        var candidates = [currentDirectory]
        var folder = executable.resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(folder)
            folder = folder.deletingLastPathComponent()
        }
        return candidates.map { $0.appendingPathComponent("TestMedia").appendingPathComponent(defaultMediaName) }
            .first { FileManager.default.isReadableFile(atPath: $0.path) }
    }

    /// A new folder for one run under the system's temporary folder.
    public static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("pushav-demo-\(UUID().uuidString.prefix(8).lowercased())")
    }

    public let options: Options
    private let logger: Logger
    private let output: @Sendable (String) -> Void

    /// `output` receives each line the demo prints (stdout in `pushav serve --demo`).
    public init(options: Options, logger: Logger, output: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.logger = logger
        self.output = output
    }

    /// Runs until `duration` has passed or SIGINT/SIGTERM arrives, then stops like `pushav serve`: open recordings end
    /// with their End events, what was cut is spooled and gets a few seconds to reach the ingest.
    public func run() async throws {
        guard FileManager.default.isReadableFile(atPath: options.media.path) else {
            throw ServeError("--demo-media: cannot read \(options.media.path)")
        }
        let directory = options.directory
        let existing = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        guard existing.isEmpty else {
            throw ServeError("--state \(directory.path): not empty; the demo starts from nothing (its certificates and "
                             + "ports are new on every run), give it a new or empty folder")
        }
        let pki = try LocalPKI()

        // The ingest endpoint: `pushav receive`'s server, mutual TLS with the throwaway CA.
        let ingestRoot = directory.appendingPathComponent("ingest")
        var ingestConfiguration = IngestServer.Configuration(
            root: ingestRoot,
            tls: ServerTLSMaterial(certificateChain: Array(pki.serverCertificatePEM.utf8),
                                   privateKey: Array(pki.serverKeyPEM.utf8), clientCA: Array(pki.caCertificatePEM.utf8)))
        ingestConfiguration.host = "127.0.0.1"
        ingestConfiguration.port = 0
        let ingest = try IngestServer(configuration: ingestConfiguration, logger: logger)
        let ingestPort = PortAnnouncement()
        let ingestApplication = try ingest.makeApplication { port in ingestPort.announce(port) }

        // The sidecar, exactly as `pushav serve` builds it.
        let configuration = ServeConfiguration(
            listen: options.listen, state: directory.appendingPathComponent("state").path, spoolCapacityMiB: 256,
            cameras: [CameraConfiguration(id: DemoController.camera, source: options.media.path, live: true,
                                          videoStreamID: DemoController.videoStreamID,
                                          audioStreamID: DemoController.audioStreamID)])
        let engine = try await SidecarEngine(configuration: configuration, logger: logger)
        try await SidecarAPI.loadResources()
        let apiPort = PortAnnouncement()
        let api = Application(
            router: try SidecarRouter.router(control: engine, logger: logger, metrics: options.metrics,
                                         browserPolicy: BrowserRequestPolicy(listenHost: options.listen.host)),
            configuration: .init(address: .hostname(options.listen.host, port: options.listen.port), serverName: "pushav"),
            onServerRunning: { channel in apiPort.announce(channel.localAddress?.port ?? 0) },
            logger: logger)

        let controller = DemoController(
            engine: engine, pki: pki, apiHost: options.listen.host, apiPort: apiPort, ingestPort: ingestPort,
            ingestRoot: ingestRoot, media: options.media, directory: directory, output: output, logger: logger)

        // Shutdown runs in reverse order: the deadline, then the engine (open recordings end with End events, the
        // event stream closes, uploads get their grace), then the controller (it prints what arrived), then the API,
        // and the ingest last, so that it receives everything the engine still delivers.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: ingestApplication),
            .init(service: api),
            .init(service: controller),
            .init(service: engine, successTerminationBehavior: .gracefullyShutdownGroup),
        ]
        if let duration = options.duration {
            services.append(.init(service: Deadline(duration: duration), successTerminationBehavior: .gracefullyShutdownGroup))
        }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint],
                                                      logger: logger))
        try await group.run()
    }
}

/// Ends the demo after `duration` (a graceful shutdown of the whole group).
struct Deadline: Service {
    let duration: Duration

    func run() async throws {
        // A signal first: the group is shutting down already; return at once.
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
    }
}

/// A port a server reports once it listens, for a task that waits for it.
final class PortAnnouncement: Sendable {
    private let stream: AsyncStream<Int>
    private let continuation: AsyncStream<Int>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
    }

    func announce(_ port: Int) {
        continuation.yield(port)
        continuation.finish()
    }

    /// The port, or nil when the task is cancelled first (the server failed to start and the group stops).
    func port() async -> Int? {
        for await port in stream { return port }
        return nil
    }
}
