import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTLS
import Ingest
import Logging
import NIOCore
import NIOSSL

/// Server certificate and key plus the CA that client certificates must chain to (PEM bytes, in memory).
public struct ServerTLSMaterial: Sendable {
    public var certificateChain: [UInt8]
    public var privateKey: [UInt8]
    public var clientCA: [UInt8]

    public init(certificateChain: [UInt8], privateKey: [UInt8], clientCA: [UInt8]) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.clientCA = clientCA
    }

    /// TLS ≥ 1.2 that requires a client certificate chaining to `clientCA` (handshake fails without one).
    public func makeTLSConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(certificateChain).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: privateKey, format: .pem)),
            trustRoots: .certificates(try NIOSSLCertificate.fromPEMBytes(clientCA)))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}

/// `pushav receive`: a reference CMAF ingest endpoint (DASH-IF Interface-1 with Matter's path layout).
public struct IngestServer: Sendable {
    public struct Configuration: Sendable {
        public var root: URL
        public var host: String = "127.0.0.1"
        /// 0 picks a free port (see `onRunning`).
        public var port: Int = 8443
        /// nil serves plain HTTP, which is only allowed on a loopback address.
        public var tls: ServerTLSMaterial?
        /// Larger bodies get 413.
        public var maximumBodySize: Int = 64 * 1024 * 1024
        public var validatesMedia: Bool = true
        /// `--strict`: the CSA test server's strict-mode rules (needs TLS: they include a client certificate).
        public var strict: StrictIngestRules?
        /// Offer HTTP/2 in ALPN (with TLS only), as the Matter reference uploader prefers; HTTP/1.1 stays available.
        public var http2: Bool = false
        /// Told of every upload's answer (its path, status and message), after the object was stored or refused:
        /// how `pushav receive` says what arrives without `--verbose`.
        public var onAnswer: (@Sendable (_ path: String, _ status: Int, _ message: String) -> Void)?

        public init(
            root: URL, host: String = "127.0.0.1", port: Int = 8443, tls: ServerTLSMaterial? = nil,
            maximumBodySize: Int = 64 * 1024 * 1024, validatesMedia: Bool = true, strict: StrictIngestRules? = nil,
            http2: Bool = false
        ) {
            self.root = root
            self.host = host
            self.port = port
            self.tls = tls
            self.maximumBodySize = maximumBodySize
            self.validatesMedia = validatesMedia
            self.strict = strict
            self.http2 = http2
        }
    }

    public struct ConfigurationError: Error, CustomStringConvertible {
        public var description: String
    }

    public let configuration: Configuration
    public let store: IngestStore
    private let logger: Logger

    public init(configuration: Configuration, logger: Logger = Logger(label: "pushav.receive")) throws {
        if configuration.tls == nil, !["127.0.0.1", "::1", "localhost"].contains(configuration.host) {
            throw ConfigurationError(description: "plain HTTP is only served on loopback; give TLS material for \(configuration.host)")
        }
        if configuration.strict != nil, configuration.tls == nil {
            throw ConfigurationError(description: "strict mode requires a client certificate on every upload: give TLS material with a client CA, not plain HTTP")
        }
        self.configuration = configuration
        self.store = IngestStore(root: configuration.root, validatesMedia: configuration.validatesMedia, strict: configuration.strict)
        self.logger = logger
        try FileManager.default.createDirectory(at: configuration.root, withIntermediateDirectories: true)
    }

    /// The Hummingbird application; `onRunning` receives the bound port once listening.
    public func makeApplication(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let router = Router()
        let store = self.store
        let limit = configuration.maximumBodySize
        let logger = self.logger
        let onAnswer = configuration.onAnswer
        let upload: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            let path = request.uri.path
            // The head arrives before the body (chunked uploads stream for a whole segment): note when, for latency.
            logger.debug("request started", metadata: [
                "method": "\(request.method)", "path": "\(path)", "at": "\(Date().timeIntervalSince1970)",
            ])
            if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
                return Self.text(.contentTooLarge, "body of \(length) bytes exceeds \(limit)")
            }
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: limit)
            } catch {
                return Self.text(.contentTooLarge, "body exceeds \(limit) bytes")
            }
            // Validation, fsync and rename block: off the cooperative pool, which every handler shares.
            let answer = try await BlockingIO.run { store.accept(path: path, body: Array(buffer: body)) }
            logger.info("\(request.method) \(path) → \(answer.status)", metadata: ["message": "\(answer.message)"])
            onAnswer?(path, answer.status, answer.message)
            // 204 must not carry a body (clients would read it as the next response on the connection).
            if answer.status == 204 { return Response(status: .noContent) }
            return Self.text(HTTPResponse.Status(code: answer.status), answer.message)
        }
        router.put("**", use: upload)
        router.post("**", use: upload)
        router.get("/sessions") { _, _ -> Response in
            let data = try JSONEncoder().encode(try await BlockingIO.run { store.sessions() })
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.get("/") { _, _ -> Response in
            let sessions = try await BlockingIO.run { store.sessions() }
            return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: Self.page(sessions))))
        }
        // /media/<session path>/<track>.mp4: header + segments concatenated, playable by a <video> element.
        router.get("/media/**") { request, _ -> Response in
            var components = request.uri.path.split(separator: "/").map(String.init)
            guard components.count >= 3, components.removeFirst() == "media", let file = components.popLast(), file.hasSuffix(".mp4")
            else { return Self.text(.notFound, "no such track") }
            let sessionPath = components.joined(separator: "/"), track = String(file.dropLast(4))
            guard let bytes = try await BlockingIO.run({ store.playableTrack(sessionPath: sessionPath, track: track) })
            else { return Self.text(.notFound, "no such track") }
            return Response(status: .ok, headers: [.contentType: "video/mp4"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let server: HTTPServerBuilder = if let tls = configuration.tls, configuration.http2 {
            try .http2Upgrade(tlsConfiguration: tls.makeTLSConfiguration())
        } else if let tls = configuration.tls {
            try .tls(.http1(), tlsConfiguration: tls.makeTLSConfiguration())
        } else {
            .http1()
        }
        return Application(
            router: router, server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "pushav-receive"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    private static func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }

    static func page(_ sessions: [IngestStore.Session]) -> String {
        func escape(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        var html = """
            <!doctype html><html><head><meta charset="utf-8"><title>pushav receive</title>
            <style>body{font-family:sans-serif;margin:2em}section{margin-bottom:2em}video{max-width:640px;display:block}</style>
            </head><body><h1>Received sessions</h1>
            """
        if sessions.isEmpty { html += "<p>Nothing received yet.</p>" }
        for session in sessions {
            html += "<section><h2>\(escape(session.path))</h2><ul>"
            for track in session.tracks {
                html += "<li>\(escape(track.name)): \(track.segments.count) segments, \(track.bytes) bytes\(track.hasHeader ? "" : " (no header)")</li>"
            }
            html += "</ul>"
            if let video = session.tracks.first(where: { $0.hasHeader && $0.name != "audio" }) ?? session.tracks.first(where: \.hasHeader) {
                html += "<video controls muted preload=\"auto\" src=\"/media/\(escape(session.path))/\(escape(video.name)).mp4\"></video>"
            }
            html += "</section>"
        }
        // Each player mirrors its media state in data attributes (what a test or a script reads), as on serve's page.
        html += """
            <script>
            for (const video of document.querySelectorAll("video")) {
              const mirror = () => {
                video.dataset.readyState = String(video.readyState);
                video.dataset.duration = String(isFinite(video.duration) ? video.duration : 0);
              };
              for (const name of ["loadedmetadata", "loadeddata", "canplay"]) video.addEventListener(name, mirror);
              video.addEventListener("error", () => { video.dataset.error = video.error ? String(video.error.code) : "unknown"; });
              mirror();
            }
            </script>
            """
        return html + "</body></html>\n"
    }
}
