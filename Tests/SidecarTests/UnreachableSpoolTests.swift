import Foundation
import Ingest
import Logging
import Sidecar
import Testing
import TestSupport
import TransportModel

/// Objects spooled for a connection that no longer exists (deallocated, or its camera left the configuration, before
/// they were delivered) cannot be uploaded: at start the engine names each such connection and its object count.
/// Pending objects of connections that still exist are theirs to deliver and are not reported.
@Suite struct UnreachableSpoolTests {
    @Test func objectsOfConnectionsThatNoLongerExistAreReportedAtStart() async throws {
        let directory = try TestPaths.scratchDirectory("unreachable-spool")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = ServeConfiguration(
            state: directory.appendingPathComponent("state").path,
            cameras: [CameraConfiguration(id: "cam1", source: TestPaths.media("a_720p30_h264_main.mp4").path)])

        // A first start (gone before the second: one process owns a spool) allocates connection 1 on cam1 (it still
        // exists at the second start).
        let id: UInt16
        do {
            let first = try await SidecarEngine(configuration: configuration)
            let server = try #require(first.transport(camera: "cam1"))
            try await server.setTLSEndpoint(TLSEndpoint(fabricIndex: 1, endpointID: 1, hostname: "localhost", port: 9,
                                                        caCertificate: Data(), clientCertificateChain: [], privateKey: Data()))
            let options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data("""
                {"streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": 1, "url": "https://localhost:9/", "ingestMethod": 0,
                 "triggerOptions": {"triggerType": 0, "maxPreRollLen": 2000},
                 "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0}}}
                """.utf8))
            id = try await server.allocatePushTransport(options, fabric: 1).connectionID

            // Objects wait for it, for a deallocated connection 7, and for camera cam9, which left the configuration.
            let spool = first.spool
            let header = UploadObject.header(session: 1, track: "video")
            let segment = UploadObject(session: 1, track: "video", number: 1001)
            for (connection, objects) in [("cam1/\(id)", [header, segment]), ("cam1/7", [header, segment]), ("cam9/1", [header])] {
                for object in objects { try await spool.store(SpoolObjectBytes.whole(object, [1, 2, 3]), for: object, connection: connection) }
            }
        }

        let logs = LogRecorder()
        let second = try await SidecarEngine(configuration: configuration, logger: Logger(label: "test") { _ in logs })
        #expect(second.unreachableSpool == ["cam1/7": 2, "cam9/1": 1])
        let errors = logs.allWithMetadata.filter { $0.contains("no longer exists") }
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.contains { $0.contains("connection=cam1/7") && $0.contains("objects=2") }, "\(errors)")
        #expect(!errors.contains { $0.contains("connection=cam1/\(id) ") }, "\(errors)")
    }
}
