import Foundation
import HTTPTypes
import HummingbirdTesting
@testable import SidecarAPI
import Synchronization
import Testing

/// A request the API cannot take as it is, and the answer it must get.
struct BadRequest: Sendable {
    var name: String
    var method: HTTPRequest.Method = .post
    var path: String
    var body: String? = nil
    var fabric: String? = nil
    var httpStatus: Int
    var status: String = "INVALID_COMMAND"
    var code: UInt8 = 0x85
    /// A piece of the message: the offending field, header or value.
    var mentions: String
    var allow: String? = nil
}

private let find = "/v1/cameras/cam1/commands/findTransport"
private let deallocate = "/v1/cameras/cam1/commands/deallocatePushTransport"
private let allocatePath = "/v1/cameras/cam1/commands/allocatePushTransport"

let badRequests: [BadRequest] = [
    BadRequest(name: "malformed JSON", path: allocatePath, body: #"{"transportOptions":"#, httpStatus: 400, mentions: "not a valid JSON"),
    BadRequest(name: "not an object", path: find, body: "[1]", httpStatus: 400, mentions: "body: expected an object"),
    BadRequest(name: "null body", path: find, body: "null", httpStatus: 400, mentions: "body"),
    BadRequest(name: "wrong type", path: find, body: #"{"connectionID":"one"}"#, httpStatus: 400, mentions: "connectionID: expected an integer"),
    BadRequest(name: "70000 in a UInt16", path: deallocate, body: #"{"connectionID":70000}"#, httpStatus: 400, mentions: "connectionID: must be an integer 0…65535; got 70000"),
    BadRequest(name: "negative UInt16", path: deallocate, body: #"{"connectionID":-1}"#, httpStatus: 400,
               mentions: "connectionID: must be an integer 0…65535; got -1"),
    BadRequest(name: "fraction in a UInt16", path: deallocate, body: #"{"connectionID":1.5}"#, httpStatus: 400,
               mentions: "connectionID: must be an integer; got 1.5"),
    BadRequest(
        name: "nested out of range", path: allocatePath,
        body: Bodies.allocate(Bodies.motionOptions().replacingOccurrences(of: #""segmentDuration":4000"#, with: #""segmentDuration":70000"#)),
        httpStatus: 400, mentions: "transportOptions.containerOptions.cmafContainerOptions.segmentDuration: must be an integer 0…65535; got 70000"),
    BadRequest(
        name: "enum out of UInt8 range", path: "/v1/cameras/cam1/commands/setTransportStatus",
        body: #"{"connectionID":1,"transportStatus":256}"#, httpStatus: 400, mentions: "transportStatus: "),
    BadRequest(
        name: "missing field", path: "/v1/cameras/cam1/commands/modifyPushTransport", body: #"{"connectionID":1}"#,
        httpStatus: 400, mentions: "transportOptions: required field is missing"),
    BadRequest(
        name: "missing nested field", path: allocatePath,
        body: Bodies.allocate(Bodies.motionOptions().replacingOccurrences(of: #""ingestMethod":0,"#, with: "")),
        httpStatus: 400, mentions: "transportOptions.ingestMethod: required field is missing"),
    BadRequest(
        name: "bad base64", path: "/v1/cameras/cam1/commands/manuallyTriggerTransport",
        body: #"{"connectionID":1,"activationReason":0,"userDefined":"***"}"#, httpStatus: 400, mentions: "userDefined: "),
    BadRequest(
        name: "oversized body", path: allocatePath, body: #"{"pad":""# + String(repeating: "x", count: 70_000) + #""}"#,
        httpStatus: 413, mentions: "65536 bytes"),
    BadRequest(name: "unknown camera", path: "/v1/cameras/nope/commands/findTransport", body: "{}", httpStatus: 404,
               status: "NOT_FOUND", code: 0x8B, mentions: #"no camera "nope""#),
    // The camera is looked up before the body is read: an unknown camera is unknown whatever its body.
    BadRequest(name: "unknown camera, bad body", path: "/v1/cameras/nope/commands/deallocatePushTransport", body: "{}",
               httpStatus: 404, status: "NOT_FOUND", code: 0x8B, mentions: #"no camera "nope""#),
    BadRequest(name: "zone ID out of range", path: "/v1/cameras/cam1/zoneManagement/commands/removeZone",
               body: #"{"zoneID":70000}"#, httpStatus: 400, mentions: "zoneID: must be an integer 0…65535; got 70000"),
    BadRequest(name: "zone ID a fraction", path: "/v1/cameras/cam1/zoneManagement/commands/removeTrigger",
               body: #"{"zoneID":1.5}"#, httpStatus: 400, mentions: "zoneID: must be an integer; got 1.5"),
    BadRequest(name: "sensitivity out of UInt8 range", method: .put, path: "/v1/cameras/cam1/zoneManagement/attributes/sensitivity",
               body: #"{"value":300}"#, httpStatus: 400, mentions: "value: must be an integer 0…255; got 300"),
    BadRequest(name: "unknown camera, attribute", method: .get, path: "/v1/cameras/nope/attributes/recordingMicrophoneMuted",
               httpStatus: 404, status: "NOT_FOUND", code: 0x8B, mentions: #"no camera "nope""#),
    BadRequest(name: "unknown camera, events", method: .get, path: "/v1/cameras/nope/events",
               httpStatus: 404, status: "NOT_FOUND", code: 0x8B, mentions: #"no camera "nope""#),
    BadRequest(name: "unknown command", path: "/v1/cameras/cam1/commands/updateTransportZones", body: "{}",
               httpStatus: 404, status: "UNSUPPORTED_COMMAND", code: 0x81, mentions: #"no command "updateTransportZones""#),
    BadRequest(name: "fabric 0", path: find, body: "{}", fabric: "0", httpStatus: 400, mentions: "X-Fabric-Index"),
    BadRequest(name: "fabric 255", path: find, body: "{}", fabric: "255", httpStatus: 400, mentions: "X-Fabric-Index"),
    BadRequest(name: "fabric not a number", path: find, body: "{}", fabric: "one", httpStatus: 400, mentions: #"got "one""#),
    BadRequest(name: "fabric empty", method: .get, path: "/v1/tls/endpoints", fabric: "", httpStatus: 400, mentions: "X-Fabric-Index"),
    BadRequest(name: "wrong method on a command", method: .get, path: find, httpStatus: 405, mentions: "allowed: POST", allow: "POST"),
    BadRequest(name: "write to a read-only attribute", method: .put, path: "/v1/cameras/cam1/attributes/currentConnections",
               body: #"{"value":[]}"#, httpStatus: 405, mentions: "allowed: GET", allow: "GET"),
    BadRequest(name: "attribute value of the wrong type", method: .put, path: "/v1/cameras/cam1/attributes/recordingMicrophoneMuted",
               body: #"{"value":"yes"}"#, httpStatus: 400, mentions: "value: expected a boolean"),
    BadRequest(name: "attribute without value", method: .put, path: "/v1/cameras/cam1/attributes/recordingMicrophoneMuted",
               body: "{}", httpStatus: 400, mentions: "value: required field is missing"),
    BadRequest(name: "unknown attribute", method: .get, path: "/v1/cameras/cam1/attributes/zones", httpStatus: 404,
               status: "NOT_FOUND", code: 0x8B, mentions: "no route"),
    BadRequest(name: "endpoint ID not a number", method: .get, path: "/v1/tls/endpoints/abc", httpStatus: 400, mentions: "endpointID"),
    BadRequest(name: "endpoint ID out of range", method: .delete, path: "/v1/tls/endpoints/70000", httpStatus: 400, mentions: "endpointID"),
    BadRequest(name: "TLS endpoint port out of range", path: "/v1/tls/endpoints",
               body: #"{"hostname":"h","port":70000,"caCertificate":"","clientCertificate":"","clientKey":""}"#,
               httpStatus: 400, mentions: "port: must be an integer 0…65535; got 70000"),
    BadRequest(name: "TLS endpoint PEM that does not parse", path: "/v1/tls/endpoints",
               body: #"{"hostname":"h","port":443,"caCertificate":"x","clientCertificate":"y","clientKey":"z"}"#,
               httpStatus: 400, status: "CONSTRAINT_ERROR", code: 0x87, mentions: "caCertificate"),
    // The generated routes keep the API's conventions (APIConventionsMiddleware): the body limit and an empty body
    // read as {} (a missing field named).
    BadRequest(name: "oversized body, generated route", path: "/v1/tls/endpoints",
               body: #"{"hostname":""# + String(repeating: "x", count: 70_000) + #""}"#, httpStatus: 413, mentions: "65536 bytes"),
    BadRequest(name: "empty body, generated route", path: "/v1/tls/commands/provisionEndpoint", body: "",
               httpStatus: 400, mentions: "hostname: required field is missing"),
    BadRequest(name: "unknown route", method: .get, path: "/v2/cameras", httpStatus: 404, status: "NOT_FOUND", code: 0x8B, mentions: "no route"),
]

@Suite struct BadRequestTests {
    /// Every bad request gets a 4xx with the error body naming what is wrong; never a crash or 5xx. Over the router and
    /// over a real socket (where the body limit applies to bytes actually streamed in).
    @Test(arguments: [false, true])
    func badRequestsGetAClearFourHundred(live: Bool) async throws {
        try await withAPI(live ? .live : .router) { _, client in
            for bad in badRequests {
                let response = try await client.call(bad.method, bad.path, json: bad.body, fabric: bad.fabric)
                #expect(Int(response.status.code) == bad.httpStatus, "\(bad.name): \(response.status) \(response.text)")
                #expect(response.headers[.contentType] == "application/json", "\(bad.name)")
                let body = try #require(response.errorBody, "\(bad.name): not an error body: \(response.text)")
                #expect(body.status == bad.status, "\(bad.name)")
                #expect(body.code == bad.code, "\(bad.name)")
                #expect(body.clusterStatus == nil, "\(bad.name)")
                #expect(body.message.contains(bad.mentions), "\(bad.name): \(body.message)")
                if let allow = bad.allow { #expect(response.headers[.allow] == allow, "\(bad.name)") }
            }
            // The service still answers after all of that.
            let health = try await client.call(.get, "/health")
            #expect(health.status == .ok)
        }
    }
}

/// The probe that names a number's field is bounded: a few dozen decodes for a small body, none past
/// ``NumberRangeProbe/maxProbedBytes`` (a 64 KiB body was decoded up to 400 times per refused request).
@Suite struct NumberRangeProbeBoundTests {
    struct Body: Decodable {
        var connectionID: UInt16
        var padding: String
    }

    @Test(arguments: [(100, true), (NumberRangeProbe.maxProbedBytes + 1, false)])
    func probesOnlySmallBodies(size: Int, probed: Bool) {
        let prefix = #"{"connectionID":70000,"padding":""#
        let body = Data((prefix + String(repeating: "x", count: max(0, size - prefix.count - 2)) + #""}"#).utf8)
        let decodes = Mutex(0)
        let refusal = NumberRangeProbe.refusal(decoding: { data in
            decodes.withLock { $0 += 1 }
            _ = try JSONDecoder().decode(Body.self, from: data)
        }, from: body)
        if probed {
            #expect(refusal == "connectionID: must be an integer 0…65535; got 70000")
            #expect(decodes.withLock { $0 } <= NumberRangeProbe.maxCandidates + 24)
        } else {
            #expect(refusal == nil && decodes.withLock { $0 } == 0)
        }
    }
}
