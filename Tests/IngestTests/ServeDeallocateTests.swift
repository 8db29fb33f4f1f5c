import Foundation
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// Deallocate in the middle of a Continuous recording: its End comes, and the recording's last, still-open segment
    /// reaches the ingest too (before the fix the upload was retired at once and that tail was lost silently).
    @Test func deallocateMidRecordingStillDeliversTheRecordingsLastSegment() async throws {
        let ingest = try await ServeIngest("deallocate")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            let id = try await serve.allocate(TransportJSON.options(endpointID: endpointID, ingestPort: server.port,
                                                                    trigger: .continuous, segmentMs: 4000))
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
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }
}
