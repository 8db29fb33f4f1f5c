import AsyncHTTPClient
import Foundation
import IngestServer
import NIOCore
import Testing
import TestSupport

/// `pushav receive`'s page in a real headless Chromium: a session uploaded over HTTP plays in its player.
@Suite struct ReceivePageTests {
    @Test func aReceivedSessionPlaysInThePage() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = try await SampleMedia.make(chunked: false)
        var configuration = IngestServer.Configuration(root: directory.appendingPathComponent("received"), tls: nil)
        configuration.port = 0
        let receiver = try IngestServer(configuration: configuration, logger: .quiet)
        let server = try await RunningServer.start { onRunning in try receiver.makeApplication(onRunning: onRunning) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            for object in media.objects {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/\(object.object.relativePath)")
                request.method = .PUT
                request.body = .bytes(ByteBuffer(bytes: object.bytes))
                let response = try await client.execute(request, timeout: .seconds(10))
                #expect(response.status.code == 201, "\(object.object)")
            }
            let dom = try await Chromium.dumpDOM("http://127.0.0.1:\(server.port)/", profile: directory.appendingPathComponent("chromium"))
            let video = try #require(dom.firstMatch(of: /<video[^>]*>/).map { String($0.output) }, "no player: \(dom)")
            let readyState = video.firstMatch(of: /data-ready-state="(\d)"/).flatMap { Int($0.output.1) } ?? -1
            let duration = video.firstMatch(of: /data-duration="([0-9.]+)"/).flatMap { Double($0.output.1) } ?? 0
            #expect(readyState >= 2, "the session did not load: \(video)")
            #expect(duration > 0.5, "the session's duration: \(video)")
        } catch {
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }
}
