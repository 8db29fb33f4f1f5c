import Domain
import Foundation
import Hummingbird
import HummingbirdTLS
import Ingest
import IngestServer
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// A Hummingbird application running in a service group; `stop()` shuts it down gracefully (cancelling it while a
/// request is in flight trips NIO's "NIOAsyncWriter deinited without finish" check).
struct RunningServer: Sendable {
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, Never>

    static func start<App: ApplicationProtocol>(_ make: (@escaping @Sendable (Int) async -> Void) throws -> App) async throws -> RunningServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = try make { port in continuation.yield(port) }
        let group = ServiceGroup(configuration: .init(services: [app], logger: .quiet))
        let task = Task { _ = try? await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestFailure("server did not start") }
        return RunningServer(port: port, group: group, task: task)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        await task.value
    }
}

extension IngestServer {
    /// The real receiver, in-process, over mutual TLS with the test PKI.
    static func startForTest(root: URL, pki: TestPKI, port: Int = 0, maximumBodySize: Int = 8 << 20, http2: Bool = false) async throws -> RunningServer {
        var configuration = IngestServer.Configuration(
            root: root, tls: ServerTLSMaterial(certificateChain: pki.serverPEM, privateKey: pki.serverKey, clientCA: pki.caPEM))
        configuration.port = port
        configuration.maximumBodySize = maximumBodySize
        configuration.http2 = http2
        let server = try IngestServer(configuration: configuration, logger: .quiet)
        return try await RunningServer.start { onRunning in try server.makeApplication(onRunning: onRunning) }
    }
}

/// What the scripted endpoint does with the next request.
enum Fault: Sendable, Equatable {
    case status(Int)
    /// Never answer (the client's timeout must fire).
    case stall
    /// Store the object, then hold the answer until the client sends the same path again (it timed out and retried),
    /// and answer 504 then: a response lost after the ingest took the upload, whatever the client's timeout.
    case storeThenLoseTheAnswer
}

/// An mTLS endpoint whose answers are scripted: pending faults are served first (each matching request consumes
/// one), everything else is stored through ``IngestStore`` (so init-before-segment still gives 412). Records every
/// arrival in order.
final class ScriptedEndpoint: Sendable {
    struct Arrival: Sendable, Equatable {
        var path: String
        var status: Int
        /// When the answer was decided (after the body arrived).
        var time = ContinuousClock.now
    }

    let store: IngestStore
    private let state = Mutex<(faults: [(match: String, fault: Fault)], arrivals: [Arrival])>(([], []))

    /// `strict`: the CSA test server's strict-mode rules on top (see ``StrictIngestRules``), with the track names each
    /// stream prefix may use.
    init(root: URL, strict: StrictIngestRules.Interface? = nil, expectedTrackNames: [String: Set<TrackName>] = [:]) {
        store = IngestStore(root: root, strict: strict.map { StrictIngestRules(interface: $0, expectedTrackNames: expectedTrackNames) })
    }

    /// Queues `fault` for the next request whose path contains `match` ("" = any).
    func inject(_ fault: Fault, times: Int = 1, matching match: String = "") {
        state.withLock { $0.faults += Array(repeating: (match, fault), count: times) }
    }

    var arrivals: [Arrival] { state.withLock { $0.arrivals } }
    /// Paths of requests whose head arrived (before their body was read), in order.
    var started: [String] { startedPaths.withLock { $0.map(\.path) } }
    /// The same, with when each head arrived.
    var startedAt: [(path: String, time: ContinuousClock.Instant)] { startedPaths.withLock { $0 } }
    private let startedPaths = Mutex<[(path: String, time: ContinuousClock.Instant)]>([])
    var pendingFaults: Int { state.withLock { $0.faults.count } }

    /// Successful uploads in arrival order.
    var storedPaths: [String] { arrivals.filter { (200..<300).contains($0.status) }.map(\.path) }

    /// Listens on `host` (127.0.0.1 unless a test puts its client in another network namespace).
    func start(pki: TestPKI, port: Int = 0, host: String = "127.0.0.1") async throws -> RunningServer {
        let router = Router()
        router.put("**") { request, _ -> Response in
            let path = String(request.uri.path.dropFirst())
            self.startedPaths.withLock { $0.append((path, ContinuousClock.now)) }
            let fault = self.state.withLock { state -> Fault? in
                guard let index = state.faults.firstIndex(where: { $0.match.isEmpty || path.contains($0.match) }) else { return nil }
                return state.faults.remove(at: index).fault
            }
            let body = try await request.body.collect(upTo: 64 << 20)
            let status: Int
            switch fault {
            case .stall:
                self.state.withLock { $0.arrivals.append(Arrival(path: path, status: 0)) }
                try? await Task.sleep(for: .milliseconds(1500))  // well past the client's timeout
                return Response(status: .gatewayTimeout)
            case .storeThenLoseTheAnswer:
                let stored = self.store.accept(path: path, body: Array(buffer: body)).status
                self.state.withLock { $0.arrivals.append(Arrival(path: path, status: stored)) }
                let sent = self.startedPaths.withLock { $0.count { $0.path == path } }
                // Polls the request log: the retry comes after the client's own timeout, which the test sets.
                let deadline = ContinuousClock.now + .seconds(60)
                while self.startedPaths.withLock({ $0.count { $0.path == path } }) == sent, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(20))
                }
                return Response(status: .gatewayTimeout)
            case .status(let code):
                status = code
            case nil:
                status = self.store.accept(path: path, body: Array(buffer: body)).status
            }
            self.state.withLock { $0.arrivals.append(Arrival(path: path, status: status)) }
            return Response(status: .init(code: status))
        }
        let tls = try ServerTLSMaterial(certificateChain: pki.serverPEM, privateKey: pki.serverKey, clientCA: pki.caPEM).makeTLSConfiguration()
        return try await RunningServer.start { onRunning in
            Application(router: router, server: try .tls(.http1(), tlsConfiguration: tls),
                        configuration: .init(address: .hostname(host, port: port)),
                        onServerRunning: { await onRunning($0.localAddress?.port ?? 0) }, logger: .quiet)
        }
    }
}

/// Accepts TCP connections and resets them at once (SO_LINGER 0): the client sees "connection reset by peer".
/// Plain POSIX sockets on a thread: NIO's socket options take only integer values.
final class ResettingListener: Sendable {
    private let fd: Int32

    static func start(port: Int) throws -> ResettingListener {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else {
            close(fd)
            throw TestFailure("cannot listen on \(port)")
        }
        let thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                var hard = linger(l_onoff: 1, l_linger: 0)
                setsockopt(client, SOL_SOCKET, SO_LINGER, &hard, socklen_t(MemoryLayout<linger>.size))
                close(client)
            }
        }
        thread.start()
        return ResettingListener(fd: fd)
    }

    private init(fd: Int32) {
        self.fd = fd
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

/// nginx from Debian as a WebDAV PUT endpoint with `ssl_verify_client on`, started for one test.
final class NginxEndpoint: Sendable {
    let port: Int
    let root: URL
    let prefix: URL
    private let process: Process

    /// nil when nginx is not installed (Scripts/setup installs it).
    static func start(pki: TestPKI, directory: URL, http2: Bool) async throws -> NginxEndpoint? {
        guard let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            return nil
        }
        let port = try Fixtures.freePort()
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("ingest"), withIntermediateDirectories: true)
        for name in ["logs", "tmp"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        // As root the master starts workers as `nobody` by default, which could not write the test's directory.
        let user = geteuid() == 0 ? "user root root;" : ""
        let config = """
            \(user)
            worker_processes 1;
            daemon off;
            master_process on;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/logs/error.log warn;
            events { worker_connections 64; }
            http {
              access_log \(directory.path)/logs/access.log;
              client_body_temp_path \(directory.path)/tmp/body;
              proxy_temp_path \(directory.path)/tmp/proxy;
              fastcgi_temp_path \(directory.path)/tmp/fastcgi;
              uwsgi_temp_path \(directory.path)/tmp/uwsgi;
              scgi_temp_path \(directory.path)/tmp/scgi;
              server {
                listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                ssl_certificate \(pki.path("server.pem"));
                ssl_certificate_key \(pki.path("server.key"));
                ssl_client_certificate \(pki.path("ca.pem"));
                ssl_verify_client on;
                ssl_protocols TLSv1.2 TLSv1.3;
                location /ingest/ {
                  root \(root.path);
                  dav_methods PUT DELETE;
                  create_full_put_path on;
                  client_max_body_size 0;
                }
              }
            }
            """
        let configURL = directory.appendingPathComponent("nginx.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", directory.path, "-c", configURL.path, "-e", "\(directory.path)/logs/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let endpoint = NginxEndpoint(port: port, root: root, prefix: directory, process: process)
        try await Fixtures.waitUntil("nginx listening on \(port)", timeout: .seconds(15)) {
            guard process.isRunning else {
                let log = (try? String(contentsOf: directory.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
                throw TestFailure("nginx exited: \(log)")
            }
            return Fixtures.isListening(port: port)
        }
        return endpoint
    }

    private init(port: Int, root: URL, prefix: URL, process: Process) {
        self.port = port
        self.root = root
        self.prefix = prefix
        self.process = process
    }

    func stop() {
        process.terminate()  // SIGTERM: fast shutdown of master and worker
        process.waitUntilExit()
    }
}
