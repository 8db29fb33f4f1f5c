import Logging
import OpenAPIRuntime
import TransportModel

// The camera's event log (`/v1/cameras/{camera}/events`): Server-Sent Events that replay and follow it (the default,
// as an EventSource asks), or a page of it as JSON (`Accept: application/json`). The query and Last-Event-ID were
// checked with the API's messages before this runs (``APIConventionsMiddleware``).
extension SidecarOperations {
    func transportEvents(_ input: Operations.TransportEvents.Input) async throws -> Operations.TransportEvents.Output {
        let camera = input.path.camera
        let fabric = Self.fabric(input.headers.xFabricIndex)
        let transport = try control.transportServer(camera: camera)
        let query = EventLogQuery(
            since: input.query.since,
            lastEventID: input.headers.lastEventID.flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) },
            limit: input.query.limit, wantsJSON: input.headers.accept.contains { $0.contentType == .json })
        let events = TransportEventStream(
            transport: transport, fabric: fabric, logger: logger.with(camera: camera, fabric: fabric), keepAlive: eventKeepAlive)
        if query.wantsJSON {
            return .ok(.init(body: .json(try await events.page(after: query.after ?? 0, limit: query.limit))))
        }
        return .ok(.init(headers: .init(cacheControl: "no-store"), body: .textEventStream(try await events.body(after: query.after))))
    }
}
