import Foundation
import HummingbirdTesting
import SidecarAPI
import Testing
import TransportModel

@Suite struct CommandTests {
    @Test func probe() async throws {
        try await withAPI { sidecar, client in
            let tls = try await client.addTLSEndpoint()
            print("TLS", tls)
            let r = try await client.command("allocatePushTransport", Bodies.allocate(Bodies.motionOptions()))
            print(r.status, r.text)
        }
    }
}
