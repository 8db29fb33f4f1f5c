import Crypto
import Domain
import Foundation
import Ingest
import Logging
import Recorder
import Testing
import TestSupport
import Synchronization
import Timeline

/// Scratch directories, free ports, waiting on conditions with deadlines, and running the `pushav` binary.
enum Fixtures {
    static let packageRoot = TestPaths.packageRoot

    static func scratchDirectory(_ label: String = #function) throws -> URL {
        try TestPaths.scratchDirectory(label, prefix: "pushav-ingest")
    }

    static func freePort() throws -> Int { try LocalPorts.freeTCPPort() }

    static func isListening(port: Int) -> Bool { LocalPorts.isListening(port: port) }

    /// Polls `condition` until it holds; fails the test (and throws) after `timeout`.
    static func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
        try await Polling.waitUntil(what, timeout: timeout, condition)
    }

    /// The `pushav` executable built next to the test bundle.
    static var pushav: URL { TestPaths.pushav }

    static func sha256(_ bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Runs a blocking call on a plain thread: blocking the test's cooperative threads would starve the in-process
    /// servers (their handlers run there) and make them look stalled.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await BlockingWork.run(body)
    }

    /// Runs a process to its end. Not queued with the heavy work (``BlockingWork/runHeavy(_:)``): these suites have
    /// time limits, and their few `pushav` runs must not wait minutes behind the recorder tests' queue.
    static func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await offPool { try runBlocking(executable, arguments) }
    }

    static func isolatedEnvironment() -> [String: String] { TestPaths.isolatedEnvironment() }

    static func runBlocking(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let result = try ProcessRun.runBlocking(URL(fileURLWithPath: executable), arguments, environment: isolatedEnvironment())
        return (result.status, result.output)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Certificates made by the openssl CLI for one test: a CA, a server certificate for localhost/127.0.0.1, a client
/// certificate (P-256, like Matter) and a client certificate from an unrelated CA.
struct TestPKI: Sendable {
    let directory: URL
    var caPEM: [UInt8] { read("ca.pem") }
    var serverPEM: [UInt8] { read("server.pem") }
    var serverKey: [UInt8] { read("server.key") }
    var clientPEM: [UInt8] { read("client.pem") }
    var clientKey: [UInt8] { read("client.key") }
    var strangerPEM: [UInt8] { read("stranger.pem") }
    var strangerKey: [UInt8] { read("stranger.key") }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    private func read(_ name: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path(name)) ?? Data()) }

    var clientMaterial: ClientTLSMaterial {
        ClientTLSMaterial(trustedCertificates: caPEM, certificateChain: clientPEM, privateKey: clientKey)
    }

    /// `addresses`: more IP addresses the server certificate is valid for (besides localhost and 127.0.0.1).
    static func make(in directory: URL, addresses: [String] = []) async throws -> TestPKI {
        try await Fixtures.offPool { try makeBlocking(in: directory, addresses: addresses) }
    }

    private static func makeBlocking(in directory: URL, addresses: [String]) throws -> TestPKI {
        let extra = addresses.map { ",IP:\($0)" }.joined()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd '\(directory.path)'
            ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=pushav-test-ca \
              -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
            openssl req -x509 $ec -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=other-ca \
              -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\(extra)\\nextendedKeyUsage=serverAuth\\n' > server.ext
            printf 'extendedKeyUsage=clientAuth\\n' > client.ext
            openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem 2>/dev/null
            openssl req $ec -keyout client.key -out client.csr -subj /CN=camera-01 2>/dev/null
            openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out client.pem 2>/dev/null
            openssl req $ec -keyout stranger.key -out stranger.csr -subj /CN=stranger 2>/dev/null
            openssl x509 -req -in stranger.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -days 2 -extfile client.ext -out stranger.pem 2>/dev/null
            """
        let result = try Fixtures.runBlocking("/bin/sh", ["-c", script])
        guard result.status == 0 else { throw TestFailure("openssl failed (run Scripts/setup): \(result.output)") }
        return TestPKI(directory: directory)
    }
}

/// One recorded session's CMAF objects, made in-process: a generated Y4M clip recorded by our `Recorder`
/// (the raw video is transcoded to H.264), so the tests need no media files.
struct SampleMedia: Sendable {
    struct Object: Sendable {
        var object: UploadObject
        var bytes: [UInt8]
    }

    var objects: [Object]
    /// Recording events in order, chunks included, as an uploader sees them.
    var events: [IngestEvent]

    var byPath: [String: [UInt8]] { Dictionary(uniqueKeysWithValues: objects.map { ($0.object.relativePath, $0.bytes) }) }

    /// Cached per chunking mode: recording takes a moment and every test needs the same bytes.
    static func make(chunked: Bool, session: SessionNumber = 1) async throws -> SampleMedia {
        try await cache.media(chunked: chunked, session: session)
    }

    private static let cache = Cache()

    private actor Cache {
        var made: [String: SampleMedia] = [:]

        func media(chunked: Bool, session: SessionNumber) async throws -> SampleMedia {
            let key = "\(chunked)-\(session)"
            if let media = made[key] { return media }
            let media = try await SampleMedia.record(chunked: chunked, session: session)
            made[key] = media
            return media
        }
    }

    /// Writes a 64×48 Y4M clip of `frames` frames at 25 fps whose picture changes every frame.
    static func writeY4M(to handle: FileHandle, frames: Range<Int>, header: Bool) throws {
        let width = 64, height = 48
        if header { try handle.write(contentsOf: Data("YUV4MPEG2 W\(width) H\(height) F25:1 Ip A1:1 C420jpeg\n".utf8)) }
        for frame in frames {
            var bytes = Array("FRAME\n".utf8)
            for y in 0..<height {
                for x in 0..<width { bytes.append(UInt8(truncatingIfNeeded: x * 3 + y + frame * 5)) }
            }
            bytes += [UInt8](repeating: UInt8(truncatingIfNeeded: 128 + frame), count: width * height / 4)
            bytes += [UInt8](repeating: 100, count: width * height / 4)
            try handle.write(contentsOf: bytes)
        }
    }

    private static func record(chunked: Bool, session: SessionNumber) async throws -> SampleMedia {
        let directory = try Fixtures.scratchDirectory("sample")
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("input.y4m")
        _ = FileManager.default.createFile(atPath: input.path, contents: nil)
        let handle = try FileHandle(forWritingTo: input)
        try writeY4M(to: handle, frames: 0..<100, header: true)
        try handle.close()
        var options = RecordingOptions(output: directory.appendingPathComponent("out"))
        options.segmentDuration = .milliseconds(1000)
        options.chunkDuration = chunked ? .milliseconds(250) : nil
        options.includeAudio = false
        options.writeClips = false
        options.policies[0].firstSession = session
        let collected = EventLog()
        options.events = { event in collected.append(event) }
        _ = try await Recorder.recordContinuous(input: input.path, options: options)
        var objects: [Object] = []
        var events: [IngestEvent] = []
        for event in collected.events {
            switch event {
            case .initSegment(let session, let track, _, let bytes):
                objects.append(Object(object: .header(session: session, track: track), bytes: bytes))
                events.append(.header(session: session, track: track, bytes: bytes))
            case .chunk(let session, let track, let number, let bytes):
                events.append(.chunk(session: session, track: track, number: number, bytes: bytes))
            case .segmentFinished(let session, let track, let number, _, let bytes):
                objects.append(Object(object: UploadObject(session: session, track: track, number: number), bytes: bytes))
                events.append(.segment(session: session, track: track, number: number, bytes: bytes))
            case .sessionFinished(let record):
                events.append(.sessionFinished(session: record.session))
            case .manifest(let session, let isFinal, _, let bytes):
                objects.append(Object(object: .manifest(session: session, isFinal: isFinal), bytes: bytes))
                events.append(.manifest(session: session, isFinal: isFinal, bytes: bytes))
            case .sessionAbandoned(let session, _):
                events.append(.sessionAbandoned(session: session))
            case .sessionStarted:
                break
            }
        }
        guard objects.count >= 4 else { throw TestFailure("recording produced only \(objects.count) objects") }
        return SampleMedia(objects: objects, events: events)
    }
}

/// Collects events from the media thread.
final class EventLog: Sendable {
    private let storage = Mutex<[RecordingEvent]>([])
    func append(_ event: RecordingEvent) { storage.withLock { $0.append(event) } }
    var events: [RecordingEvent] { storage.withLock { $0 } }
}

extension Logger {
    static let quiet: Logger = {
        var logger = Logger(label: "pushav.tests")
        logger.logLevel = .critical
        return logger
    }()
}
