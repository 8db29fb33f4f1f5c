import Foundation
import Sidecar
@testable import SidecarAPI
import Testing

/// ProvisionClientCertificate over the API: the released flat body and the earlier draft's nested one reach the
/// cluster as the same request; a body with neither certificate, or with bytes that are not base64, is refused naming
/// the field.
@Suite struct ProvisionClientCertificateAPITests {
    static let path = "/v1/tls/commands/provisionClientCertificate"

    @Test(arguments: [
        #"{"ccdid": 3, "clientCertificate": "AQI=", "intermediateCertificates": ["Aw=="]}"#,
        #"{"ccdid": 3, "clientCertificateDetails": {"clientCertificate": "AQI=", "intermediateCertificates": ["Aw=="]}}"#,
        // Both: the released form's fields win.
        #"{"ccdid": 3, "clientCertificate": "AQI=", "intermediateCertificates": ["Aw=="], "clientCertificateDetails": {"clientCertificate": "BQY="}}"#,
    ])
    func bothShapesReachTheClusterAlike(json: String) async throws {
        try await withAPI { sidecar, client in
            let response = try await client.call(.post, Self.path, json: json)
            #expect(response.status == .ok, "\(response.text)")
            #expect(response.text == "{}")
            #expect(sidecar.clientCertificates == [
                ProvisionClientCertificateRequest(ccdid: 3, clientCertificate: Data([1, 2]), intermediateCertificates: [Data([3])]),
            ])
        }
    }

    @Test func intermediatesMayBeLeftOut() async throws {
        try await withAPI { sidecar, client in
            let response = try await client.call(.post, Self.path, json: #"{"ccdid": 0, "clientCertificateDetails": {"clientCertificate": "AQI="}}"#)
            #expect(response.status == .ok, "\(response.text)")
            #expect(sidecar.clientCertificates.map(\.intermediateCertificates) == [[]])
        }
    }

    @Test(arguments: [
        (#"{"ccdid": 3}"#, "clientCertificate: required field is missing"),
        (#"{"ccdid": 3, "clientCertificateDetails": {}}"#, "clientCertificateDetails.clientCertificate: required field is missing"),
        (#"{"ccdid": 3, "clientCertificate": "A*QI="}"#, "clientCertificate: "),
        (#"{"ccdid": 3, "clientCertificate": "AQI=", "intermediateCertificates": ["%%"]}"#, "intermediateCertificates[0]: "),
        (#"{"ccdid": 70000, "clientCertificate": "AQI="}"#, "ccdid: must be an integer 0…65535"),
    ])
    func unreadableBodiesAreRefusedNamingTheField(json: String, mentions: String) async throws {
        try await withAPI { sidecar, client in
            let response = try await client.call(.post, Self.path, json: json)
            #expect(response.status == .badRequest, "\(response.text)")
            let body = try #require(response.errorBody, "\(response.text)")
            #expect(body.status == "INVALID_COMMAND")
            #expect(body.message.contains(mentions), "\(body.message)")
            #expect(sidecar.clientCertificates.isEmpty)
        }
    }
}
