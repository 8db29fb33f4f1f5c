import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Ingest
import IngestServer
import Logging
import Metrics
import Prometheus
import Recorder
import NIOSSL
import ServiceLifecycle
import Sidecar
import SidecarAPI
import SidecarDemo

/// `pushav serve`: the recording sidecar a camera's Matter stack drives over a local HTTP API.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the recording sidecar: transport connections allocated over HTTP record and upload by themselves.",
        discussion: """
            Each camera in the configuration is one Matter endpoint with its own Push AV Stream Transport cluster. \
            A controller (the camera's Matter stack) sends the cluster's commands to the HTTP API; every connection \
            it allocates records from the camera's stream (one demux and one motion analysis per camera) and uploads \
            its CMAF sessions to its ingest URL with mutual TLS, through a durable spool. Connections, TLS \
            endpoints, session numbers and spooled uploads survive restarts.

            Configuration (YAML; unknown keys are an error):
              listen: 127.0.0.1:8080
              tokenFile: /etc/pushav/api-token      # optional: every request needs Authorization: Bearer <token>
              tls:                                  # optional: mutual TLS on the API
                certificate: /etc/pushav/api.pem
                key: /etc/pushav/api.key
                clientCA: /etc/pushav/controller-ca.pem
              state: /var/lib/pushav
              spoolCapacityMiB: 1024
              cameras:
                - id: cam1
                  source: rtsp://192.0.2.10/main
                  live: true
                  videoStreamID: 1
                  audioStreamID: 2

            The API listens on loopback by default. On any other address it needs a bearer token (tokenFile or \
            --token-file) or mutual TLS (tls); without one pushav serve refuses to start. A configured token is \
            required on every route, on loopback too.

            SIGINT or SIGTERM ends open recordings (with their End events), spools what was cut and exits 0. \
            The API is described at http://<listen>/openapi.json.

            --demo needs no configuration: TestMedia/a_720p30_h264_main.mp4 (or --demo-media) plays camera cam1, \
            looped at real time; `pushav receive`'s server runs in process on a free loopback port with certificates \
            made at start; a Motion transport is allocated through the API. It prints the listen address, a curl \
            example, each Begin/End and where each delivered session was stored.

            Examples:
              pushav serve --config serve.yaml
              curl -s localhost:8080/v1/cameras
              pushav serve --demo
              pushav serve --demo --demo-duration 30 --state-dir out/serve-demo
            """)

    @Option(name: .long, help: "The YAML configuration file.")
    var config: String?

    @Flag(name: .long, help: "Run the built-in demo (no configuration): a looped test file, an in-process ingest, one transport.")
    var demo = false

    @Option(name: .long, help: "--demo: the media file that plays the camera (default: TestMedia/a_720p30_h264_main.mp4).")
    var demoMedia: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "--demo: stop gracefully after this many seconds (default: until SIGINT/SIGTERM).", valueName: "seconds"))
    var demoDuration: Double?

    @Option(name: [.customLong("state-dir"), .customLong("state")], help: ArgumentHelp(
        "--demo: a new or empty folder for its state and received sessions (default: a new temporary folder); "
            + "without --demo the configuration's `state` says where.", valueName: "dir"))
    var state: String?

    @Option(name: .long, help: "Listen on this host:port instead of the configuration's `listen`.")
    var listen: String?

    @Option(name: .long, help: "A file holding the API's bearer token, instead of the configuration's `tokenFile`.")
    var tokenFile: String?

    @Flag(name: .long, help: "Log debug detail (FFmpeg's own warnings too).")
    var verbose = false

    func validate() throws {
        if demo {
            guard config == nil else { throw ValidationError("--demo takes no --config") }
            if let demoDuration, !(demoDuration > 0 && demoDuration <= 86_400) {
                throw ValidationError("--demo-duration: seconds, more than 0 and at most 86400")
            }
            // The demo's API has no token or TLS: it stays on this machine.
            guard tokenFile == nil else { throw ValidationError("--token-file goes with --config (the demo listens on loopback only)") }
        } else {
            guard config != nil else { throw ValidationError("give --config FILE, or --demo") }
            guard demoMedia == nil, demoDuration == nil, state == nil else {
                throw ValidationError("--demo-media, --demo-duration and --state-dir go with --demo")
            }
        }
    }

    func run() async throws {
        if demo { return try await runDemo() }
        let logger = CLILogging.logger(verbose: verbose, quietLevel: .info)
        var configuration: ServeConfiguration
        do {
            configuration = try ServeConfiguration.load(path: config!)
            if let listen { configuration.listen = try ListenAddress(listen, key: "--listen") }
            if let tokenFile { configuration.tokenFile = tokenFile }
            try configuration.checkAPIAccess()
        } catch {
            // A configuration the service cannot run with: one line naming the key and the limit, status 2 (under
            // systemd a configuration error, not a crash to restart from).
            FileHandle.standardError.write(Data("Error: \(CLIError(describing: error).description)\n".utf8))
            throw ExitCode(2)
        }
        let access: APIAccess
        do {
            access = try await APIAccess.load(configuration, tokenKey: tokenFile != nil ? "--token-file" : "tokenFile")
        } catch {
            throw CLIError(describing: error)
        }
        // Before the engine: its counters bind to the backend in force when they are made.
        let metrics = ServeMetrics.bootstrap()
        let engine: SidecarEngine
        do {
            engine = try await SidecarEngine(configuration: configuration, logger: logger)
        } catch {
            throw CLIError(describing: error)
        }
        try await SidecarAPI.loadResources()
        let router = try SidecarRouter.router(
            control: engine, logger: logger, metrics: metrics, bearerToken: access.token,
            browserPolicy: BrowserRequestPolicy(listenHost: configuration.listen.host, allowedOrigins: Set(configuration.allowedOrigins)))
        let server: HTTPServerBuilder = if let tls = access.tls { try .tls(.http1(), tlsConfiguration: tls) } else { .http1() }
        let scheme = access.tls == nil ? "http" : "https"
        let application = Application(
            router: router, server: server,
            configuration: .init(address: .hostname(configuration.listen.host, port: configuration.listen.port),
                                 serverName: "pushav"),
            onServerRunning: { channel in
                // `host:port` as a user types it (SocketAddress describes itself as `[IPv4]127.0.0.1/127.0.0.1:8080`).
                let address = channel.localAddress.map { address -> String in
                    guard let ip = address.ipAddress, let port = address.port else { return "\(address)" }
                    return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
                } ?? "?"
                FileHandle.standardError.write(Data("pushav serve: listening on \(address) (\(scheme))\n".utf8))
            },
            logger: logger)
        // Shutdown runs in reverse order: the engine first ends its recordings (End events) and finishes the event
        // subscriptions, so open event streams end; then the API stops (it would otherwise wait for those streams).
        var groupConfiguration = ServiceGroupConfiguration(
            services: [.init(service: application),
                       .init(service: engine, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // A stop never hangs: the engine ends its recordings and gives uploads a few seconds (what is left stays in
        // the spool); anything still running after this is cancelled, and after the cancellation limit the process
        // exits anyway.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(20)
        groupConfiguration.maximumCancellationDuration = .seconds(5)
        let group = ServiceGroup(configuration: groupConfiguration)
        try await group.run()
        FileHandle.standardError.write(Data("pushav serve: stopped\n".utf8))
    }
}

extension ServeCommand {
    /// `--demo`: everything lives in ``SidecarDemo``; this only reads the options and prints its lines.
    func runDemo() async throws {
        // What the demo prints is the point; the services log warnings only, unless asked to be verbose.
        let logger = CLILogging.logger(verbose: verbose, quietLevel: .warning)
        let currentDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let media: URL
        if let demoMedia {
            media = URL(fileURLWithPath: demoMedia)
        } else if let found = SidecarDemo.findDefaultMedia(currentDirectory: currentDirectory,
                                                           executable: URL(fileURLWithPath: CommandLine.arguments[0])) {
            media = found
        } else {
            throw CLIError("--demo: TestMedia/\(SidecarDemo.defaultMediaName) is not here or beside pushav; give --demo-media FILE")
        }
        var listenAddress = ListenAddress(host: "127.0.0.1", port: 0)
        if let listen {
            do { listenAddress = try ListenAddress(listen, key: "--listen") } catch { throw CLIError(describing: error) }
            guard listenAddress.isLoopback else {
                throw CLIError("--listen: --demo listens on loopback only (its API has no token); \(listenAddress) is not loopback")
            }
        }
        let options = SidecarDemo.Options(
            media: media, directory: state.map { URL(fileURLWithPath: $0) } ?? SidecarDemo.temporaryDirectory(),
            listen: listenAddress, duration: demoDuration.map { .milliseconds(Int64($0 * 1000)) },
            metrics: ServeMetrics.bootstrap())
        let demo = SidecarDemo(options: options, logger: logger) { line in
            StandardOutput.write(line + "\n")
        }
        do {
            try await demo.run()
        } catch let error as ServeError {
            throw CLIError(error.description)
        }
        StandardOutput.write("pushav serve --demo: stopped; everything is under \(options.directory.path)\n")
    }
}

/// The process's swift-metrics backend for `pushav serve`: a Prometheus registry, which `/metrics` renders.
enum ServeMetrics {
    /// Bootstraps the backend (swift-metrics allows this once per process, so only the command does it) with the
    /// recorder's histogram buckets, and returns the registry.
    static func bootstrap() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = RecordingMetrics.durationBuckets
        factory.valueHistogramBuckets = RecordingMetrics.valueBuckets
        MetricsSystem.bootstrap(factory)
        return registry
    }
}

/// What guards the control API: the bearer token and the mutual TLS configuration, read and checked at start so a
/// bad file is one start-up error naming its key, not a failed handshake later.
struct APIAccess: Sendable {
    var token: String?
    var tls: TLSConfiguration?

    /// Reads the files `configuration` names off the cooperative pool. `tokenKey` names where the token file came
    /// from (`tokenFile` or `--token-file`).
    static func load(_ configuration: ServeConfiguration, tokenKey: String) async throws -> APIAccess {
        try await BlockingIO.run {
            APIAccess(token: try configuration.tokenFile.map { path throws(ConfigurationError) in try APIToken.read(path: path, key: tokenKey) },
                      tls: try configuration.tls.map(tlsConfiguration))
        }
    }

    /// TLS ≥ 1.2 that requires a client certificate chaining to `clientCA` (`pushav receive`'s server settings).
    static func tlsConfiguration(_ files: APITLSFiles) throws(ConfigurationError) -> TLSConfiguration {
        func pem(_ path: String, key: String) throws(ConfigurationError) -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(key: key, message: "cannot read \(path): \(UnreadableFile.reason(path))")
            }
            return Array(data)
        }
        func certificates(_ path: String, key: String) throws(ConfigurationError) -> [UInt8] {
            let bytes = try pem(path, key: key)
            guard let parsed = try? NIOSSLCertificate.fromPEMBytes(bytes), !parsed.isEmpty else {
                throw ConfigurationError(key: key, message: "\(path) holds no PEM certificate")
            }
            return bytes
        }
        let material = ServerTLSMaterial(
            certificateChain: try certificates(files.certificate, key: "tls.certificate"),
            privateKey: try pem(files.key, key: "tls.key"),
            clientCA: try certificates(files.clientCA, key: "tls.clientCA"))
        guard (try? NIOSSLPrivateKey(bytes: material.privateKey, format: .pem)) != nil else {
            throw ConfigurationError(key: "tls.key", message: "\(files.key) holds no PEM private key")
        }
        do {
            let configuration = try material.makeTLSConfiguration()
            // Building a context checks that the key belongs to the certificate.
            _ = try NIOSSLContext(configuration: configuration)
            return configuration
        } catch {
            throw ConfigurationError(key: "tls", message: "cannot serve TLS with \(files.certificate) and \(files.key): \(error)")
        }
    }
}
