import Foundation
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import Logging
import Prometheus
import Sidecar
@testable import SidecarAPI
import TestSupport
import Testing
import TransportModel

/// Runs `body` against the API over a fresh ``TestSidecar``, through Hummingbird's in-process router test client.
func withAPI(
    _ setup: TestingSetup = .router, logs: LogRecorder? = nil, eventKeepAlive: Duration = .seconds(15),
    metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), bearerToken: String? = nil,
    sidecar: TestSidecar? = nil,
    _ body: @Sendable (TestSidecar, any TestClientProtocol) async throws -> Void
) async throws {
    let sidecar = try sidecar ?? TestSidecar()
    let logger = logs.map { recorder in Logger(label: "sidecar-api-test") { _ in recorder } }
        ?? Logger(label: "sidecar-api-test", factory: { _ in SwiftLogNoOpLogHandler() })
    let router = try SidecarRouter.router(control: sidecar, logger: logger, eventKeepAlive: eventKeepAlive, metrics: metrics,
                                      bearerToken: bearerToken)
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
    try await app.test(setup) { client in try await body(sidecar, client) }
}

extension TestClientProtocol {
    /// A request with a JSON body (given as text, so tests can send what no Swift type would encode).
    func call(
        _ method: HTTPRequest.Method, _ uri: String, json: String? = nil, fabric: String? = nil
    ) async throws -> TestResponse {
        var headers = HTTPFields()
        if let fabric { headers[HTTPField.Name("X-Fabric-Index")!] = fabric }
        if json != nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }

    /// POST /v1/cameras/{camera}/commands/{command}.
    func command(
        _ name: String, _ json: String, camera: String = "cam1", fabric: FabricIndex? = nil
    ) async throws -> TestResponse {
        try await call(.post, "/v1/cameras/\(camera)/commands/\(name)", json: json, fabric: fabric.map { "\($0)" })
    }

    /// Provisions a TLS endpoint with real PEM through the API; returns its ID.
    func addTLSEndpoint(fabric: FabricIndex = 1) async throws -> UInt16 {
        let pki = try await TestCertificates.material()
        let request = TLSEndpointRequest(
            hostname: "ingest.example.com", port: 443, caCertificate: pki.caCertificate,
            clientCertificate: pki.clientCertificate, clientKey: pki.clientKey)
        let response = try await call(
            .post, "/v1/tls/endpoints", json: String(decoding: try JSONEncoder().encode(request), as: UTF8.self),
            fabric: "\(fabric)")
        #expect(response.status == .created, "\(response.text)")
        return try UInt16(JSONDecoder().decode(Components.Schemas.TLSEndpointCreated.self, from: Data(buffer: response.body)).endpointID)
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }

    var errorBody: APIErrorBody? { try? JSONDecoder().decode(APIErrorBody.self, from: Data(buffer: body)) }
}

/// Request bodies the tests share (JSON text, field names as the cluster spells them).
enum Bodies {
    static let timeControl = #"{"initialDuration":10,"augmentationDuration":5,"maxDuration":20,"blindDuration":1}"#
    static let cmaf = #"{"containerType":0,"cmafContainerOptions":{"cmafInterface":0,"segmentDuration":4000,"chunkDuration":0}}"#

    /// A Motion transport on zone 1, sensitivity 5, pre-roll 4 s, both legacy stream IDs, TLS endpoint `tls`.
    static func motionOptions(tls: UInt16 = 1, url: String = "https://ingest.example.com/streams/1/") -> String {
        #"{"streamUsage":1,"videoStreamID":10,"audioStreamID":20,"tlsEndpointID":\#(tls),"url":"\#(url)","#
            + #""triggerOptions":{"triggerType":1,"motionZones":[{"zone":1}],"motionSensitivity":5,"#
            + #""motionTimeControl":\#(timeControl),"maxPreRollLen":4000},"ingestMethod":0,"containerOptions":\#(cmaf)}"#
    }

    /// A Command transport (pre-roll 4 s).
    static func commandOptions(tls: UInt16 = 1) -> String {
        #"{"streamUsage":1,"videoStreamID":10,"audioStreamID":20,"tlsEndpointID":\#(tls),"#
            + #""url":"https://ingest.example.com/streams/2/","triggerOptions":{"triggerType":0,"maxPreRollLen":4000},"#
            + #""ingestMethod":0,"containerOptions":\#(cmaf)}"#
    }

    static func allocate(_ options: String) -> String { #"{"transportOptions":\#(options)}"# }
}

/// Allocates through the API and returns the new connection ID.
func allocate(_ client: any TestClientProtocol, _ options: String, camera: String = "cam1", fabric: FabricIndex = 1) async throws -> UInt16 {
    let response = try await client.command("allocatePushTransport", Bodies.allocate(options), camera: camera, fabric: fabric)
    try #require(response.status == .ok, "\(response.text)")
    return try JSONDecoder().decode(Components.Schemas.AllocatePushTransportResponse.self, from: Data(buffer: response.body))
        .transportConfiguration.connectionID
}
