import Foundation
import Logging
import Sidecar
import Testing
import TestSupport
import TransportModel

/// A connection whose TLS endpoint disappears under it (removed from the registry behind the API's back, or lost from
/// the store) must not upload with the system's trust roots and no client certificate: it is refused — logged, and
/// listed in the camera's status — until the endpoint is provisioned again, when it records again.
@Suite struct TLSEndpointGoneTests {
    @Test func aConnectionWithoutItsTLSEndpointIsRefusedUntilItIsBack() async throws {
        let directory = try TestPaths.scratchDirectory("tls-gone")
        defer { try? FileManager.default.removeItem(at: directory) }
        let identity = try await SelfSignedIdentity.make(in: directory)
        let (cert, key) = (identity.certificate, identity.key)
        let logs = LogRecorder()
        let engine = try await SidecarEngine(
            configuration: ServeConfiguration(
                state: directory.appendingPathComponent("state").path,
                cameras: [CameraConfiguration(id: "cam1", source: TestPaths.media("a_720p30_h264_main.mp4").path, live: true)]),
            logger: Logger(label: "test") { _ in logs })
        let running = Task { try await engine.run() }
        defer { running.cancel() }

        let server = try #require(engine.transport(camera: "cam1"))
        let endpoint = TLSEndpoint(fabricIndex: 1, endpointID: 1, hostname: "localhost", port: 9, caCertificate: cert,
                                   clientCertificateChain: [cert], privateKey: key)
        try await server.setTLSEndpoint(endpoint)
        let options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data("""
            {"streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": 1, "url": "https://localhost:9/", "ingestMethod": 0,
             "triggerOptions": {"triggerType": 2},
             "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0}}}
            """.utf8))
        let id = try await server.allocatePushTransport(options, fabric: 1).connectionID
        try await Polling.waitUntil("the connection attached") { logs.all.contains { $0.hasPrefix("connection attached") } }
        // A new connection is Inactive: the log says so instead of "recording" (issue 51 item 7).
        #expect(logs.all.first { $0.hasPrefix("connection attached") }?.contains("Inactive") == true, "\(logs.all)")

        func refused() async -> [UInt16] { await engine.cameraStatuses().first?.connectionsWithoutTLSEndpoint ?? [] }
        #expect(await refused() == [])
        try await server.removeTLSEndpoint(fabricIndex: 1, endpointID: 1)
        try await Polling.waitUntil("the connection refused") { await refused() == [id] }
        let refusal = logs.allWithMetadata.filter { $0.contains("TLS endpoint is gone") }
        #expect(refusal.count == 1 && refusal[0].contains("connection=\(id)") && refusal[0].contains("tlsEndpointID=1"), "\(refusal)")

        try await server.setTLSEndpoint(endpoint)
        try await Polling.waitUntil("the connection recording again") {
            logs.all.filter { $0.hasPrefix("connection attached") }.count == 2
        }
        #expect(await refused() == [])
        #expect(logs.all.contains("connection's TLS endpoint is back; recording again"), "\(logs.all)")
    }
}
