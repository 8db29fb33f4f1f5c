import Foundation
import NIOHTTP1
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// A live RTSP camera (rtsp-server-perl fed by `ffmpeg -re`) recorded by a Continuous connection: when the camera
    /// goes away the open recording ends (End) and the camera shows `reconnecting` with the error; when it comes back on
    /// the same URL the camera is `streaming` again and a new recording begins (session 2). Session 1 as uploaded is
    /// valid CMAF.
    /// Its camera URL has credentials: no response, page or log line of the run repeats them.
    @Test func cameraStreamDroppedAndRestoredEndsTheRecordingAndBeginsANewOne() async throws {
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let camera = try await LiveCamera.start(media: TestPaths.media(Self.media),
                                                logDirectory: ingest.directory.appendingPathComponent("camera"))
        defer { camera.stop() }
        let server = try await ingest.start()
        // The camera URL carries credentials (FFmpeg sends them only if the server asks): none may leave the process.
        let password = "Pa55-\(UInt32.random(in: 0...UInt32.max))"
        let serve = try await Serve(directory: ingest.directory,
                                    source: camera.url.replacingOccurrences(of: "rtsp://", with: "rtsp://viewer:\(password)@"))
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: server.port,
                                                                    trigger: .continuous))
            try await serve.setActive(id)
            try await events.wait("Begin", timeout: .seconds(10)) { $0.contains(where: \.isBegin) }
            try await Fixtures.waitUntil("a segment of session_1 uploaded", timeout: .seconds(20)) {
                ingest.endpoint.storedPaths.contains { $0.hasPrefix("session_1/video/segment_") }
            }

            let dropped = ContinuousClock.now
            camera.stop()
            try await events.wait("End after the camera dropped", timeout: .seconds(15)) { $0.count >= 2 }
            #expect(events.events.map(\.name) == ["PushTransportBegin", "PushTransportEnd"] && events.events[1].session == 1,
                    "\(events.events)")
            print("serve source: End \(String(format: "%.3f", (events.events[1].time - dropped).inSeconds)) s after the camera dropped")
            // Reported at once (well inside the first 1 s backoff), not only once the next attempt begins.
            var status: [String: Any] = [:]
            try await Fixtures.waitUntil("camera reconnecting", timeout: .milliseconds(500)) {
                status = try await serve.camera()
                return status["state"] as? String == "reconnecting"
            }
            #expect((status["lastError"] as? String).map { !$0.isEmpty } == true, "\(status)")
            let health = try await serve.json(.GET, "/health")
            #expect(health["status"] as? String == "degraded", "\(health)")

            try await camera.restart()
            try await serve.waitUntilStreaming(timeout: .seconds(30))
            try await events.wait("a new Begin", timeout: .seconds(15)) { $0.count >= 3 }
            let begin = events.events[2]
            #expect(begin.isBegin && begin.session == 2 && begin.triggerType == 2, "\(events.events)")
            print("serve source: Begin \(String(format: "%.3f", (begin.time - dropped).inSeconds)) s after the drop (outage and backoff included)")

            try await Fixtures.waitUntil("session_1 delivered, session_2 started", timeout: .seconds(20)) {
                ingest.endpoint.storedPaths.contains("session_2/video/video.init")
            }
            let (segments, errors) = try cmafErrors(trackDirectory: ingest.root.appendingPathComponent("session_1/video"))
            #expect(segments >= 1 && errors.isEmpty, "\(errors)")
            events.stop()

            // The source, its errors and every log line of the run (the outage logged the URL) without the password.
            #expect(try await serve.camera()["source"] as? String == camera.url.replacingOccurrences(of: "rtsp://", with: "rtsp://***@"))
            for path in ["/v1/cameras", "/health", "/ready", "/metrics", "/"] {
                let (_, text) = try await serve.request(.GET, path)
                #expect(!text.contains(password) && !text.contains("viewer:"), "\(path): \(text)")
            }
            let output = serve.process.output
            #expect(!output.contains(password), "the password in the log: \(output)")
            #expect(output.contains("rtsp://***@"), "the outage's log lines quote the (redacted) URL: \(output)")
        } catch {
            Issue.record("\(error)\n\(serve.process.output)\n\(camera.logs)")
        }
        try await serve.shutdown()
        await server.stop()
    }

    /// `cameras[].analysisSource` on a live camera: its main RTSP stream is a still picture (it never triggers by
    /// itself), its substream (320 px wide, another RTSP stream) shows the moving box. A Motion connection Begins with
    /// trigger Motion, and what it uploads is the main stream (1280×720), copied.
    @Test func motionOnTheAnalysisSubstreamRecordsTheMainStream() async throws {
        let media = try Fixtures.scratchDirectory("substream-media")
        defer { try? FileManager.default.removeItem(at: media) }
        let encode = "ffmpeg -hide_banner -nostdin -loglevel error -y"
        _ = try await Shell.run("""
            \(encode) -f lavfi -i color=c=0x808080:s=1280x720:r=30:d=20 -c:v libx264 -preset veryfast -g 60 -bf 0 -pix_fmt yuv420p still.mp4
            \(encode) -i '\(TestPaths.media(Self.media).path)' -an -vf scale=320:-2 -c:v libx264 -preset veryfast -g 60 -bf 0 sub.mp4
            """, in: media)
        let main = try await LiveCamera.start(media: media.appendingPathComponent("still.mp4"),
                                              logDirectory: media.appendingPathComponent("main"))
        defer { main.stop() }
        let sub = try await LiveCamera.start(media: media.appendingPathComponent("sub.mp4"),
                                             logDirectory: media.appendingPathComponent("sub"))
        defer { sub.stop() }
        try await ServeScenario.run(source: main.url, camera: "analysisSource: \(sub.url)",
                                    diagnostics: { "\n\(main.logs)\n\(sub.logs)" }) { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            let id = try await serve.allocate(scenario.options(trigger: .motion(initial: 2, augmentation: 1, max: 4, blind: 0)))
            try await serve.setActive(id)
            // The substream loops every 20 s with two motions: one is seen within a pass.
            try await events.wait("a Begin", timeout: .seconds(30)) { $0.contains(where: \.isBegin) }
            #expect(events.events[0].triggerType == 1, "\(events.events)")
            try await Fixtures.waitUntil("session_1's header uploaded", timeout: .seconds(20)) {
                ingest.endpoint.storedPaths.contains("session_1/video/video.init")
            }
            let header = ingest.root.appendingPathComponent("session_1/video/video.init").path
            let size = try await Shell.run("ffprobe -v error -show_entries stream=width,height -of csv=p=0 '\(header)'")
            #expect(size.trimmingCharacters(in: .whitespacesAndNewlines) == "1280,720")
            let camera = try await serve.camera()
            #expect((camera["framesAnalysed"] as? Int ?? 0) > 0, "\(camera)")
        }
    }

    /// Requests the API must refuse against the real process: each a 4xx with the error body naming the problem, and
    /// the process keeps serving.
    @Test func badRequestsAnswerFourHundredsAndTheProcessKeepsServing() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await Serve(directory: directory, media: Self.media)
        let cases: [(what: String, method: HTTPMethod, path: String, body: String?, status: UInt, matter: String)] = [
            ("malformed JSON", .POST, "/v1/cameras/cam1/commands/allocatePushTransport", #"{"transportOptions": {"#, 400, "INVALID_COMMAND"),
            ("a wrong type", .POST, "/v1/cameras/cam1/commands/findTransport", #"{"connectionID": "one"}"#, 400, "INVALID_COMMAND"),
            ("out of range", .POST, "/v1/cameras/cam1/commands/deallocatePushTransport", #"{"connectionID": 70000}"#, 400, "INVALID_COMMAND"),
            ("unknown camera", .POST, "/v1/cameras/nope/commands/findTransport", "{}", 404, "NOT_FOUND"),
            ("unknown connection", .POST, "/v1/cameras/cam1/commands/setTransportStatus",
             #"{"connectionID": 9, "transportStatus": 0}"#, 404, "NOT_FOUND"),
            ("oversized body", .POST, "/v1/cameras/cam1/commands/allocatePushTransport",
             #"{"transportOptions": {"url": ""# + String(repeating: "a", count: 100_000) + #""}}"#, 413, ""),
            ("unknown command", .POST, "/v1/cameras/cam1/commands/selfDestruct", "{}", 404, ""),
        ]
        do {
            for request in cases {
                let (status, text) = try await serve.request(request.method, request.path, request.body)
                #expect(status == request.status, "\(request.what): \(status) \(text)")
                let body = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                #expect(body?["message"] as? String != nil && body?["code"] as? Int != nil, "\(request.what): \(text)")
                if !request.matter.isEmpty { #expect(body?["status"] as? String == request.matter, "\(request.what): \(text)") }
                let health = try await serve.request(.GET, "/health")
                #expect(health.status == 200 && serve.process.isRunning, "after \(request.what): \(health)")
            }
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        #expect(!serve.process.output.contains("Fatal error"), "\(serve.process.output)")
        try await serve.shutdown()
    }

    /// nginx (Debian's, `ssl_verify_client on`, WebDAV PUT) as the ingest: one manually triggered session is
    /// delivered over mutual TLS, byte-valid CMAF on nginx's disk.
    @Test func uploadsOneSessionToNginxOverMutualTLS() async throws {
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let nginx = try #require(try await NginxEndpoint.start(pki: ingest.pki, directory: ingest.directory.appendingPathComponent("nginx"),
                                                               http2: false), "nginx is not installed (Scripts/setup)")
        defer { nginx.stop() }
        let serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: nginx.port)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: nginx.port,
                                                                    path: "ingest/cam1/", trigger: .command()))
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 3, max: 6)
            try await events.wait("Begin and End", timeout: .seconds(20)) { $0.count >= 2 }
            let track = nginx.root.appendingPathComponent("ingest/cam1/session_1/video")
            try await Fixtures.waitUntil("session_1 delivered to nginx", timeout: .seconds(20)) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: track.path)) ?? []
                guard names.contains("video.init") && names.filter({ $0.hasPrefix("segment_") }).count >= 2 else { return false }
                return try await serve.pendingUploads() == 0
            }
            let (segments, errors) = try cmafErrors(trackDirectory: track)
            #expect(segments >= 2 && errors.isEmpty, "\(segments) segments; \(errors)")
            events.stop()
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
    }
}
