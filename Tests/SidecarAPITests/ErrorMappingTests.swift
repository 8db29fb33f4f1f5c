import Foundation
import HummingbirdTesting
@testable import SidecarAPI
import Testing
import TransportModel

/// A refused command: how to provoke it from the real cluster model and what the API must answer.
struct RefusalCase: Sendable, CustomTestStringConvertible {
    var name: String
    /// Runs after a TLS endpoint (1) and a Motion transport (connection 1, Inactive) exist on cam1 for fabric 1.
    var prepare: @Sendable (TestSidecar, any TestClientProtocol) async throws -> Void = { _, _ in }
    var command: String
    var body: String
    var camera = "cam1"
    var httpStatus: Int
    var status: String
    var code: UInt8
    var clusterStatus: UInt8? = nil
    var testDescription: String { name }
}

let refusalCases: [RefusalCase] = [
    RefusalCase(
        name: "NOT_FOUND", command: "findTransport", body: #"{"connectionID":7}"#,
        httpStatus: 404, status: "NOT_FOUND", code: 0x8B),
    RefusalCase(
        name: "CONSTRAINT_ERROR (unknown TransportStatus)", command: "setTransportStatus",
        body: #"{"connectionID":1,"transportStatus":5}"#, httpStatus: 400, status: "CONSTRAINT_ERROR", code: 0x87),
    RefusalCase(
        name: "CONSTRAINT_ERROR (connection ID 65535)", command: "deallocatePushTransport",
        body: #"{"connectionID":65535}"#, httpStatus: 400, status: "CONSTRAINT_ERROR", code: 0x87),
    RefusalCase(
        name: "INVALID_COMMAND (Motion without MotionTimeControl)", command: "allocatePushTransport",
        body: Bodies.allocate(Bodies.motionOptions().replacingOccurrences(of: #""motionTimeControl":\#(Bodies.timeControl),"#, with: "")),
        httpStatus: 400, status: "INVALID_COMMAND", code: 0x85),
    RefusalCase(
        name: "DYNAMIC_CONSTRAINT_ERROR (Command trigger without TimeControl)",
        prepare: { _, client in
            #expect(try await allocate(client, Bodies.commandOptions()) == 2)
            _ = try await client.command("setTransportStatus", #"{"connectionID":2,"transportStatus":0}"#)
        },
        command: "manuallyTriggerTransport", body: #"{"connectionID":2,"activationReason":0}"#,
        httpStatus: 400, status: "DYNAMIC_CONSTRAINT_ERROR", code: 0xCF),
    RefusalCase(
        name: "ALREADY_EXISTS (zone listed twice)", command: "allocatePushTransport",
        body: Bodies.allocate(Bodies.motionOptions().replacingOccurrences(of: #"[{"zone":1}]"#, with: #"[{"zone":1},{"zone":1}]"#)),
        httpStatus: 409, status: "ALREADY_EXISTS", code: 0xD0),
    RefusalCase(
        name: "RESOURCE_EXHAUSTED (bandwidth)",
        prepare: { _, client in _ = try await allocate(client, Bodies.motionOptions(), camera: "cam2") },
        command: "allocatePushTransport", body: Bodies.allocate(Bodies.motionOptions()), camera: "cam2",
        httpStatus: 409, status: "RESOURCE_EXHAUSTED", code: 0x89),
    RefusalCase(
        name: "BUSY (uploads pending)",
        prepare: { sidecar, _ in await sidecar.servers["cam1"]!.setUploadsPendingQuery { _ in true } },
        command: "deallocatePushTransport", body: #"{"connectionID":1}"#,
        httpStatus: 409, status: "BUSY", code: 0x9C),
    RefusalCase(
        name: "INVALID_IN_STATE (Active under privacy)",
        prepare: { _, client in
            let put = try await client.call(.put, "/v1/cameras/cam1/attributes/softRecordingPrivacyModeEnabled", json: #"{"value":true}"#)
            #expect(put.text == #"{"value":true}"#)
        },
        command: "setTransportStatus", body: #"{"connectionID":null,"transportStatus":0}"#,
        httpStatus: 409, status: "INVALID_IN_STATE", code: 0xCB),
    RefusalCase(
        name: "cluster InvalidTLSEndpoint", command: "allocatePushTransport",
        body: Bodies.allocate(Bodies.motionOptions(tls: 9)),
        httpStatus: 422, status: "FAILURE", code: 1, clusterStatus: 0x02),
    RefusalCase(
        name: "cluster InvalidURL", command: "allocatePushTransport",
        body: Bodies.allocate(Bodies.motionOptions(url: "http://ingest.example.com/x/")),
        httpStatus: 422, status: "FAILURE", code: 1, clusterStatus: 0x04),
    RefusalCase(
        name: "cluster InvalidTransportStatus (trigger while Inactive)", command: "manuallyTriggerTransport",
        body: #"{"connectionID":1,"activationReason":0}"#,
        httpStatus: 422, status: "FAILURE", code: 1, clusterStatus: 0x08),
]

@Suite struct ErrorMappingTests {
    /// Each refusal the cluster model computes arrives as its exact Matter status, at the documented HTTP status.
    @Test(arguments: refusalCases)
    func refusal(_ refusal: RefusalCase) async throws {
        try await withAPI { sidecar, client in
            #expect(try await client.addTLSEndpoint() == 1)
            #expect(try await allocate(client, Bodies.motionOptions()) == 1)
            try await refusal.prepare(sidecar, client)
            let response = try await client.command(refusal.command, refusal.body, camera: refusal.camera)
            #expect(Int(response.status.code) == refusal.httpStatus, "\(response.text)")
            let body = try #require(response.errorBody, "not an error body: \(response.text)")
            #expect(body.status == refusal.status)
            #expect(body.code == refusal.code)
            #expect(body.clusterStatus == refusal.clusterStatus)
            #expect(!body.message.isEmpty)
            #expect(response.text.contains(#""clusterStatus":"#))
        }
    }

    /// The whole mapping, including statuses no command of the model reaches today: never a 5xx.
    @Test(arguments: InteractionModelStatus.allCases)
    func interactionModelStatusMapping(_ status: InteractionModelStatus) {
        let expected: Int = switch status {
        case .notFound, .unsupportedCommand, .unsupportedAttribute: 404
        case .unsupportedAccess: 403
        case .constraintError, .invalidCommand, .dynamicConstraintError: 400
        case .busy, .invalidInState, .resourceExhausted, .alreadyExists: 409
        case .failure, .success: 422
        }
        let error = APIError(TransportCommandError.im(status, "x: y"))
        #expect(Int(error.httpStatus.code) == expected)
        #expect(error.body == APIErrorBody(status: status.matterName, code: status.rawValue, clusterStatus: nil, message: "x: y"))
    }

    @Test(arguments: StatusCodeEnum.allCases)
    func clusterStatusMapping(_ status: StatusCodeEnum) {
        let error = APIError(TransportCommandError.cluster(status, "x: y"))
        #expect(error.httpStatus.code == 422)
        #expect(error.body == APIErrorBody(status: "FAILURE", code: 1, clusterStatus: status.rawValue, message: "x: y"))
    }
}
