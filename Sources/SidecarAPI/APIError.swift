import Foundation
import Hummingbird
import OpenAPIRuntime
import TransportModel

/// The body of every error answer: the Matter status the request failed with, as the cluster would report it.
///
/// `status`/`code` are the Interaction Model status (name and number). A cluster-specific status is reported the way
/// Matter carries it: IM status FAILURE (code 1) with `clusterStatus` set to the cluster's StatusCodeEnum value.
/// `clusterStatus` is always present, null when there is none.
public struct APIErrorBody: Codable, Sendable, Hashable {
    public var status: String
    public var code: UInt8
    public var clusterStatus: UInt8?
    public var message: String

    public init(status: String, code: UInt8, clusterStatus: UInt8? = nil, message: String) {
        self.status = status
        self.code = code
        self.clusterStatus = clusterStatus
        self.message = message
    }

    private enum CodingKeys: String, CodingKey { case status, code, clusterStatus, message }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status, forKey: .status)
        try container.encode(code, forKey: .code)
        try container.encode(clusterStatus, forKey: .clusterStatus)  // null rather than absent
        try container.encode(message, forKey: .message)
    }
}

/// A request the API answers with an error body.
struct APIError: Error, CustomStringConvertible {
    var httpStatus: HTTPResponse.Status
    var body: APIErrorBody
    var headers: HTTPFields = [:]

    init(httpStatus: HTTPResponse.Status, status: InteractionModelStatus, message: String, headers: HTTPFields = [:]) {
        self.httpStatus = httpStatus
        self.body = APIErrorBody(status: status.matterName, code: status.rawValue, message: message)
        self.headers = headers
    }

    /// A command the cluster refused: its exact status, at the HTTP status ``httpStatus(for:)`` gives it.
    init(_ error: TransportCommandError) {
        httpStatus = Self.httpStatus(for: error.status)
        switch error.status {
        case .interactionModel(let status):
            body = APIErrorBody(status: status.matterName, code: status.rawValue, message: error.message)
        case .cluster(let status):
            body = APIErrorBody(
                status: InteractionModelStatus.failure.matterName, code: InteractionModelStatus.failure.rawValue,
                clusterStatus: status.rawValue, message: error.message)
        }
    }

    /// A request that cannot be read (bad JSON, wrong type, out of range, missing field, bad header): 400
    /// INVALID_COMMAND, as Matter answers a command whose fields do not decode.
    static func invalidCommand(_ message: String) -> APIError {
        APIError(httpStatus: .badRequest, status: .invalidCommand, message: message)
    }

    /// The cluster could not do what was asked for a reason of its own (its storage failed): FAILURE, at 422 like
    /// every other refusal, never a 5xx.
    static func failure(_ message: String) -> APIError {
        APIError(httpStatus: .unprocessableContent, status: .failure, message: message)
    }

    static func notFound(_ message: String) -> APIError {
        APIError(httpStatus: .notFound, status: .notFound, message: message)
    }

    /// How a refused command maps to HTTP. Never 5xx: every refusal is the client's request meeting the cluster's
    /// rules or state.
    static func httpStatus(for status: TransportStatus) -> HTTPResponse.Status {
        switch status {
        case .cluster: .unprocessableContent
        case .interactionModel(let status):
            switch status {
            case .notFound, .unsupportedCommand, .unsupportedAttribute: .notFound
            case .unsupportedAccess: .forbidden
            case .constraintError, .invalidCommand, .dynamicConstraintError: .badRequest
            // The request is fine but the node's state refuses it now: uploads pending, privacy on, no connection
            // ID or bandwidth left, a duplicate.
            case .busy, .invalidInState, .resourceExhausted, .alreadyExists: .conflict
            case .failure, .success: .unprocessableContent
            }
        }
    }

    var description: String { "\(httpStatus.code) \(body.status): \(body.message)" }
}

extension InteractionModelStatus {
    /// The status's name in the Matter specification (`NOT_FOUND`, `CONSTRAINT_ERROR`, …).
    public var matterName: String {
        switch self {
        case .success: "SUCCESS"
        case .failure: "FAILURE"
        case .unsupportedAccess: "UNSUPPORTED_ACCESS"
        case .unsupportedCommand: "UNSUPPORTED_COMMAND"
        case .unsupportedAttribute: "UNSUPPORTED_ATTRIBUTE"
        case .invalidCommand: "INVALID_COMMAND"
        case .constraintError: "CONSTRAINT_ERROR"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .notFound: "NOT_FOUND"
        case .busy: "BUSY"
        case .invalidInState: "INVALID_IN_STATE"
        case .dynamicConstraintError: "DYNAMIC_CONSTRAINT_ERROR"
        case .alreadyExists: "ALREADY_EXISTS"
        }
    }
}

extension DecodingError {
    /// One line naming the offending field by its JSON path (`transportOptions.triggerOptions.triggerType`).
    var fieldMessage: String {
        func path(_ codingPath: [any CodingKey]) -> String {
            let parts = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
            var joined = ""
            for part in parts {
                if part.hasPrefix("[") || joined.isEmpty { joined += part } else { joined += "." + part }
            }
            return joined
        }
        switch self {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key])
            return "\(field): required field is missing"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath).orBody): must not be null (expected \(Self.jsonTypeName(type)))"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath).orBody): expected \(Self.jsonTypeName(type))"
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return "body: not a valid JSON document" }
            // Foundation's text for an out-of-range number ("Number 70000 is not representable in Swift.") or bad
            // base64 names the value; the field comes first.
            return "\(field): \(context.debugDescription)"
        @unknown default:
            return "body: \(self)"
        }
    }

    private static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: "a boolean"
        case is String.Type: "a string"
        // The generated types' integers: the field's width is checked once it is read (`SidecarOperations.integer`).
        case is Int.Type: "an integer"
        case is UInt8.Type: "an integer 0…255"
        case is UInt16.Type: "an integer 0…65535"
        case is UInt32.Type: "an integer 0…4294967295"
        case is UInt64.Type: "an unsigned 64-bit integer"
        case is Data.Type: "a base64 string"
        default:
            if String(describing: type).hasPrefix("Array") { "an array" }
            else if String(describing: type).hasPrefix("Dictionary") { "an object" }
            else { "\(type)" }
        }
    }
}

private extension String {
    var orBody: String { isEmpty ? "body" : self }
}

extension APIError {
    /// What a generated route's failure answers. A handler's own refusal, as it threw it; a path, header or body the
    /// generated code could not read, 400 INVALID_COMMAND naming the field (as the hand-routed requests are answered),
    /// or the runtime's own 4xx where it has one (415 for a body that is not JSON, 406 for an `Accept` without JSON).
    /// Anything else is a bug here: 500, as on the hand-written routes.
    init(generatedRouteError error: ServerError) {
        switch error.underlyingError {
        case let refusal as APIError:
            self = refusal
        case let refusal as TransportCommandError:
            self = APIError(refusal)
        case let decoding as DecodingError:
            self = .invalidCommand(decoding.fieldMessage)
        default:
            let status = error.httpStatus
            if (400..<500).contains(status.code) {
                self = APIError(httpStatus: status, status: .invalidCommand, message: error.causeDescription)
            } else {
                self = APIError(httpStatus: .internalServerError, status: .failure,
                                message: "internal error in \(error.operationID): \(error.underlyingError)")
            }
        }
    }
}
