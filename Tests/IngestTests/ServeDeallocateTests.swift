import Foundation
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// Deallocate in the middle of a Continuous recording: its End comes, and the recording's last, still-open segment
    /// reaches the ingest too (before the fix the upload was retired at once and that tail was lost silently).
    @Test func deallocateMidRecordingStillDeliversTheRecordingsLastSegment() async throws {
        try await ServeScenario.run("deallocate") { scenario in
            let (ingest, serve, events) = (scenario.ingest, scenario.serve, scenario.events)
            let id = try await serve.allocate(scenario.options(trigger: .continuous, segmentMs: 4000))
            try await serve.setActive(id)
            // The first 4 s segment is stored: the second one is open, a fraction of a second long.
            try await Fixtures.waitUntil("segment_1001 stored", timeout: .seconds(30)) {
                ingest.endpoint.storedPaths.contains("session_1/video/segment_1001.m4s")
            }
            try await Fixtures.waitUntil("deallocated", timeout: .seconds(10)) {
                let (status, _) = try await serve.request(.POST, "/v1/cameras/cam1/commands/deallocatePushTransport",
                                                          #"{"connectionID": \#(id)}"#)
                return status == 200  // 409 BUSY while the segment just stored is still being acknowledged
            }
            try await events.wait("End of session 1", timeout: .seconds(10)) { $0.contains { !$0.isBegin && $0.session == 1 } }
            try await Fixtures.waitUntil("the open segment delivered", timeout: .seconds(20)) {
                ingest.endpoint.storedPaths.contains("session_1/video/segment_1002.m4s")
            }
            let checked = try cmafErrors(trackDirectory: ingest.root.appendingPathComponent("session_1/video"), segmentDuration: 4)
            #expect(checked.segments == 2 && checked.errors.isEmpty, "\(checked)")
            // The connection ended; no new recording was attempted on it (and refused: a spurious dropped clip).
            #expect(!serve.process.output.contains("clip dropped"), "\(serve.process.output)")
            #expect(events.events.filter(\.isBegin).count == 1, "\(events.events)")
        }
    }
}

extension ServeEndToEndTests {
    /// TC-PAVST-2.13's manual trigger during a blind window (rule 6: the command's activation ignores the blind window
    /// that follows a motion clip): after a motion clip ends with an 8 s blind window, ManuallyTriggerTransport begins a
    /// Command recording at once, with its reason and the next session number.
    @Test func manualTriggerDuringTheBlindWindowBeginsACommandRecording() async throws {
        try await ServeScenario.run("blindtrigger") { scenario in
            let (serve, events) = (scenario.serve, scenario.events)
            let id = try await serve.allocate(scenario.options(trigger: .motion(initial: 2, augmentation: 1, max: 10, blind: 8)))
            try await serve.setActive(id)
            // A motion clip (the file moves at 4–6 s and 12–14.5 s of every 20 s pass), then its End.
            let motion = try await events.wait("a motion clip's End", timeout: .seconds(45)) { events in
                events.contains { $0.isBegin && $0.triggerType == 1 } && events.contains { !$0.isBegin }
            }
            let ended = try #require(motion.first { !$0.isBegin })
            // Within its blind window (8 s from the End): a manual trigger begins a Command recording at once. BUSY
            // while the motion clip's last segment uploads (a fraction of a second): the controller retries.
            try await Fixtures.waitUntil("trigger accepted", timeout: .seconds(5)) {
                let (status, _) = try await serve.request(.POST, "/v1/cameras/cam1/commands/manuallyTriggerTransport", """
                    {"connectionID": \(id), "activationReason": 3,
                     "timeControl": {"initialDuration": 2, "augmentationDuration": 0, "maxDuration": 4, "blindDuration": 0}}
                    """)
                return status == 200
            }
            let all = try await events.wait("the Command Begin", timeout: .seconds(5)) { events in
                events.contains { $0.isBegin && $0.triggerType == 0 }
            }
            let command = try #require(all.first { $0.isBegin && $0.triggerType == 0 })
            #expect((command.time - ended.time) < .seconds(8), "Begin \(command.time - ended.time) after the motion clip's End")
            #expect(command.activationReason == 3 && command.session == ended.session + 1, "\(all)")
        }
    }
}
