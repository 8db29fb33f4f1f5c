import Foundation
import HTTPTypes
import Hummingbird
import NIOPosix
import Logging
import Prometheus
import Sidecar
import TransportModel

// TLS Certificate Management and TLS Client Management (the endpoints themselves are generated operations:
// SidecarOperations+TLSEndpoints).
extension SidecarEndpoints {
    var tlsRoutes: [Route] {
        [
            Route(signature: .init(method: .get, path: "/v1/tls/attributes")) { request, _ in
                let fabric = try RequestReading.fabric(of: request)
                return try JSONResponse.make(try await refusal { try await control.tlsCertificateAttributes(fabric: fabric) })
            },
        ] + tlsCommandRoutes
    }

    /// `POST /v1/tls/commands/{name}`: the TLS Certificate Management and TLS Client Management commands.
    var tlsCommandRoutes: [Route] {
        [
            tlsCommand("provisionRootCertificate") { request, fabric in
                let body = try await RequestReading.json(ProvisionRootCertificateRequest.self, from: request)
                let caid = try await refusal { try await control.provisionRootCertificate(body, fabric: fabric) }
                return try JSONResponse.make(ProvisionRootCertificateResponse(caid: caid))
            },
            tlsCommand("removeRootCertificate") { request, fabric in
                let body = try await RequestReading.json(RemoveRootCertificateRequest.self, from: request)
                try await refusal { try await control.removeRootCertificate(body.caid, fabric: fabric) }
                return try JSONResponse.make(EmptyResponse())
            },
            tlsCommand("findRootCertificate") { request, fabric in
                let body = try await RequestReading.json(FindRootCertificateRequest.self, from: request)
                let found = try await refusal { try await control.findRootCertificates(body.caid, fabric: fabric) }
                return try JSONResponse.make(FindRootCertificateResponse(certificateDetails: found))
            },
            tlsCommand("lookupRootCertificate") { request, fabric in
                let body = try await RequestReading.json(LookupCertificateRequest.self, from: request)
                let caid = try await refusal { try await control.lookupRootCertificate(fingerprint: body.fingerprint, fabric: fabric) }
                return try JSONResponse.make(LookupRootCertificateResponse(caid: caid))
            },
            tlsCommand("clientCSR") { request, fabric in
                let body = try await RequestReading.json(ClientCSRRequest.self, from: request)
                return try JSONResponse.make(try await refusal { try await control.clientCSR(body, fabric: fabric) })
            },
            tlsCommand("provisionClientCertificate") { request, fabric in
                let body = try await RequestReading.json(ProvisionClientCertificateRequest.self, from: request)
                try await refusal { try await control.provisionClientCertificate(body, fabric: fabric) }
                return try JSONResponse.make(EmptyResponse())
            },
            tlsCommand("findClientCertificate") { request, fabric in
                let body = try await RequestReading.json(FindClientCertificateRequest.self, from: request)
                let found = try await refusal { try await control.findClientCertificates(body.ccdid, fabric: fabric) }
                return try JSONResponse.make(FindClientCertificateResponse(certificateDetails: found))
            },
            tlsCommand("lookupClientCertificate") { request, fabric in
                let body = try await RequestReading.json(LookupCertificateRequest.self, from: request)
                let ccdid = try await refusal { try await control.lookupClientCertificate(fingerprint: body.fingerprint, fabric: fabric) }
                return try JSONResponse.make(LookupClientCertificateResponse(ccdid: ccdid))
            },
            tlsCommand("removeClientCertificate") { request, fabric in
                let body = try await RequestReading.json(RemoveClientCertificateRequest.self, from: request)
                try await refusal { try await control.removeClientCertificate(body.ccdid, fabric: fabric) }
                return try JSONResponse.make(EmptyResponse())
            },
            tlsCommand("provisionEndpoint") { request, fabric in
                let body = try await RequestReading.json(ProvisionEndpointRequest.self, from: request)
                let endpointID = try await refusal { try await control.provisionEndpoint(body, fabric: fabric) }
                return try JSONResponse.make(ProvisionEndpointResponse(endpointID: endpointID))
            },
        ]
    }

    func tlsCommand(
        _ name: String, _ run: @escaping @Sendable (Request, FabricIndex) async throws -> Response
    ) -> Route {
        Route(signature: .init(method: .post, path: "/v1/tls/commands/\(name)")) { request, _ in
            try await run(request, try RequestReading.fabric(of: request))
        }
    }
}
