import ConcurrencyPrimitives
import Foundation
import Ingest
import Logging
@testable import Sidecar
import Testing
import TestSupport
import TransportModel

/// A burst of cluster changes runs one reconcile, not one each (issue 47's review: every change ran a full
/// reconcile, so a burst of commands queued that many), and the last change still wins.
@Suite struct ChangeCoalescingTests {
    @Test func aBurstOfChangesWhileAReconcileRunsIsAppliedByOneMore() async throws {
        let directory = try TestPaths.scratchDirectory("coalescing")
        defer { try? FileManager.default.removeItem(at: directory) }
        let engine = try await SidecarEngine(configuration: ServeConfiguration(
            state: directory.appendingPathComponent("state").path,
            cameras: [CameraConfiguration(id: "cam1", source: TestPaths.media("a_720p30_h264_main.mp4").path, live: true)]))
        let running = Task { try await engine.run() }
        defer { running.cancel() }
        let camera = try #require(engine.cameras.first)
        let server = camera.server
        let identity = try await SelfSignedIdentity.make(in: directory)
        let (cert, key) = (identity.certificate, identity.key)
        try await server.setTLSEndpoint(TLSEndpoint(fabricIndex: 1, endpointID: 1, hostname: "localhost", port: 9,
                                                    caCertificate: cert, clientCertificateChain: [cert], privateKey: key))
        let options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data("""
            {"streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": 1, "url": "https://localhost:9/", "ingestMethod": 0,
             "triggerOptions": {"triggerType": 0, "maxPreRollLen": 2000},
             "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0}}}
            """.utf8))
        let allocated = try await server.allocatePushTransport(options, fabric: 1)
        let id = allocated.connectionID
        let statuses: [TransportStatusEnum] = allocated.transportStatus == .active ? [.inactive, .active] : [.active, .inactive]
        try await Polling.waitUntil("the allocation reconciled") { camera.running.withLock { $0.connections[id] != nil } }

        // Hold the gate, as a long reconcile would; 30 status changes arrive and the follower takes them all.
        let hold = Latch()
        let held = Latch()
        let holding = Task { await camera.reconciling.run { held.open(); await hold.wait() } }
        await held.wait()
        let followed = camera.changesFollowed.load(ordering: .relaxed)
        let runs = camera.reconcileRuns.load(ordering: .relaxed)
        for n in 0..<30 {
            try await server.setTransportStatus(connectionID: id, transportStatus: statuses[n % 2], fabric: 1)
        }
        try await Polling.waitUntil("the follower took 30 changes") { camera.changesFollowed.load(ordering: .relaxed) == followed + 30 }
        hold.open()
        await holding.value
        try await Polling.waitUntil("the changes reconciled") { !camera.changesPending.load(ordering: .relaxed) }
        // Nothing can start another: the gate is free and no change is pending.
        await camera.reconciling.run {}
        #expect(camera.reconcileRuns.load(ordering: .relaxed) - runs == 1)
        // The last status (the 30th) is what the recorder runs.
        #expect(camera.recorder.desired.connections[id]?.active == (statuses[1] == .active))
    }
}
