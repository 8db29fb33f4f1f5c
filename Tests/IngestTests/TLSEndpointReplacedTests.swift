import Crypto
import Domain
import Foundation
import Logging
import Sidecar
import Testing
import TestSupport
import TransportModel

/// A TLS endpoint replaced under a session that waits in the spool (the registry's entry for the same endpoint ID now
/// holds another CA and client certificate): the waiting session is still delivered with the certificates it was
/// recorded with — ingest A accepts only its own CA's clients, so nothing else could deliver it — and the sessions
/// recorded after the replacement use the new material (which A refuses: they never reach it).
@Suite struct TLSEndpointReplacedTests {
    static func endpoint(_ pki: TestPKI, port: Int) -> TLSEndpoint {
        TLSEndpoint(fabricIndex: 1, endpointID: 1, hostname: "localhost", port: UInt16(port), caCertificate: Data(pki.caPEM),
                    clientCertificateChain: [Data(pki.clientPEM)], privateKey: Data(pki.clientKey))
    }

    @Test func aWaitingSessionKeepsTheCertificatesItWasRecordedWith() async throws {
        let a = try await ServeIngest("replaced-a")
        let other = try await TestPKI.make(in: a.directory.appendingPathComponent("other-pki"))
        defer { try? FileManager.default.removeItem(at: a.directory) }
        // A stays down for most of the test: its port is held (refusing) until A binds it, so no other test takes it.
        let reservation = try LocalPorts.reserveTCPPort()
        let port = reservation.port
        let log = LogRecorder()
        log.logLevel = .debug
        let engine = try await SidecarEngine(
            configuration: ServeConfiguration(
                state: a.directory.appendingPathComponent("state").path, uploadMaxBackoffMs: 500,
                cameras: [CameraConfiguration(id: "cam1", source: TestPaths.media(ServeEndToEndTests.media).path, live: true)]),
            logger: Logger(label: "engine") { _ in log })
        let running = Task { try await engine.run() }
        var server: RunningServer?
        do {
            let cluster = try #require(engine.transport(camera: "cam1"))
            let events = await cluster.events()
            try await cluster.setTLSEndpoint(Self.endpoint(a.pki, port: port))
            let json = JSON.text(TransportJSON.options(endpointID: 1, ingestPort: port, trigger: .command(preRollMs: 0)))
            let options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data(json.utf8))
            let id = try await cluster.allocatePushTransport(options, fabric: 1).connectionID
            try await cluster.setTransportStatus(connectionID: id, transportStatus: .active, fabric: 1)
            let timeControl = TransportMotionTriggerTimeControlStruct(initialDuration: 2, augmentationDuration: 0,
                                                                      maxDuration: 2, blindDuration: 0)
            try await Polling.waitUntil("the camera streaming", timeout: .seconds(30)) {
                await engine.cameraStatuses().first?.state == .streaming
            }
            try await cluster.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated,
                                                        timeControl: timeControl, fabric: 1)
            var iterator = events.makeAsyncIterator()
            func waitForEnd(_ session: SessionNumber) async {
                while let event = await iterator.next() {
                    if case .pushTransportEnd(let end) = event.event, end.cmafSessionNumber == session { return }
                }
            }
            await waitForEnd(1)
            let spooled = try await ServeEndToEndTests.spooledObjects(of: 1, in: a.directory, atLeast: 2)
            // The endpoint is replaced: another CA and client identity under the same ID; then session 2 is recorded.
            try await cluster.setTLSEndpoint(Self.endpoint(other, port: port))
            try await Polling.waitUntil("the connection attached with the new material") {
                (try? await engine.spool.storedDestinations().count) == 2
            }
            try await cluster.manuallyTriggerTransport(connectionID: id, activationReason: .userInitiated,
                                                        timeControl: timeControl, fabric: 1)
            await waitForEnd(2)
            reservation.release()
            server = try await a.start(port: port)
            try await Polling.waitUntil("session 1 at A", timeout: .seconds(30)) {
                spooled.keys.allSatisfy { a.endpoint.storedPaths.contains($0) }
            }
            for (path, digest) in spooled {
                let received = try #require(a.stored(under: path)[path], "\(path)")
                #expect(Data(SHA256.hash(data: received)) == digest, "\(path) arrived changed")
            }
            // Session 2 goes with the new certificate, which A's CA did not sign: it never arrives (it waits).
            #expect(!a.endpoint.started.contains { $0.contains("session_2/") }, "\(a.endpoint.started)")
            let waiting = try await engine.spool.storedDestinations().contains { $0.pending > 0 }
            #expect(waiting, "session 2 waits for its destination")
        } catch {
            // What the engine did is the only way to tell a slow lane from a lost one: keep it with the failure.
            Issue.record("\(error)\nengine log:\n\(log.allWithMetadata.suffix(200).joined(separator: "\n"))")
        }
        running.cancel()
        _ = await running.result
        await server?.stop()
    }
}
