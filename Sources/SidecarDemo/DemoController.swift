import AsyncHTTPClient
import Domain
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Sidecar
import Synchronization

/// The demo's Matter controller: talks to the sidecar only through its HTTP API (provisions the ingest's TLS endpoint,
/// allocates a Motion transport on `cam1` and activates it, subscribes to the camera's events) and prints what happens:
/// each Begin and End, and, once a session is fully delivered, the files the ingest stored for it.
final class DemoController: Service, Sendable {
    static let camera = "cam1"
    static let videoStreamID: UInt16 = 1
    static let audioStreamID: UInt16 = 2
    /// Publishing points on the ingest: the demo's transport, and the one the printed curl example allocates.
    static let motionPath = "cam1/motion/"
    static let byHandPath = "cam1/by-hand/"
    /// How long a finished session may take to reach the ingest before the demo says it is still in the spool.
    static let deliveryWait = Duration.seconds(60)
    /// After the engine stopped: its uploads have a 3 s grace, then what is left stays spooled.
    static let shutdownDeliveryWait = Duration.seconds(6)

    let engine: SidecarEngine
    let pki: LocalPKI
    let apiHost: String
    let apiPort: PortAnnouncement
    let ingestPort: PortAnnouncement
    let ingestRoot: URL
    let media: URL
    let directory: URL
    let output: @Sendable (String) -> Void
    let logger: Logger
    private let started = ContinuousClock.now
    /// Connection → its ingest URL, noted at Begin (a deallocated connection's End must still find it).
    private let urls = Mutex<[Int: String]>([:])
    /// When the event stream ended (the engine stopped): sessions not delivered within a few seconds of it stay
    /// in the spool for the next run.
    private let streamEnded = Mutex<ContinuousClock.Instant?>(nil)

    init(engine: SidecarEngine, pki: LocalPKI, apiHost: String, apiPort: PortAnnouncement, ingestPort: PortAnnouncement,
         ingestRoot: URL, media: URL, directory: URL, output: @escaping @Sendable (String) -> Void, logger: Logger) {
        self.engine = engine
        self.pki = pki
        self.apiHost = apiHost
        self.apiPort = apiPort
        self.ingestPort = ingestPort
        self.ingestRoot = ingestRoot
        self.media = media
        self.directory = directory
        self.output = output
        self.logger = logger
    }

    struct DemoError: Error, CustomStringConvertible {
        let description: String
    }

    func run() async throws {
        guard let ingestPort = await ingestPort.port(), let apiPort = await apiPort.port() else { return }
        let host = apiHost.contains(":") ? "[\(apiHost)]" : apiHost
        let api = "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(apiPort)"
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await control(api: api, ingestPort: ingestPort, client: client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
        // Returns when the group shuts the controller down (the engine has stopped by then).
        try? await gracefulShutdown()
    }

    private func control(api: String, ingestPort: Int, client: HTTPClient) async throws {
        let endpoint = try await post(client, api + "/v1/tls/endpoints", [
            "hostname": "localhost", "port": ingestPort, "caCertificate": pki.caCertificatePEM,
            "clientCertificate": pki.clientCertificatePEM, "clientKey": pki.clientKeyPEM,
        ])
        guard let endpointID = endpoint["endpointID"] as? Int else { throw DemoError(description: "no endpointID in \(endpoint)") }

        // Subscribed before the transport exists, so that no Begin is missed.
        var request = HTTPClientRequest(url: api + "/v1/cameras/\(Self.camera)/events")
        request.headers.add(name: "Accept", value: "text/event-stream")
        let events = try await client.execute(request, timeout: .hours(24 * 365))
        guard events.status == .ok else { throw DemoError(description: "GET …/events: \(events.status)") }

        let commands = api + "/v1/cameras/\(Self.camera)/commands/"
        let url = "https://localhost:\(ingestPort)/\(Self.motionPath)"
        let allocated = try await post(client, commands + "allocatePushTransport", [
            "transportOptions": Self.transportOptions(endpointID: endpointID, url: url, motion: true),
        ])
        guard let configuration = allocated["transportConfiguration"] as? [String: Any],
              let connectionID = configuration["connectionID"] as? Int
        else { throw DemoError(description: "no connectionID in \(allocated)") }
        _ = try await post(client, commands + "setTransportStatus", ["connectionID": connectionID, "transportStatus": 0])

        output(banner(api: api, ingestPort: ingestPort, endpointID: endpointID, connectionID: connectionID, url: url))

        await withTaskGroup(of: Void.self) { deliveries in
            do {
                var pending = ""
                for try await chunk in events.body {
                    pending += String(buffer: chunk)
                    while let end = pending.range(of: "\n\n") {
                        let frame = String(pending[..<end.lowerBound])
                        pending = String(pending[end.upperBound...])
                        if let parsed = Self.parse(frame) {
                            handle(parsed.name, parsed.data, ingestPort: ingestPort, deliveries: &deliveries)
                        }
                    }
                }
            } catch {
                logger.warning("demo: the event stream failed", metadata: ["error": "\(error)"])
            }
            // The stream ends when the engine stops; the sessions it cut last are delivered within its grace.
            streamEnded.withLock { $0 = .now }
        }
    }

    private func handle(_ name: String, _ event: [String: Any], ingestPort: Int, deliveries: inout TaskGroup<Void>) {
        guard let connection = event["connectionID"] as? Int, let number = event["cmafSessionNumber"] as? Int, number >= 0 else { return }
        let session = SessionNumber(UInt64(number))
        if name == "PushTransportBegin" {
            let trigger = switch (event["triggerType"] as? Int) ?? -1 {
            case 0: "command, reason \(event["activationReason"].map { "\($0)" } ?? "?")"
            case 1: "motion"
            case 2: "continuous"
            default: "trigger \(event["triggerType"].map { "\($0)" } ?? "none")"
            }
            output("\(stamp()) Begin  connection \(connection) session \(session) (\(trigger))")
            // The options' URL is the cluster's own record; read from the engine (in process) only to show the files.
            deliveries.addTask {
                let url = await self.engine.transport(camera: Self.camera)?.allConnections()
                    .first { Int($0.connectionID) == connection }?.transportOptions.url
                if let url { self.urls.withLock { $0[connection] = url } }
            }
        } else if name == "PushTransportEnd" {
            output("\(stamp()) End    connection \(connection) session \(session)")
            deliveries.addTask { await self.reportDelivery(connection: connection, session: session, ingestPort: ingestPort) }
        }
    }

    /// Waits (bounded) until every object of the session reached the ingest, then prints where it was stored.
    private func reportDelivery(connection: Int, session: SessionNumber, ingestPort: Int) async {
        let deadline = ContinuousClock.now + Self.deliveryWait
        var delivered = false
        while ContinuousClock.now < min(deadline, streamEnded.withLock { $0 }.map { $0 + Self.shutdownDeliveryWait } ?? deadline) {
            let engine = self.engine
            // A SQLite read: off Swift's cooperative pool.
            let done = await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(returning: engine.isDelivered(camera: Self.camera, connection: UInt16(connection),
                                                                      session: session))
                }
            }
            if done {
                delivered = true
                break
            }
            do {
                try await Task.sleep(for: .milliseconds(200))
            } catch {
                break
            }
        }
        guard delivered else {
            output("\(stamp()) undelivered connection \(connection) session \(session): not complete at the ingest; what "
                   + "of it is in the spool stays there (the log says why)")
            return
        }
        let url = urls.withLock { $0[connection] }
        guard let url, let parsed = URL(string: url), parsed.host == "localhost" || parsed.host == "127.0.0.1",
              parsed.port == ingestPort
        else {
            output("\(stamp()) stored connection \(connection) session \(session) at \(url ?? "its ingest URL")")
            return
        }
        let relative = parsed.path.split(separator: "/").map(String.init) + ["session_\(session)"]
        let folder = relative.reduce(ingestRoot) { $0.appendingPathComponent($1) }
        output("\(stamp()) stored connection \(connection) session \(session) in \(folder.path)/")
        for line in Self.describe(folder) { output("                 \(line)") }
    }

    /// One line per track: its header, its first and last segment, how many and how large.
    static func describe(_ session: URL) -> [String] {
        let fm = FileManager.default
        let tracks = ((try? fm.contentsOfDirectory(atPath: session.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return tracks.map { track in
            let folder = session.appendingPathComponent(track)
            let files = ((try? fm.contentsOfDirectory(atPath: folder.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
            let segments = files.filter { $0.hasSuffix(".m4s") }
            let bytes = files.reduce(0) { total, file in
                total + (((try? fm.attributesOfItem(atPath: folder.appendingPathComponent(file).path))?[.size] as? Int) ?? 0)
            }
            let headers = files.filter { $0.hasSuffix(".init") }.map { "\(track)/\($0)" }
            let range = switch segments.count {
            case 0: "no segments"
            case 1: "\(track)/\(segments[0])"
            default: "\(track)/\(segments.first!) … \(segments.last!)"
            }
            return (headers + [range]).joined(separator: "  ") + "  (\(segments.count) segments, \(kibibytes(bytes)))"
        }
    }

    private static func kibibytes(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? String(format: "%.1f MiB", Double(bytes) / 1_048_576) : "\(max(1, bytes >> 10)) KiB"
    }

    /// `event:` and `data:` of one Server-Sent Events frame (comments and keep-alives give nil).
    static func parse(_ frame: String) -> (name: String, data: [String: Any])? {
        var name: String?
        var data = ""
        for line in frame.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("event:") { name = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("data:") { data += line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
        }
        guard let name, let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else { return nil }
        return (name, object)
    }

    /// TransportOptionsStruct for a recording transport: CMAF in 2 s segments (the media's keyframe interval), 2 s of
    /// pre-roll; Motion (over the whole picture at Medium sensitivity) or Command.
    static func transportOptions(endpointID: Int, url: String, motion: Bool) -> [String: Any] {
        let trigger: [String: Any] = motion
            ? ["triggerType": 1, "motionZones": NSNull(), "motionSensitivity": 5, "maxPreRollLen": 2000,
               "motionTimeControl": ["initialDuration": 3, "augmentationDuration": 2, "maxDuration": 12, "blindDuration": 1]]
            : ["triggerType": 0, "maxPreRollLen": 2000]
        return [
            "streamUsage": 1, "videoStreamID": Int(videoStreamID), "audioStreamID": Int(audioStreamID),
            "tlsEndpointID": endpointID, "url": url, "ingestMethod": 0, "triggerOptions": trigger,
            "containerOptions": ["containerType": 0,
                                 "cmafContainerOptions": ["cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0]],
        ]
    }

    private func banner(api: String, ingestPort: Int, endpointID: Int, connectionID: Int, url: String) -> String {
        let commands = "\(api)/v1/cameras/\(Self.camera)/commands"
        let secondURL = "https://localhost:\(ingestPort)/\(Self.byHandPath)"
        let secondOptions = ("""
            {"transportOptions": {
              "streamUsage": 1, "videoStreamID": 1, "audioStreamID": 2, "tlsEndpointID": \(endpointID),
              "url": "\(secondURL)", "ingestMethod": 0,
              "triggerOptions": {"triggerType": 0, "maxPreRollLen": 2000},
              "containerOptions": {"containerType": 0,
                "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0}}}}
            """).replacingOccurrences(of: "\n", with: "\n    ")
        return """
            pushav serve --demo
              camera cam1:     \(media.path) (looped at real time)
              control API:     \(api)   (described at \(api)/openapi.json)
              ingest:          https://localhost:\(ingestPort)/ (pushav receive, mutual TLS), storing under \(ingestRoot.path)
              state:           \(directory.appendingPathComponent("state").path)
              TLS endpoint \(endpointID):  throwaway CA and client certificate, made at start
              connection \(connectionID):    Motion trigger, Active, uploading to \(url)

            Allocate a second transport by hand (Command trigger, connection 2), activate it and trigger a 3 s clip:

              curl -s -X POST -H 'Content-Type: application/json' \(commands)/allocatePushTransport -d '\(secondOptions)'
              curl -s -X POST -H 'Content-Type: application/json' \(commands)/setTransportStatus -d '{"connectionID": 2, "transportStatus": 0}'
              curl -s -X POST -H 'Content-Type: application/json' \(commands)/manuallyTriggerTransport -d '{"connectionID": 2, "activationReason": 0,
                "timeControl": {"initialDuration": 3, "augmentationDuration": 1, "maxDuration": 6, "blindDuration": 0}}'
              # the events as they happen: curl -sN \(api)/v1/cameras/\(Self.camera)/events

            Clips as they arrive (seconds since start; Ctrl-C ends open recordings and stops):
            """
    }

    private func stamp() -> String {
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return String(format: "[%6.1f s]", seconds)
    }

    private func post(_ client: HTTPClient, _ url: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        let response = try await client.execute(request, timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard (200..<300).contains(response.status.code) else {
            throw DemoError(description: "POST \(url): \(response.status.code) \(text)")
        }
        if text.isEmpty { return [:] }
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw DemoError(description: "POST \(url): not a JSON object: \(text)")
        }
        return object
    }
}
