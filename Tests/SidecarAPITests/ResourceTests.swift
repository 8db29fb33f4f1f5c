import Foundation
import HTTPTypes
import HummingbirdTesting
import Sidecar
@testable import SidecarAPI
import Testing

@Suite struct ResourceTests {
    /// TLS endpoints: per-fabric IDs, listing without keys, refusal to remove one a connection uses, 204 on removal.
    @Test func tlsEndpointLifecycle() async throws {
        try await withAPI { _, client in
            let pki = try await TestCertificates.material()
            #expect(try await client.addTLSEndpoint(fabric: 1) == 1)
            #expect(try await client.addTLSEndpoint(fabric: 1) == 2)
            #expect(try await client.addTLSEndpoint(fabric: 2) == 1)

            let created = try await client.call(
                .post, "/v1/tls/endpoints",
                json: String(decoding: try JSONEncoder().encode(TLSEndpointRequest(
                    hostname: "other.example.com", port: 8443, caCertificate: pki.caCertificate,
                    clientCertificate: pki.clientCertificate, clientKey: pki.clientKey)), as: UTF8.self))
            #expect(created.status == .created)
            #expect(created.text == #"{"endpointID":3}"#)
            #expect(created.headers[.location] == "/v1/tls/endpoints/3")

            let summary = { (id: UInt16, host: String, port: UInt16) in
                Components.Schemas.TLSEndpointSummary(endpointID: id, hostname: host, port: port, caCertificate: pki.caCertificate,
                                   clientCertificate: pki.clientCertificate)
            }
            let list = try await client.call(.get, "/v1/tls/endpoints")
            #expect(try JSONDecoder().decode(Components.Schemas.TLSEndpointList.self, from: Data(buffer: list.body)).endpoints == [
                summary(1, "ingest.example.com", 443), summary(2, "ingest.example.com", 443), summary(3, "other.example.com", 8443),
            ])
            #expect(!list.text.contains("PRIVATE KEY"))
            let other = try await client.call(.get, "/v1/tls/endpoints", fabric: "2")
            #expect(try JSONDecoder().decode(Components.Schemas.TLSEndpointList.self, from: Data(buffer: other.body)).endpoints.map(\.endpointID) == [1])
            let one = try await client.call(.get, "/v1/tls/endpoints/3")
            #expect(try JSONDecoder().decode(Components.Schemas.TLSEndpointSummary.self, from: Data(buffer: one.body)) == summary(3, "other.example.com", 8443))

            #expect(try await allocate(client, Bodies.motionOptions(tls: 3)) == 1)
            let inUse = try await client.call(.delete, "/v1/tls/endpoints/3")
            #expect(inUse.status == .conflict)
            #expect(inUse.errorBody?.status == "INVALID_IN_STATE")
            _ = try await client.command("deallocatePushTransport", #"{"connectionID":1}"#)
            let removed = try await client.call(.delete, "/v1/tls/endpoints/3")
            #expect(removed.status == .noContent)
            #expect(removed.body.readableBytes == 0)
            for method in [HTTPRequest.Method.get, .delete] {
                let gone = try await client.call(method, "/v1/tls/endpoints/3")
                #expect(gone.status == .notFound)
                #expect(gone.errorBody?.code == 0x8B)
            }
            // The removed endpoint is gone from the cluster too: allocating on it is InvalidTLSEndpoint.
            let refused = try await client.command("allocatePushTransport", Bodies.allocate(Bodies.motionOptions(tls: 3)))
            #expect(refused.status == .unprocessableContent)
            #expect(refused.errorBody?.clusterStatus == 0x02)
        }
    }

    /// Camera attributes read and write per camera; SupportedFormats is the cluster's.
    @Test func attributes() async throws {
        try await withAPI { _, client in
            let path = "/v1/cameras/cam1/attributes/recordingMicrophoneMuted"
            #expect(try await client.call(.get, path).text == #"{"value":false}"#)
            let put = try await client.call(.put, path, json: #"{"value":true}"#)
            #expect(put.status == .ok)
            #expect(put.text == #"{"value":true}"#)
            #expect(try await client.call(.get, path).text == #"{"value":true}"#)
            #expect(try await client.call(.get, "/v1/cameras/cam2/attributes/recordingMicrophoneMuted").text == #"{"value":false}"#)
            #expect(try await client.call(.get, "/v1/cameras/cam1/attributes/softLivestreamPrivacyModeEnabled").text == #"{"value":false}"#)
            let formats = try await client.call(.get, "/v1/cameras/cam1/attributes/supportedFormats")
            #expect(formats.text == #"{"value":[{"containerFormat":0,"ingestMethod":0}]}"#)
        }
    }

    /// A recording's thumbnail and the camera's snapshot are JPEGs (never sniffed); what has none is 404 with the
    /// error body, and IDs that are not integers 400.
    @Test func thumbnailAndSnapshot() async throws {
        try await withAPI { _, client in
            let thumbnail = try await client.call(.get, "/v1/cameras/cam1/clips/1/3/thumbnail.jpg")
            #expect(thumbnail.status == .ok)
            #expect(thumbnail.headers[.contentType] == "image/jpeg" && thumbnail.headers[.xContentTypeOptions] == "nosniff")
            #expect(Data(buffer: thumbnail.body) == TestSidecar.jpeg)
            // Plain text, not the runtime's URI encoding of a header value (`private%2C%20max-age%3D3600`).
            #expect(thumbnail.headers[.cacheControl] == "private, max-age=3600")
            let none = try await client.call(.get, "/v1/cameras/cam1/clips/1/4/thumbnail.jpg")
            #expect(none.status == .notFound && none.errorBody?.status == "NOT_FOUND", "\(none.text)")
            #expect(try await client.call(.get, "/v1/cameras/cam1/clips/x/3/thumbnail.jpg").status == .badRequest)
            let tooLarge = try await client.call(.get, "/v1/cameras/cam1/clips/70000/3/thumbnail.jpg")
            #expect(tooLarge.status == .badRequest && tooLarge.text.contains("connectionID: must be an integer 0…65535"), "\(tooLarge.text)")
            #expect(try await client.call(.get, "/v1/cameras/cam9/clips/1/3/thumbnail.jpg").status == .notFound)

            let snapshot = try await client.call(.get, "/v1/cameras/cam1/snapshot.jpg")
            #expect(snapshot.status == .ok && snapshot.headers[.contentType] == "image/jpeg")
            #expect(snapshot.headers[.cacheControl] == "no-store")
            #expect(snapshot.headers[.lastModified] == "Sun, 15 Jun 2025 15:06:40 GMT")
            #expect(Data(buffer: snapshot.body) == TestSidecar.jpeg)
            #expect(try await client.call(.get, "/v1/cameras/cam2/snapshot.jpg").status == .notFound)
        }
    }

    @Test func camerasAndHealth() async throws {
        try await withAPI { _, client in
            let cameras = try await client.call(.get, "/v1/cameras")
            #expect(cameras.status == .ok)
            #expect(cameras.text == #"{"cameras":[{"connections":0,"connectionsWithoutTLSEndpoint":[],"framesAnalysed":1500,"id":"cam1","lastMotion":"2025-06-15T15:06:40Z","#
                + #""recentClips":[{"cmafSessionNumber":3,"connectionID":1,"endReason":"initialDuration","ended":"2025-06-15T15:06:52Z","#
                + #""started":"2025-06-15T15:06:40Z"}],"recentMotion":[],"reconnects":0,"source":"rtsp://192.0.2.10/main","#
                + #""state":"streaming","transports":[]},"#
                + #"{"connections":0,"connectionsWithoutTLSEndpoint":[],"framesAnalysed":0,"id":"cam2","lastError":"connection refused","recentClips":[],"recentMotion":[],"#
                + #""reconnects":0,"source":"file:///media/loop.mp4","state":"reconnecting","transports":[]}]}"#)
            let health = try await client.call(.get, "/health")
            #expect(health.text == #"{"cameras":{"cam1":"streaming","cam2":"reconnecting"},"pendingUploads":2,"status":"degraded"}"#)
        }
    }
}
