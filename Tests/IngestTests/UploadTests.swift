import AsyncHTTPClient
import Foundation
import Ingest
import IngestServer
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// Runs an uploader over `media`'s events against `url` and returns when it drained (or gave up).
struct UploadRun {
    let uploader: SegmentUploader
    let task: Task<UploadSummary, Never>

    static func fastPolicy() -> UploadPolicy {
        var policy = UploadPolicy(segmentDuration: .milliseconds(200))
        policy.initialBackoff = .milliseconds(10)
        policy.maximumBackoff = .milliseconds(80)
        // Generous enough for a loaded 2-core CI machine; the stall test shortens the response timeout.
        policy.connectTimeout = .seconds(2)
        policy.requestTimeout = .seconds(5)
        policy.maximumAuthFailures = 4
        return policy
    }

    static func start(url: String, tls: ClientTLSMaterial, spool directory: URL, policy: UploadPolicy = fastPolicy(),
                      connection: String = "test", logger: Logger = .quiet) throws -> UploadRun {
        try start(url: url, tls: tls, spool: try SegmentSpool(directory: directory, logger: .quiet), policy: policy, connection: connection,
                  logger: logger)
    }

    static func start(url: String, tls: ClientTLSMaterial, spool: SegmentSpool, policy: UploadPolicy = fastPolicy(),
                      connection: String = "test", logger: Logger = .quiet) throws -> UploadRun {
        let uploader = try SegmentUploader(spool: spool, endpoint: UploadEndpoint(url: url, connection: connection, tls: tls),
                                           policy: policy, segmentDuration: .milliseconds(200), logger: logger)
        return UploadRun(uploader: uploader, task: Task { await uploader.run() })
    }

    func feed(_ events: [IngestEvent]) async throws {
        for event in events { try await uploader.handle(event) }
    }

    func finish() async -> UploadSummary {
        uploader.finishWhenDrained()
        return await task.value
    }
}

/// Every object of `media` is under `root` byte for byte (SHA-256).
func expectDelivered(_ media: SampleMedia, under root: URL, sourceLocation: SourceLocation = #_sourceLocation) {
    for object in media.objects {
        let data = FileManager.default.contents(atPath: root.appendingPathComponent(object.object.relativePath).path)
        #expect(data.map(Fixtures.sha256) == Fixtures.sha256(object.bytes), "\(object.object)", sourceLocation: sourceLocation)
    }
}

/// Per track: the first stored object is the header and segments were stored in order. A segment may be stored
/// twice in a row (at-least-once: a response lost to a timeout makes the uploader resend it) but never after a later one.
func expectInOrder(_ paths: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    let parsed = paths.compactMap { try? IngestPath.parse($0).object }
    for track in Set(parsed.map(\.track)) {
        let objects = parsed.filter { $0.track == track }
        #expect(objects.first?.isHeader == true, "track \(track) starts with \(objects.first.map(\.description) ?? "nothing")",
                sourceLocation: sourceLocation)
        let segments = objects.filter { !$0.isHeader }.map(\.number)
        #expect(segments == segments.sorted(), "track \(track): \(segments)",
                sourceLocation: sourceLocation)
    }
}

@Suite(.timeLimit(.minutes(2))) struct IngestServerUploadTests {
    /// HTTP/1.1 with whole segments, and HTTP/2 (ALPN) with chunks streamed as DATA frames.
    @Test(arguments: [false, true]) func everyByteArrivesOverMutualTLSAndAClientWithoutCertificateIsRefused(http2: Bool) async throws {
        let directory = try Fixtures.scratchDirectory("mtls\(http2)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        let media = try await SampleMedia.make(chunked: http2)
        let root = directory.appendingPathComponent("received")
        let server = try await IngestServer.startForTest(root: root, pki: pki, http2: http2)
        let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: pki.clientMaterial,
                                      spool: directory.appendingPathComponent("spool"))
        try await run.feed(media.events)
        let summary = await run.finish()
        #expect(summary.failure == nil)
        #expect(summary.complete)
        expectDelivered(media, under: root)
        #expect(try await run.uploader.spool.statistics().bytes == 0, "delivered and finished sessions leave the spool")

        // No client certificate, and a certificate from another CA: the handshake fails.
        for chain in [[UInt8](), pki.strangerPEM] {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pki.caPEM))
            if !chain.isEmpty {
                tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(chain).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: pki.strangerKey, format: .pem))
            }
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            var request = HTTPClientRequest(url: "https://localhost:\(server.port)/session_9/video/video.init")
            request.method = .PUT
            request.body = .bytes(ByteBuffer(bytes: media.objects[0].bytes))
            await #expect(throws: (any Error).self) { _ = try await client.execute(request, timeout: .seconds(5)) }
            try await client.shutdown()
        }
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("session_9").path))
        await server.stop()
    }

    @Test func validationAnswers() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        let media = try await SampleMedia.make(chunked: false)
        let root = directory.appendingPathComponent("received")
        let server = try await IngestServer.startForTest(root: root, pki: pki, maximumBodySize: 64 * 1024)
        var configuration = HTTPClient.Configuration(tlsConfiguration: try pki.clientMaterial.makeTLSConfiguration())
        // Generous: the first request's TLS handshake can wait many seconds on a loaded 2-core CI machine, and what
        // is checked here is the answer, not how fast it comes.
        configuration.timeout = .init(connect: .seconds(30), read: .seconds(30))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        func put(_ path: String, _ bytes: [UInt8], method: HTTPMethod = .PUT) async -> (Int, String, [UInt8]) {
            var request = HTTPClientRequest(url: "https://localhost:\(server.port)/\(path)")
            request.method = method
            if method != .GET { request.body = .bytes(ByteBuffer(bytes: bytes)) }
            do {
                let response = try await client.execute(request, timeout: .seconds(60))
                let body = try await response.body.collect(upTo: 1 << 24)
                return (Int(response.status.code), String(buffer: body), Array(buffer: body))
            } catch {
                return (-1, "\(error)", [])
            }
        }
        let header = media.objects[0].bytes
        let segment = media.objects[1].bytes
        let early = await put("session_1/video/segment_1001.m4s", segment)
        #expect(early.0 == 412, "segment before its header: \(early.0) \(early.1)")
        #expect(await put("session_1/video/audio.init", header).0 == 400, "header named after another track")
        #expect(await put("session_1/video/segment_1.m4s", segment).0 == 400, "fewer than four digits")
        #expect(await put("../session_1/video/video.init", header).0 >= 400, "traversal")
        #expect(await put("x/%2e%2e/session_1/video/video.init", header).0 == 403, "encoded traversal")
        let (status, reason, _) = await put("session_1/video/video.init", Array(header.prefix(40)))
        #expect(status == 400 && reason.contains("invalid CMAF header"), "\(reason)")
        #expect(await put("session_1/video/video.init", header).0 == 201)
        #expect(await put("session_1/video/video.init", header).0 == 204, "replacing is fine (a restarted source resends)")
        let truncated = await put("session_1/video/segment_1001.m4s", Array(segment.dropLast(10)))
        #expect(truncated.0 == 400, "truncated segment: \(truncated.1)")
        #expect(await put("session_1/video/segment_1001.m4s", segment, method: .POST).0 == 201, "POST is accepted too")
        #expect(await put("session_1/video/segment_1002.m4s", [UInt8](repeating: 0, count: 70 * 1024)).0 == 413)
        #expect(FileManager.default.contents(atPath: root.appendingPathComponent("session_1/video/segment_1001.m4s").path)
            .map(Array.init) == segment)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("session_1/video").path)
        #expect(leftovers.sorted() == ["segment_1001.m4s", "video.init"], "no temp files left behind")

        let sessions = try? JSONDecoder().decode([IngestStore.Session].self, from: Data(await put("sessions", [], method: .GET).1.utf8))
        #expect(sessions?.map(\.path) == ["session_1"])
        #expect(sessions?.first?.tracks.first?.segments == [1001])
        let html = await put("", [], method: .GET).1
        #expect(html.contains("<video") && html.contains("/media/session_1/video.mp4"))
        let playable = await put("media/session_1/video.mp4", [], method: .GET)
        #expect(playable.0 == 200 && playable.2 == header + segment)
        try await client.shutdown()
        await server.stop()
    }

    /// With chunks, the PUT of a segment starts with its first chunk, before the segment is complete.
    @Test func chunkedSegmentsStreamBeforeTheyAreComplete() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        let media = try await SampleMedia.make(chunked: true)
        let root = directory.appendingPathComponent("received")
        let endpoint = ScriptedEndpoint(root: root)
        let server = try await endpoint.start(pki: pki)
        let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: pki.clientMaterial,
                                      spool: directory.appendingPathComponent("spool"))
        var events = media.events[...]
        while let event = events.first {
            events = events.dropFirst()
            try await run.uploader.handle(event)
            if case .header = event {
                try await Fixtures.waitUntil("header delivered") { endpoint.storedPaths.contains("session_1/video/video.init") }
            }
            if case .chunk(_, _, 1001, _) = event {
                // The first chunk alone must open the request for segment_1001.
                try await Fixtures.waitUntil("segment_1001 request started") { endpoint.started.contains("session_1/video/segment_1001.m4s") }
                break
            }
        }
        #expect(!endpoint.storedPaths.contains("session_1/video/segment_1001.m4s"))
        try await run.feed(Array(events))
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete)
        expectDelivered(media, under: root)
        expectInOrder(endpoint.storedPaths)
        let streamed = endpoint.arrivals.filter { $0.path.hasSuffix("segment_1001.m4s") }
        #expect(streamed.first?.status == 201, "\(streamed)")
        // Streamed once, not sent again from the spool once the live PUT was answered. A live PUT may still go
        // unanswered within its deadline on a loaded machine (the ingest stored it, the answer came too late): that
        // one is an attempt the uploader retries from the spool, at least once, and counts in `retries`.
        #expect(streamed.count - 1 <= summary.retries, "sent again without a failed attempt: \(streamed), \(summary)")
        await server.stop()
    }
}

extension IngestServerUploadTests {
    /// A recording that stops mid-segment: the streamed PUT is aborted (no truncated segment is stored) and the
    /// uploader still drains and returns.
    @Test func aSegmentThatNeverCompletesIsAbortedNotStoredTruncated() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        let media = try await SampleMedia.make(chunked: true)
        let endpoint = ScriptedEndpoint(root: directory.appendingPathComponent("received"))
        let server = try await endpoint.start(pki: pki)
        let run = try UploadRun.start(url: "https://localhost:\(server.port)/", tls: pki.clientMaterial,
                                      spool: directory.appendingPathComponent("spool"))
        for event in media.events {
            if case .segment = event { break }
            try await run.uploader.handle(event)
            if case .header = event {
                try await Fixtures.waitUntil("header delivered") { endpoint.storedPaths.contains("session_1/video/video.init") }
            }
        }
        try await Fixtures.waitUntil("segment_1001 streaming") { endpoint.started.contains("session_1/video/segment_1001.m4s") }
        let summary = await run.finish()
        #expect(summary.failure == nil)
        #expect(endpoint.storedPaths == ["session_1/video/video.init"])
        await server.stop()
    }
}

@Suite(.timeLimit(.minutes(2))) struct NginxUploadTests {
    @Test(arguments: [false, true]) func everyByteArrivesAtNginxAndAClientWithoutCertificateIsRefused(http2: Bool) async throws {
        let directory = try Fixtures.scratchDirectory("nginx\(http2)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        guard let nginx = try await NginxEndpoint.start(pki: pki, directory: directory.appendingPathComponent("nginx"), http2: http2) else {
            Issue.record("nginx is not installed; run Scripts/setup")
            return
        }
        defer { nginx.stop() }
        let media = try await SampleMedia.make(chunked: http2)  // chunked bodies over HTTP/1.1 chunked encoding and HTTP/2 frames
        let run = try UploadRun.start(url: "https://127.0.0.1:\(nginx.port)/ingest/cam1/", tls: pki.clientMaterial,
                                      spool: directory.appendingPathComponent("spool"))
        try await run.feed(media.events)
        let summary = await run.finish()
        #expect(summary.failure == nil && summary.complete, "\(summary)")
        expectDelivered(media, under: nginx.root.appendingPathComponent("ingest/cam1"))

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pki.caPEM))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        var request = HTTPClientRequest(url: "https://127.0.0.1:\(nginx.port)/ingest/anon/session_1/video/video.init")
        request.method = .PUT
        request.body = .bytes(ByteBuffer(bytes: [1, 2, 3]))
        let status = try? await client.execute(request, timeout: .seconds(5)).status.code
        #expect(status == nil || status == 400, "nginx answers 400 (no required SSL certificate) or drops the handshake")
        #expect(!FileManager.default.fileExists(atPath: nginx.root.appendingPathComponent("ingest/anon").path))
        try await client.shutdown()
    }
}
