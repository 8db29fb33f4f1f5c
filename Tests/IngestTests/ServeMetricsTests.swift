import Foundation
import Testing
import TestSupport

/// `pushav serve`'s `/metrics`, `/ready` and `/health`, scraped from the real process; each scrape is parsed by the
/// Prometheus project's own Python client parser (`prometheus_client`, in `.venv` from `Scripts/setup`).
@Suite(.serialized, .timeLimit(.minutes(2))) struct ServeMetricsTests {
    static let media = "a_720p30_h264_main.mp4"

    /// A manual trigger's clip moves the numbers: one clip begun and ended (with its end reason), its pre-roll and duration
    /// error observed once, the bytes recorded equal to what the ingest stored, delivered objects counted and the
    /// queue drained; frames keep being decoded and analysed. Log lines about the connection carry both IDs.
    @Test func aRecordedClipMovesTheCountersAndTheScrapeParses() async throws {
        let ingest = try await ServeIngest("metrics")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            try await Fixtures.waitUntil("ready", timeout: .seconds(10)) { try await serve.request(.GET, "/ready").status == 200 }
            let ready = try await serve.json(.GET, "/ready")
            #expect(ready["ready"] as? Bool == true && ready["storeOpen"] as? Bool == true, "\(ready)")

            let camera = ["camera": "cam1"]
            // Streaming means packets are read; decoded pictures follow a few frames later (decoder delay).
            var before = try await Scrape.take(serve)
            try await Fixtures.waitUntil("frames decoded", timeout: .seconds(10)) {
                before = try await Scrape.take(serve)
                return (before.value("pushav_camera_frames_decoded_total", camera) ?? 0) > 0
            }
            #expect(before.types["pushav_clips_begun"] == "counter")
            #expect(before.types["pushav_clip_preroll_seconds"] == "histogram")
            #expect(before.types["pushav_camera_analysis_seconds"] == "histogram")
            #expect(before.value("pushav_clips_begun_total", camera) == 0)
            #expect(before.value("pushav_recorded_bytes_total", camera) == 0)
            for reason in ["blind", "zone", "inactive"] {
                #expect(before.value("pushav_triggers_ignored_total", ["camera": "cam1", "reason": reason]) == 0, "\(reason)")
            }
            #expect(before.value("pushav_camera_reconnects_total", camera) == 0)
            let decodedBefore = try #require(before.value("pushav_camera_frames_decoded_total", camera))
            #expect(decodedBefore > 0)

            let events = try await serve.subscribe()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: server.port,
                                                                    trigger: .command(preRollMs: 2000)))
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 3, max: 6)
            try await events.wait("End of session 1", timeout: .seconds(20)) { $0.contains { !$0.isBegin && $0.session == 1 } }
            let connection = ["connection": "cam1/\(id)"]
            var after = before
            try await Fixtures.waitUntil("session 1 delivered and counted", timeout: .seconds(30)) {
                after = try await Scrape.take(serve)
                return after.value("pushav_upload_queue_depth", connection) == 0
                    && ingest.endpoint.storedPaths.contains("session_1/video/video.init")
                    && after.value("pushav_upload_delivered_total", connection) == Double(Set(ingest.endpoint.storedPaths).count)
            }

            #expect(after.value("pushav_clips_begun_total", camera) == 1)
            // Its own end, or the end of the looped file if the clip reached it.
            let ended = after.samples.filter { $0.name == "pushav_clips_ended_total" && $0.value > 0 }
            #expect(ended.count == 1 && ended.first?.value == 1, "\(ended)")
            #expect(["motionDetectedDuration", "endOfInput"].contains(ended.first?.labels["reason"] ?? ""), "\(ended)")
            #expect(after.value("pushav_clips_dropped_total", camera) == 0)
            let stored = ingest.stored(under: "session_1/")
            #expect(stored.count >= 3, "\(stored.keys.sorted())")  // the header and at least two 2 s segments
            #expect(after.value("pushav_recorded_bytes_total", camera) == Double(stored.values.map(\.count).reduce(0, +)))
            #expect(after.value("pushav_upload_retries_total", connection) == 0)
            // The session's Begin and End were written to the event log.
            #expect(after.types["pushav_event_log_write_failures"] == "counter")
            #expect(after.value("pushav_event_log_write_failures_total", camera) == 0)
            #expect(after.value("pushav_upload_oldest_age_seconds", connection) == 0)
            #expect(after.value("pushav_upload_queue_bytes", connection).map { $0 >= 0 } == true)

            // One clip's pre-roll, at most MaxPreRollLen; its written video within a few frames of the decided length.
            #expect(after.value("pushav_clip_preroll_seconds_count", camera) == 1)
            let preRoll = try #require(after.value("pushav_clip_preroll_seconds_sum", camera))
            #expect(preRoll >= 0 && preRoll <= 2.0, "pre-roll \(preRoll)")
            #expect(after.value("pushav_clip_duration_error_seconds_count", camera) == 1)
            let durationError = try #require(after.value("pushav_clip_duration_error_seconds_sum", camera))
            #expect(durationError < 0.2, "duration error \(durationError)")
            #expect(after.value("pushav_clip_preroll_seconds_bucket", ["camera": "cam1", "le": "+Inf"]) == 1)

            let decodedAfter = try #require(after.value("pushav_camera_frames_decoded_total", camera))
            let analysedAfter = try #require(after.value("pushav_camera_frames_analysed_total", camera))
            #expect(decodedAfter > decodedBefore)
            #expect(analysedAfter > 0 && analysedAfter <= decodedAfter)
            #expect(after.value("pushav_camera_analysis_seconds_count", camera).map { $0 > 0 } == true)

            let finished = serve.process.output.split(separator: "\n").filter { $0.contains("recording finished") }
            #expect(finished.contains { $0.contains("camera=cam1") && $0.contains("connection=\(id)") }, "\(finished)")
            events.stop()
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }

    /// A camera whose source cannot be opened: the process is alive (`/health` 200) but not ready (`/ready` 503, naming
    /// the camera), and its reconnects are counted.
    @Test func readyIsUnavailableWhileASourceCannotBeRead() async throws {
        let directory = try Fixtures.scratchDirectory("metrics-unready")
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await Serve(directory: directory, source: directory.appendingPathComponent("missing.mp4").path)
        do {
            let health = try await serve.request(.GET, "/health")
            #expect(health.status == 200, "\(health.text)")
            try await Fixtures.waitUntil("a reconnect counted", timeout: .seconds(10)) {
                try await Scrape.take(serve).value("pushav_camera_reconnects_total", ["camera": "cam1"]).map { $0 >= 1 } == true
            }
            let ready = try await serve.request(.GET, "/ready")
            #expect(ready.status == 503)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(ready.text.utf8)) as? [String: Any])
            let cameras = try #require(body["cameras"] as? [String: [String: Any]], "\(body)")
            #expect(body["ready"] as? Bool == false && body["storeOpen"] as? Bool == true, "\(body)")
            #expect(cameras["cam1"]?["ready"] as? Bool == false && cameras["cam1"]?["secondsSinceLastPacket"] == nil, "\(body)")
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
    }
}

/// One `/metrics` scrape as `prometheus_client`'s text parser read it.
struct Scrape: Sendable {
    struct Sample: Sendable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// Family name (without `_total` for counters, as the parser names them) to type.
    var types: [String: String]
    var samples: [Sample]

    /// The value of the sample `name` whose labels include `labels`; nil when there is none (or more than one).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples.filter { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }
        return matching.count == 1 ? matching[0].value : nil
    }

    static func take(_ serve: Serve) async throws -> Scrape {
        let (status, text) = try await serve.request(.GET, "/metrics")
        try #require(status == 200, "/metrics: \(status) \(text)")
        return try await parse(text)
    }

    /// Parses with the Python client's parser (a failure to parse fails the test with the parser's message).
    static func parse(_ text: String) async throws -> Scrape {
        let python = TestPaths.packageRoot.appendingPathComponent(".venv/bin/python")
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "no \(python.path): run Scripts/setup")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushav-scrape-\(UUID().uuidString).txt")
        try await BlockingWork.run { try text.write(to: file, atomically: true, encoding: .utf8) }
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try await ChildProcess.output(python.path, ["-c", parser, file.path])
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "parser said: \(output)")
        if let error = parsed["error"] { throw TestFailure("prometheus_client could not parse the scrape: \(error)\n\(text)") }
        let types = try #require(parsed["types"] as? [String: String])
        let samples = try #require(parsed["samples"] as? [[String: Any]]).map { sample in
            Sample(name: sample["name"] as? String ?? "", labels: sample["labels"] as? [String: String] ?? [:],
                   value: (sample["value"] as? NSNumber)?.doubleValue ?? .nan)
        }
        return Scrape(types: types, samples: samples)
    }

    private static let parser = """
        import json, math, sys
        from prometheus_client.parser import text_string_to_metric_families
        try:
            types, samples = {}, []
            with open(sys.argv[1]) as f:
                for family in text_string_to_metric_families(f.read()):
                    types[family.name] = family.type
                    for s in family.samples:
                        samples.append({"name": s.name, "labels": s.labels,
                                        "value": s.value if math.isfinite(s.value) else None})
            print(json.dumps({"types": types, "samples": samples}))
        except Exception as e:
            print(json.dumps({"error": repr(e)}))
        """
}
