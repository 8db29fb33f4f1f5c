import Foundation
import HTTPTypes
import Hummingbird
import NIOPosix
import Logging
import OpenAPIRuntime
import Prometheus
import Sidecar
import TransportModel

/// Reading what a request carries: the fabric header, path parameters, the JSON body.
enum RequestReading {
    static func fabric(of request: Request) throws(APIError) -> FabricIndex {
        let values = request.headers.filter { $0.name.canonicalName == "x-fabric-index" }.map(\.value)
        guard !values.isEmpty else { return SidecarRouter.defaultFabric }
        let text = values.joined(separator: ", ")
        guard values.count == 1, let fabric = UInt8(text.trimmingCharacters(in: .whitespaces)), (1...254).contains(fabric) else {
            throw .invalidCommand("\(SidecarRouter.fabricHeader): must be one fabric index, an integer 1…254; got \"\(text)\"")
        }
        return fabric
    }

    /// The path parameter `name` as a `T`; 400 naming it otherwise.
    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ name: String, _ context: BasicRequestContext) throws(APIError) -> T {
        let text = context.parameters.get(name) ?? ""
        guard let value = T(text) else { throw .invalidCommand("\(name): must be an integer \(T.min)…\(T.max); got \"\(text)\"") }
        return value
    }

    static func endpointID(_ context: BasicRequestContext) throws(APIError) -> UInt16 {
        let text = context.parameters.get("endpointID") ?? ""
        guard let endpointID = UInt16(text) else {
            throw .invalidCommand("endpointID: must be an integer 0…65535; got \"\(text)\"")
        }
        return endpointID
    }
}

/// JSON answers: keys sorted (stable bodies), dates in ISO 8601, slashes unescaped.
enum JSONResponse {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try encoder().encode(value))))
    }
}

extension APIError {
    var response: Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        let data = (try? JSONResponse.encoder().encode(body)) ?? Data()
        return Response(status: httpStatus, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns every failure into the error body: refused commands and unreadable requests (``APIError``), a body over
/// the limit (413), routes and methods that do not exist (404 / 405). Anything else is a bug: logged, 500.
struct APIErrorMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let routes: [RouteSignature]
    let logger: Logger

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            context.logger.debug("refused \(request.method) \(request.uri.path): \(error)")
            return error.response
        } catch let error as ServerError {
            // A generated route: its handler's refusal, or a request the generated code could not read.
            let answer = APIError(generatedRouteError: error)
            context.logger.debug("refused \(request.method) \(request.uri.path): \(answer)")
            return answer.response
        } catch let error as any HTTPResponseError {
            return answer(error.status, to: request).response
        } catch {
            logger.error("\(request.method) \(request.uri.path) failed unexpectedly: \(error)")
            return APIError(httpStatus: .internalServerError, status: .failure, message: "internal error: \(error)").response
        }
    }

    private func answer(_ status: HTTPResponse.Status, to request: Request) -> APIError {
        let path = request.uri.path
        switch status {
        case .contentTooLarge:
            return APIError(httpStatus: .contentTooLarge, status: .invalidCommand,
                            message: "body: larger than \(SidecarRouter.maxBodyBytes) bytes")
        case .notFound:
            let allowed = routes.filter { $0.matches(path: path) }.map(\.method)
            if !allowed.isEmpty {
                var headers = HTTPFields()
                headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
                return APIError(
                    httpStatus: .methodNotAllowed, status: .invalidCommand,
                    message: "\(request.method) is not allowed on \(path); allowed: \(headers[.allow] ?? "")", headers: headers)
            }
            if RouteSignature(method: .post, path: "/v1/cameras/{camera}/commands/{command}").matches(path: path) {
                let name = path.split(separator: "/").last.map(String.init) ?? ""
                return APIError(
                    httpStatus: .notFound, status: .unsupportedCommand,
                    message: "command: no command \"\(name)\" (commands: \(SidecarRouter.commandNames.joined(separator: ", ")))")
            }
            return .notFound("no route \(request.method) \(path)")
        default:
            return APIError(
                httpStatus: status, status: status.code >= 500 ? .failure : .invalidCommand,
                message: "\(status.code) \(status.reasonPhrase)")
        }
    }
}

extension Logger {
    func with(camera: String, fabric: FabricIndex) -> Logger {
        var logger = self
        logger[metadataKey: "camera"] = "\(camera)"
        logger[metadataKey: "fabric"] = "\(fabric)"
        return logger
    }
}
