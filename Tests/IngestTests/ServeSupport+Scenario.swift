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

// The ingest a serve uploads to, the CMAF check of what it stored, and the usual end-to-end scenario; apart to keep ServeSupport.swift short.

/// An mTLS ingest for one test: the test PKI and a ``ScriptedEndpoint`` storing under `root`, applying the CSA test
/// server's strict-mode rules for `strict` (Interface-1 unless a test says otherwise), so that every end-to-end test
/// holds the uploads to what certification checks.
struct ServeIngest {
    let directory: URL
    let pki: TestPKI
    let root: URL
    let endpoint: ScriptedEndpoint

    init(_ label: String = #function, strict: StrictIngestRules.Interface? = .cmafIngest, addresses: [String] = [],
         expectedTrackNames: [String: Set<TrackName>] = [:]) async throws {
        directory = try Fixtures.scratchDirectory(label)
        pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"), addresses: addresses)
        root = directory.appendingPathComponent("received")
        endpoint = ScriptedEndpoint(root: root, strict: strict, expectedTrackNames: expectedTrackNames)
    }

    func start(port: Int = 0, host: String = "127.0.0.1") async throws -> RunningServer {
        try await endpoint.start(pki: pki, port: port, host: host)
    }

    /// Stored objects under `prefix` (e.g. "c1/session_1/video/") with their bytes, by path relative to `root`.
    func stored(under prefix: String) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        for path in Set(endpoint.storedPaths) where path.hasPrefix(prefix) {
            result[path] = Array(FileManager.default.contents(atPath: root.appendingPathComponent(path).path) ?? Data())
        }
        return result
    }
}

/// The CMAF conformance errors of one track as stored: `directory` holds `<track>.init` and `segment_*.m4s`.
func cmafErrors(trackDirectory directory: URL, segmentDuration: Double = 2) throws -> (segments: Int, errors: [Violation]) {
    let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
    let initName = try #require(names.first { $0.hasSuffix(".init") }, "no init in \(directory.path): \(names)")
    let header = CMAFFile(name: initName, bytes: Array(try Data(contentsOf: directory.appendingPathComponent(initName))))
    let segments = try names.filter { $0.hasPrefix("segment_") && $0.hasSuffix(".m4s") }.sorted().map {
        CMAFFile(name: $0, bytes: Array(try Data(contentsOf: directory.appendingPathComponent($0))))
    }
    let violations = CMAFConformance(expectations: .init(segmentDuration: segmentDuration, keyFrameInterval: 2))
        .check(header: header, segments: segments).filter { $0.severity == .error }
    return (segments.count, violations)
}

/// How most `pushav serve` end-to-end tests start: an mTLS ingest that records every arrival, `pushav serve`
/// recording one camera (`cam1`) and streaming, its event stream subscribed, and a TLS endpoint for the ingest
/// provisioned (`endpointID`).
struct ServeScenario {
    let ingest: ServeIngest
    let server: RunningServer
    let serve: Serve
    let events: EventFeed
    let endpointID: Int

    /// Runs `body` on a fresh scenario. What it throws is recorded with serve's log (and `diagnostics()`, e.g. a
    /// camera's logs) at the caller's line; serve, the event stream and the ingest are stopped and the scratch
    /// directory removed in every case.
    static func run(
        _ label: String = #function, media: String = ServeEndToEndTests.media, source: String? = nil, camera: String = "",
        strict: StrictIngestRules.Interface = .cmafIngest, expectedTrackNames: [String: Set<TrackName>] = [:],
        diagnostics: () -> String = { "" }, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (ServeScenario) async throws -> Void
    ) async throws {
        let ingest = try await ServeIngest(label, strict: strict, expectedTrackNames: expectedTrackNames)
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve: Serve
        do {
            serve = try await Serve(directory: ingest.directory, source: source ?? TestPaths.media(media).path, camera: camera)
        } catch {
            await server.stop()
            throw error
        }
        var events: EventFeed?
        do {
            try await serve.waitUntilStreaming()
            let feed = try await serve.subscribe()
            events = feed
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            try await body(ServeScenario(ingest: ingest, server: server, serve: serve, events: feed, endpointID: endpointID))
        } catch {
            Issue.record("\(error)\n\(serve.process.output)\(diagnostics())", sourceLocation: sourceLocation)
        }
        events?.stop()
        try await serve.shutdown()
        await server.stop()
    }

    /// Options of a transport uploading to this scenario's ingest (below `path`).
    func options(path: String = "", trigger: TransportJSON.Trigger, segmentMs: Int = 2000, chunkMs: Int = 0,
                 cmafInterface: Int = 0, cenc: (key: String, keyID: String)? = nil) -> [String: Any] {
        TransportJSON.options(endpointID: endpointID, ingestPort: server.port, path: path, trigger: trigger,
                              segmentMs: segmentMs, chunkMs: chunkMs, cmafInterface: cmafInterface, cenc: cenc)
    }
}
