import AsyncHTTPClient
import Foundation
import IngestServer
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// TC-PAVSTI-1.2's container options through the API (Interface2DASH, SegmentDuration 4000, ChunkDuration 2000) on
    /// a Command transport: the session's dynamic MPD arrives before its first header, the static MPD after its last
    /// segment, and the uploaded session decodes through the static MPD with every frame of its video track.
    @Test func dashTransportUploadsItsManifestsAroundTheSession() async throws {
        try await ServeScenario.run(strict: .dash) { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            let id = try await serve.allocate(scenario.options(trigger: .command(preRollMs: 2000), segmentMs: 4000,
                                                               chunkMs: 2000, cmafInterface: 1))
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 9, max: 12)  // three 4 s segments
            try await events.wait("End", timeout: .seconds(30)) { $0.count >= 2 }
            try await Fixtures.waitUntil("session_1 delivered", timeout: .seconds(30)) {
                try await serve.pendingUploads() == 0
                    && ingest.endpoint.storedPaths.filter { $0 == "session_1/index.mpd" }.count == 2
            }
            let arrivals = ingest.endpoint.storedPaths.filter { $0.hasPrefix("session_1/") }
            let media = arrivals.indices.filter { arrivals[$0] != "session_1/index.mpd" }
            try #require(media.count >= 3, "\(arrivals)")
            #expect(arrivals.first == "session_1/index.mpd" && arrivals.last == "session_1/index.mpd", "\(arrivals)")
            let mpd = ingest.root.appendingPathComponent("session_1/index.mpd")
            #expect(try String(contentsOf: mpd, encoding: .utf8).contains(#"type="static""#))
            var track = try Data(contentsOf: ingest.root.appendingPathComponent("session_1/video/video.init"))
            for path in arrivals.filter({ $0.hasPrefix("session_1/video/segment_") }).sorted() {
                track += try Data(contentsOf: ingest.root.appendingPathComponent(path))
            }
            let trackFile = ingest.directory.appendingPathComponent("video.mp4")
            try track.write(to: trackFile)
            let count = "-v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0"
            let throughMPD = try await Shell.run("ffprobe \(count) -allowed_extensions ALL '\(mpd.path)'")
            let direct = try await Shell.run("ffprobe \(count) '\(trackFile.path)'")
            let frames = { (text: String) in text.split(separator: "\n").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
            #expect(frames(throughMPD) != nil && frames(throughMPD) == frames(direct), "MPD \(throughMPD), track \(direct)")
        }
    }

    /// A Command transport allocated with CENCKey and CENCKeyID: its clip arrives protected (encv, the key ID in
    /// tenc), decrypts with the key and not with another, and no clear MP4 or thumbnail of it is kept for the status page.
    @Test func encryptedTransportUploadsOnlyProtectedMedia() async throws {
        try await ServeScenario.run { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            let id = try await serve.allocate(scenario.options(
                trigger: .command(preRollMs: 2000),
                cenc: (CENCUploadTests.base64(CENCUploadTests.key), CENCUploadTests.base64(CENCUploadTests.keyID))))
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 3, max: 6)
            try await events.wait("End", timeout: .seconds(30)) { $0.count >= 2 }
            try await Fixtures.waitUntil("session_1 delivered", timeout: .seconds(30)) {
                try await serve.pendingUploads() == 0 && ingest.endpoint.storedPaths.contains("session_1/video/video.init")
            }
            let folder = ingest.root.appendingPathComponent("session_1/video")
            var track = try Data(contentsOf: folder.appendingPathComponent("video.init"))
            #expect(track.range(of: Data("encv".utf8)) != nil && track.range(of: Data("tenc".utf8)) != nil)
            for segment in try FileManager.default.contentsOfDirectory(atPath: folder.path).filter({ $0.hasSuffix(".m4s") }).sorted() {
                track += try Data(contentsOf: folder.appendingPathComponent(segment))
            }
            let file = ingest.directory.appendingPathComponent("video.mp4")
            try track.write(to: file)
            let decrypted = try await CENCUploadTests.frames(file, key: CENCUploadTests.key)
            #expect(decrypted.count >= 60, "\(decrypted.count) frames decrypted")
            #expect(try await CENCUploadTests.frames(file, key: "000102030405060708090a0b0c0d0e0f") != decrypted)
            let camera = try await serve.camera()
            let clips = try #require(camera["recentClips"] as? [[String: Any]])
            let mine = clips.filter { $0["connectionID"] as? Int == id }
            #expect(!mine.isEmpty && mine.allSatisfy { $0["clip"] == nil && $0["thumbnail"] == nil }, "\(clips)")
            // No thumbnail either: it would show in the clear what the transport encrypts.
            let (status, _) = try await serve.bytes("/v1/cameras/cam1/clips/\(id)/1/thumbnail.jpg")
            #expect(status == 404)
            let transports = try #require(camera["transports"] as? [[String: Any]])
            #expect(transports.first { $0["connectionID"] as? Int == id }?["encrypted"] as? Bool == true, "\(transports)")
            // The key in no log line of the run, in no status answer (FindTransport gives it back to its own fabric,
            // as the cluster does).
            let keyForms = [CENCUploadTests.key, CENCUploadTests.key.uppercased(), CENCUploadTests.base64(CENCUploadTests.key)]
            let (_, cameras) = try await serve.request(.GET, "/v1/cameras")
            for text in [serve.process.output, cameras] {
                for form in keyForms { #expect(!text.contains(form), "the CENC key (\(form)) leaked: \(text)") }
            }
        }
    }

    /// TLS endpoint and a Command transport through the API, a manual trigger with a doorbell reason: one Begin (Command,
    /// that reason, session 1) and one End on the event stream, read here as raw Server-Sent Events text; session_1
    /// uploaded over mutual TLS; SIGTERM exits 0.
    @Test func manualTriggerRecordsAnnouncesAndUploadsOneSession() async throws {
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve = try await Serve(directory: ingest.directory, media: "a_720p30_h264_main.mp4")
        do {
            try await serve.waitUntilStreaming()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: server.port,
                                                                    trigger: .command(preRollMs: 2000)))
            try await serve.setActive(id)

            // The stream as any SSE client reads it, subscribed before the trigger.
            var request = HTTPClientRequest(url: serve.api + "/v1/cameras/cam1/events")
            request.headers.add(name: "Accept", value: "text/event-stream")
            let stream = try await serve.client.execute(request, timeout: .seconds(60))
            #expect(stream.status == .ok && stream.headers["Content-Type"].first?.hasPrefix("text/event-stream") == true)
            let collected = Task { () -> String in
                var text = ""
                for try await chunk in stream.body {
                    text += String(buffer: chunk)
                    if text.contains("PushTransportEnd") { break }
                }
                return text
            }
            try await serve.trigger(id, reason: 3, initial: 3, augmentation: 1, max: 6)
            let eventText = try await withThrowingTaskGroup(of: String.self) { group in
                group.addTask { try await collected.value }
                group.addTask {
                    try await Task.sleep(for: .seconds(30))  // a bound on the wait, not synchronisation
                    collected.cancel()
                    throw TestFailure("no PushTransportEnd within 30 s")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
            let data = eventText.split(separator: "\n").filter { $0.hasPrefix("data:") }
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.dropFirst(5).utf8)) as? [String: Any] }
            try #require(data.count == 2, "\(eventText)")
            #expect(eventText.hasPrefix(": subscribed"), "\(eventText)")
            #expect(eventText.contains("event: PushTransportBegin") && eventText.contains("event: PushTransportEnd"))
            #expect(data[0]["triggerType"] as? Int == 0 && data[0]["activationReason"] as? Int == 3, "\(data[0])")
            #expect(data[0]["cmafSessionNumber"] as? Int == 1 && data[1]["cmafSessionNumber"] as? Int == 1, "\(data)")

            // 3 to 5 s of video (from the pre-roll keyframe to t0 + 3 s) in 2 s segments, delivered over mutual TLS.
            try await Fixtures.waitUntil("session_1 uploaded", timeout: .seconds(30)) {
                let stored = ingest.endpoint.storedPaths
                return stored.contains("session_1/video/video.init")
                    && stored.filter { $0.hasPrefix("session_1/video/segment_") }.count >= 2
            }
            #expect(!ingest.endpoint.storedPaths.contains { $0.hasPrefix("session_2") })
            // Issue 51 (7): the log says the command's duration ended the clip, not motion.
            try await Fixtures.waitUntil("the clip's end logged", timeout: .seconds(30)) {
                serve.log.all.contains { $0.text.contains("clip ends") }
            }
            let ends = serve.log.all.filter { $0.text.contains("clip ends") }.map(\.text)
            #expect(ends.count == 1 && ends.allSatisfy { $0.contains("trigger=command") && $0.contains("why=the command's duration elapsed") },
                    "\(ends)")

            serve.process.signal(SIGTERM)
            let exited = try await serve.process.waitForExit(timeout: .seconds(15))
            #expect(exited && serve.process.exitedNormally && serve.process.status == 0, "\(serve.process.output)")
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }
}
