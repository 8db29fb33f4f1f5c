import Foundation
import Testing
import TestSupport

/// TC-PAVSTI-1.1 and 1.2 as the official scripts configure them, through the real `pushav serve`, against a strict
/// receiver that expects the track names the way the CSA test server does (`update_track_name(stream, "media")`):
/// the transport names its streams by ID only and sets `cmafContainerOptions.trackName: "media"`. Before issue 29 the
/// video was uploaded as `video` and the strict server refused every object ("Track name mismatch: video != media").
extension ServeEndToEndTests {
    /// PAVSTI-1.1: a Command transport on a camera without audio (Interface-1): every object under `media`.
    @Test func pavsti11TheVideoTrackIsTheTransportsTrackName() async throws {
        try await ServeScenario.run("pavsti11", strict: .cmafIngest, expectedTrackNames: ["": ["media"]]) { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            var options = scenario.options(trigger: .command(preRollMs: 0), segmentMs: 2000)
            options["containerOptions"] = ["containerType": 0, "cmafContainerOptions": [
                "cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0, "sessionGroup": 1, "trackName": "media"]]
            let id = try await serve.allocate(options)
            try await serve.setActive(id)
            try await serve.trigger(id, initial: 4, max: 4)
            try await events.wait("End of session 1", timeout: .seconds(20)) { $0.contains { !$0.isBegin && $0.session == 1 } }
            try await Fixtures.waitUntil("session 1 delivered", timeout: .seconds(20)) {
                ingest.endpoint.storedPaths.contains("session_1/media/segment_1002.m4s")
            }
            #expect(ingest.endpoint.storedPaths.contains("session_1/media/media.init"), "\(ingest.endpoint.storedPaths)")
            let refused = ingest.endpoint.arrivals.filter { !(200..<300).contains($0.status) }
            #expect(refused.isEmpty, "refused: \(refused)")
            let checked = try cmafErrors(trackDirectory: ingest.root.appendingPathComponent("session_1/media"))
            // 4 s from the trigger are two 2 s segments when the trigger falls on a keyframe and three when it falls
            // between two (the first starts at the keyframe before it): where it falls is the loaded machine's timing.
            #expect((2...3).contains(checked.segments) && checked.errors.isEmpty, "\(checked)")
        }
    }

    /// PAVSTI-1.2: Continuous, Interface-2 DASH, 4 s segments of 2 s chunks, video and audio named by ID and
    /// trackName "media": the video under `media`, the audio under `audio` — the names the connection reports in its
    /// VideoStreams/AudioStreams — every object accepted by a strict DASH receiver expecting those two names. (A
    /// server expecting only "media" for both cannot take two tracks under any naming: see `trackNames()`.)
    @Test func pavsti12VideoAndAudioUnderTheirNamesEveryObjectAccepted() async throws {
        try await ServeScenario.run("pavsti12", camera: "audioStreamID: 2", strict: .dash,
                                    expectedTrackNames: ["": ["media", "audio"]]) { scenario in
            let (ingest, serve) = (scenario.ingest, scenario.serve)
            var options = scenario.options(trigger: .continuous, segmentMs: 4000, chunkMs: 2000, cmafInterface: 1)
            options["audioStreamID"] = 2
            options["containerOptions"] = ["containerType": 0, "cmafContainerOptions": [
                "cmafInterface": 1, "segmentDuration": 4000, "chunkDuration": 2000, "sessionGroup": 1, "trackName": "media"]]
            let id = try await serve.allocate(options)
            let found = try await serve.command("findTransport", ["connectionID": id])
            let configuration = try #require((found["transportConfigurations"] as? [[String: Any]])?.first)
            let stored = try #require(configuration["transportOptions"] as? [String: Any])
            #expect((stored["videoStreams"] as? [[String: Any]])?.first?["videoStreamName"] as? String == "media", "\(stored)")
            #expect((stored["audioStreams"] as? [[String: Any]])?.first?["audioStreamName"] as? String == "audio", "\(stored)")
            try await serve.setActive(id)
            try await Fixtures.waitUntil("two segments of each track", timeout: .seconds(30)) {
                let paths = ingest.endpoint.storedPaths
                return ["session_1/media/segment_1002.m4s", "session_1/audio/segment_1002.m4s"].allSatisfy(paths.contains)
            }
            let paths = ingest.endpoint.storedPaths
            #expect(paths.first == "session_1/index.mpd", "the dynamic MPD first: \(paths.prefix(3))")
            #expect(paths.contains("session_1/media/media.init") && paths.contains("session_1/audio/audio.init"))
            let refused = ingest.endpoint.arrivals.filter { !(200..<300).contains($0.status) }
            #expect(refused.isEmpty, "refused: \(refused)")
        }
    }

    /// The receiver's expectation is real: the same PAVSTI-1.2 transport against a receiver expecting only "media"
    /// (the CSA server's single name) has its audio refused with that server's words, and its video accepted.
    @Test func aReceiverExpectingOneNameRefusesTheOtherTrack() async throws {
        try await ServeScenario.run("pavsti12one", camera: "audioStreamID: 2", strict: .cmafIngest,
                                    expectedTrackNames: ["": ["media"]]) { scenario in
            let (ingest, serve) = (scenario.ingest, scenario.serve)
            var options = scenario.options(trigger: .continuous, segmentMs: 2000)
            options["audioStreamID"] = 2
            options["containerOptions"] = ["containerType": 0, "cmafContainerOptions": [
                "cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0, "sessionGroup": 1, "trackName": "media"]]
            let id = try await serve.allocate(options)
            try await serve.setActive(id)
            try await Fixtures.waitUntil("video stored, audio refused", timeout: .seconds(30)) {
                ingest.endpoint.storedPaths.contains("session_1/media/segment_1001.m4s")
                    && ingest.endpoint.arrivals.contains { $0.path.hasPrefix("session_1/audio/") && $0.status == 400 }
            }
            #expect(!ingest.endpoint.storedPaths.contains { $0.hasPrefix("session_1/audio/") })
        }
    }
}
