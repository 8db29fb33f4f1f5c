import OpenAPIRuntime
import Sidecar

// TLS endpoints: the material uploads connect with, per fabric (`/v1/tls/endpoints`).
extension SidecarOperations {
    func addTLSEndpoint(_ input: Operations.AddTLSEndpoint.Input) async throws -> Operations.AddTLSEndpoint.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let endpointID = try await refusal { try await control.addTLSEndpoint(body, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .created(.init(
            headers: .init(location: "/v1/tls/endpoints/\(endpointID)"),
            body: .json(.init(endpointID: Int(endpointID)))))
    }

    func listTLSEndpoints(_ input: Operations.ListTLSEndpoints.Input) async throws -> Operations.ListTLSEndpoints.Output {
        let endpoints = await control.tlsEndpoints(fabric: Self.fabric(input.headers.xFabricIndex))
        return .ok(.init(body: .json(.init(endpoints: endpoints))))
    }

    func getTLSEndpoint(_ input: Operations.GetTLSEndpoint.Input) async throws -> Operations.GetTLSEndpoint.Output {
        let endpointID: UInt16 = try Self.integer(input.path.endpointID, "endpointID")
        let endpoints = await control.tlsEndpoints(fabric: Self.fabric(input.headers.xFabricIndex))
        guard let endpoint = endpoints.first(where: { $0.endpointID == endpointID }) else {
            throw APIError.notFound("endpointID: no TLS endpoint \(endpointID) in this fabric")
        }
        return .ok(.init(body: .json(endpoint)))
    }

    func removeTLSEndpoint(_ input: Operations.RemoveTLSEndpoint.Input) async throws -> Operations.RemoveTLSEndpoint.Output {
        let endpointID: UInt16 = try Self.integer(input.path.endpointID, "endpointID")
        try await refusal { try await control.removeTLSEndpoint(endpointID, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .noContent(.init())
    }
}
