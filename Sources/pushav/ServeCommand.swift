import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Sidecar
import SidecarAPI

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
              state: /var/lib/pushav
              spoolCapacityMiB: 1024
              cameras:
                - id: cam1
                  source: rtsp://192.0.2.10/main
                  live: true
                  videoStreamID: 1
                  audioStreamID: 2

            SIGINT or SIGTERM ends open recordings (with their End events), spools what was cut and exits 0. \
            The API is described at http://<listen>/openapi.json.

            Examples:
              pushav serve --config serve.yaml
              curl -s localhost:8080/v1/cameras
            """)

    @Option(name: .long, help: "The YAML configuration file.")
    var config: String

    @Option(name: .long, help: "Listen on this host:port instead of the configuration's `listen`.")
    var listen: String?

    @Flag(name: .long, help: "Log debug detail (FFmpeg's own warnings too).")
    var verbose = false

    func run() async throws {
        let logger = CLILogging.logger(verbose: verbose, quietLevel: .info)
        var configuration: ServeConfiguration
        do {
            configuration = try ServeConfiguration.load(path: config)
            if let listen { configuration.listen = try ListenAddress(listen, key: "--listen") }
        } catch {
            throw CLIError("\(error)")
        }
        let engine: SidecarEngine
        do {
            engine = try await SidecarEngine(configuration: configuration, logger: logger)
        } catch {
            throw CLIError("\(error)")
        }
        let router = SidecarRouter.router(control: engine, logger: logger)
        let application = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.listen.host, port: configuration.listen.port),
                                 serverName: "pushav"),
            onServerRunning: { channel in
                FileHandle.standardError.write(Data("pushav serve: listening on \(channel.localAddress.map { "\($0)" } ?? "?")\n".utf8))
            },
            logger: logger)
        // Shutdown runs in reverse order: the engine first ends its recordings (End events) and finishes the event
        // subscriptions, so open event streams end; then the API stops (it would otherwise wait for those streams).
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: application),
                       .init(service: engine, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
        FileHandle.standardError.write(Data("pushav serve: stopped\n".utf8))
    }
}
