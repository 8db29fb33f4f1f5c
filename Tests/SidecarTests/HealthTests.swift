import Foundation
import GRDB
@testable import Ingest
import Sidecar
import Testing
import TestSupport

/// `GET /health` when the spool cannot be read: it says so (degraded, the error), and never "0 pending", which would
/// read as "everything delivered" (issue 47's review).
@Suite struct HealthTests {
    @Test func anUnreadableSpoolIsDegradedWithItsErrorAndNoCount() async throws {
        let directory = try TestPaths.scratchDirectory("health-spool")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = ServeConfiguration(
            state: directory.appendingPathComponent("state").path,
            cameras: [CameraConfiguration(id: "cam1", source: TestPaths.media("a_720p30_h264_main.mp4").path)])
        let engine = try await SidecarEngine(configuration: configuration)
        let readable = await engine.health()
        #expect(readable.pendingUploads == 0 && readable.spoolError == nil)

        // Damage the journal (the spool holds it exclusively, so through its own connection): its queue table goes.
        try await engine.spool.database.write { try $0.execute(sql: "DROP TABLE object") }
        let damaged = await engine.health()
        #expect(damaged.status == "degraded")
        #expect(damaged.pendingUploads == nil)
        #expect(damaged.spoolError?.contains("no such table: object") == true, "\(damaged.spoolError ?? "nil")")
    }
}
