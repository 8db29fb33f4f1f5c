import ArgumentParser
import Domain
import Foundation
import Hummingbird
import Ingest
import IngestServer
import Logging
import Synchronization

struct ReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Run a reference CMAF ingest endpoint (HTTPS with client certificates) that stores uploads under a root.",
        discussion: """
            Accepts PUT and POST of session_<N>/<track>/<track>.init and …/segment_<NNNN>.m4s (optionally below a \
            publishing-point prefix), checks the layout, the header-before-segment order (412 otherwise) and each \
            object with pushav's CMAF checker (400 with the reasons), and writes atomically. GET / lists the sessions \
            with a player; GET /sessions returns them as JSON.

            Examples:
              pushav receive --root received --port 8443 --cert server.pem \\
                  --key server.key --client-ca ca.pem
              pushav receive --root received --port 8080 --insecure-http
              pushav receive --root received --cert server.pem --key server.key \\
                  --client-ca ca.pem --strict dash
            """
    )

    @Option(name: .long, help: "Directory the uploads are stored under (created if missing).")
    var root: String

    @Option(name: .long, help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(name: .long, help: "Port to listen on (0 = any free port, printed on start).")
    var port: Int = 8443

    @Option(name: .long, help: "PEM server certificate chain.")
    var cert: String?

    @Option(name: .long, help: "PEM server private key.")
    var key: String?

    @Option(name: .long, help: "PEM CA that client certificates must chain to (clients without one are refused).")
    var clientCA: String?

    @Flag(name: .long, help: "Serve plain HTTP without client authentication (loopback addresses only).")
    var insecureHttp = false

    @Option(name: .long, help: "Largest accepted body in MiB (413 beyond).")
    var maxBodySize: Int = 64

    @Flag(name: .long, help: "Offer HTTP/2 (ALPN h2) besides HTTP/1.1; needs TLS.")
    var http2 = false

    @Flag(name: .long, help: "Store objects without running the CMAF checker.")
    var noValidation = false

    @Option(name: .long, help: ArgumentHelp(
        "Apply the CSA Push AV test server's strict-mode rules for this interface: cmaf-ingest or dash.",
        discussion: "cmaf-ingest refuses manifests; dash wants the dynamic MPD first, each track's header once and before its segments, and the static MPD after a segment. Broken rules answer 400 naming the rule. Needs TLS (every upload must present a client certificate).",
        valueName: "interface"))
    var strict: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --strict: the track names a stream may use, as PREFIX=NAME[,NAME…] (repeatable).",
        discussion: "What the CSA test server's `POST /streams/{id}/trackName` sets and TC-PAVSTI-1.1/1.2 expect: e.g. --expect-track streams/1=media. PREFIX is the path before session_<N> (\"\" for the root: --expect-track =media). Any other name under that prefix answers 400 \"Track name mismatch\".",
        valueName: "prefix=names"))
    var expectTrack: [String] = []

    @Flag(name: .long, help: "Log each request (to stderr).")
    var verbose = false

    /// `--expect-track` as prefix → names.
    func expectedTrackNames() throws -> [String: Set<TrackName>] {
        var expected: [String: Set<TrackName>] = [:]
        for entry in expectTrack {
            guard let equals = entry.firstIndex(of: "=") else {
                throw ValidationError("--expect-track: PREFIX=NAME[,NAME…], got \"\(entry)\"")
            }
            let prefix = entry[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            let names = entry[entry.index(after: equals)...].split(separator: ",").map(String.init)
            guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty && !$0.contains("/") }) else {
                throw ValidationError("--expect-track: names are one path segment each, got \"\(entry)\"")
            }
            expected[prefix, default: []].formUnion(names.map(TrackName.init(rawValue:)))
        }
        return expected
    }

    func validate() throws {
        if let strict, StrictIngestRules.Interface(rawValue: strict) == nil {
            throw ValidationError("--strict must be cmaf-ingest or dash, got \"\(strict)\"")
        }
        if !expectTrack.isEmpty && strict == nil { throw ValidationError("--expect-track goes with --strict") }
        _ = try expectedTrackNames()
        if strict != nil && insecureHttp {
            throw ValidationError("--strict needs TLS: the rules include a client certificate on every upload")
        }
        if insecureHttp {
            guard cert == nil, key == nil, clientCA == nil else {
                throw ValidationError("--insecure-http takes no --cert, --key or --client-ca")
            }
        } else if cert == nil || key == nil || clientCA == nil {
            throw ValidationError("HTTPS needs --cert, --key and --client-ca (or --insecure-http on loopback)")
        }
        if http2 && insecureHttp { throw ValidationError("--http2 needs TLS") }
        guard maxBodySize > 0 else { throw ValidationError("--max-body-size must be positive") }
    }

    func run() async throws {
        let logger = CLILogging.logger(verbose: verbose)
        let tls = try cert.map { cert in
            ServerTLSMaterial(certificateChain: try Self.read(cert), privateKey: try Self.read(key!), clientCA: try Self.read(clientCA!))
        }
        var configuration = IngestServer.Configuration(root: URL(fileURLWithPath: root), tls: tls)
        configuration.host = host
        configuration.port = port
        configuration.maximumBodySize = maxBodySize << 20
        configuration.validatesMedia = !noValidation
        configuration.http2 = http2
        let expected = try expectedTrackNames()
        configuration.strict = strict.flatMap(StrictIngestRules.Interface.init(rawValue:)).map {
            StrictIngestRules(interface: $0, expectedTrackNames: expected)
        }
        // Without --verbose a user still sees what arrives: a line per new session, one per refused object, and
        // the totals at the end.
        let arrivals = ReceiveArrivals()
        configuration.onAnswer = { path, status, message in arrivals.note(path: path, status: status, message: message) }
        let server: IngestServer
        do {
            server = try IngestServer(configuration: configuration, logger: logger)
        } catch {
            throw CLIError(describing: error)
        }
        let scheme = tls == nil ? "http" : "https"
        let app = try server.makeApplication { port in
            // Unbuffered: scripts wait for this line to know the port.
            StandardOutput.write("pushav receive: listening on \(scheme)://\(host):\(port)/ storing under \(root)\n")
        }
        try await app.runService()
        StandardOutput.write("pushav receive: stopped; \(arrivals.summary)\n")
    }

    private static func read(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(path): \(UnreadableFile.reason(path))") }
        return Array(data)
    }
}

/// `pushav upload`: delivers what a spool holds (e.g. after a crash) and exits.
struct UploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Upload what a spool holds (left by an interrupted `pushav record --push`) and exit when delivered."
    )

    @OptionGroup var push: PushOptions

    @Option(name: .long, help: "Segment duration in milliseconds the clips were cut with (sets the timeouts).")
    var segmentDuration: Int = 4000

    @Flag(name: .long, help: "Log what happens (to stderr).")
    var verbose = false

    func validate() throws {
        guard push.push != nil, push.spool != nil else { throw ValidationError("upload needs --push and --spool") }
    }

    func run() async throws {
        let logger = CLILogging.logger(verbose: verbose)
        guard let uploader = try push.makeUploader(defaultSpool: URL(fileURLWithPath: push.spool!),
                                                   segmentDuration: .milliseconds(segmentDuration), logger: logger)
        else { return }
        let upload = RecordingUpload(uploader: uploader, grace: push.uploadGrace.map { .milliseconds($0) })
        try await upload.finish()
    }
}

/// What `pushav receive` prints as uploads arrive (bounded: one set entry per session seen).
final class ReceiveArrivals: Sendable {
    private struct Counts {
        var sessions: Set<String> = []
        var stored = 0
        var refused = 0
    }

    private let counts = Mutex(Counts())

    func note(path: String, status: Int, message: String) {
        let line: String? = counts.withLock { counts in
            guard (200..<300).contains(status) else {
                counts.refused += 1
                return "pushav receive: refused \(path): \(status) \(message)"
            }
            counts.stored += 1
            // `…/session_N/…`: the session's folder, said once when its first object arrives.
            let parts = path.split(separator: "/")
            guard let index = parts.firstIndex(where: { $0.hasPrefix("session_") }) else { return nil }
            let session = parts[...index].joined(separator: "/")
            guard counts.sessions.insert(session).inserted else { return nil }
            return "pushav receive: receiving \(session)"
        }
        if let line { StandardOutput.write(line + "\n") }
    }

    var summary: String {
        counts.withLock { "\($0.stored) object(s) stored in \($0.sessions.count) session(s), \($0.refused) refused" }
    }
}
