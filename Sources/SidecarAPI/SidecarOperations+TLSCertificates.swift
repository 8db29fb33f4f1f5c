import Foundation
import OpenAPIRuntime
import Sidecar

// TLS Certificate Management and TLS Client Management (`/v1/tls/attributes`, `/v1/tls/commands/…`): root
// certificates, client key pairs and their certificates, and the endpoints made from them. Bodies that carry more than
// one number are the control's own requests and answers (`typeOverrides` in Scripts/openapi-generator/config.yaml); a
// lone number is read as the document's integer and narrowed naming the field when it does not fit.
extension SidecarOperations {
    func readTLSCertificateAttributes(
        _ input: Operations.ReadTLSCertificateAttributes.Input
    ) async throws -> Operations.ReadTLSCertificateAttributes.Output {
        let attributes = try await refusal { try await control.tlsCertificateAttributes(fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(attributes)))
    }

    func provisionRootCertificate(
        _ input: Operations.ProvisionRootCertificate.Input
    ) async throws -> Operations.ProvisionRootCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let caid = try await refusal { try await control.provisionRootCertificate(body, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(.init(caid: Int(caid)))))
    }

    func removeRootCertificate(_ input: Operations.RemoveRootCertificate.Input) async throws -> Operations.RemoveRootCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let caid: UInt16 = try Self.integer(body.caid, "caid")
        try await refusal { try await control.removeRootCertificate(caid, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(.init())))
    }

    func findRootCertificate(_ input: Operations.FindRootCertificate.Input) async throws -> Operations.FindRootCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let caid: UInt16? = try body.caid.map { try Self.integer($0, "caid") }
        let found = try await refusal { try await control.findRootCertificates(caid, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(.init(certificateDetails: found))))
    }

    func lookupRootCertificate(_ input: Operations.LookupRootCertificate.Input) async throws -> Operations.LookupRootCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let caid = try await refusal {
            try await control.lookupRootCertificate(fingerprint: body.fingerprint, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init(caid: Int(caid)))))
    }

    func clientCSR(_ input: Operations.ClientCSR.Input) async throws -> Operations.ClientCSR.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let answer = try await refusal { try await control.clientCSR(body, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(answer)))
    }

    /// Takes the released form and the earlier draft's (the two certificate fields inside `clientCertificateDetails`);
    /// the released form's fields win when a body has both.
    func provisionClientCertificate(
        _ input: Operations.ProvisionClientCertificate.Input
    ) async throws -> Operations.ProvisionClientCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        guard let certificate = body.clientCertificate ?? body.clientCertificateDetails?.clientCertificate else {
            throw APIError.invalidCommand("clientCertificate: required field is missing")
        }
        let intermediates = body.clientCertificate != nil
            ? body.intermediateCertificates : body.clientCertificateDetails?.intermediateCertificates
        let request = ProvisionClientCertificateRequest(
            ccdid: try Self.integer(body.ccdid, "ccdid"), clientCertificate: certificate, intermediateCertificates: intermediates ?? [])
        try await refusal { try await control.provisionClientCertificate(request, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(.init())))
    }

    func findClientCertificate(_ input: Operations.FindClientCertificate.Input) async throws -> Operations.FindClientCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let ccdid: UInt16? = try body.ccdid.map { try Self.integer($0, "ccdid") }
        let found = try await refusal { try await control.findClientCertificates(ccdid, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(.init(certificateDetails: found))))
    }

    func lookupClientCertificate(_ input: Operations.LookupClientCertificate.Input) async throws -> Operations.LookupClientCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let ccdid = try await refusal {
            try await control.lookupClientCertificate(fingerprint: body.fingerprint, fabric: Self.fabric(input.headers.xFabricIndex))
        }
        return .ok(.init(body: .json(.init(ccdid: Int(ccdid)))))
    }

    func removeClientCertificate(_ input: Operations.RemoveClientCertificate.Input) async throws -> Operations.RemoveClientCertificate.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let ccdid: UInt16 = try Self.integer(body.ccdid, "ccdid")
        try await refusal { try await control.removeClientCertificate(ccdid, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(.init())))
    }

    func provisionEndpoint(_ input: Operations.ProvisionEndpoint.Input) async throws -> Operations.ProvisionEndpoint.Output {
        guard case .json(let body) = input.body else { throw APIError.invalidCommand("body: expected JSON") }
        let endpointID = try await refusal { try await control.provisionEndpoint(body, fabric: Self.fabric(input.headers.xFabricIndex)) }
        return .ok(.init(body: .json(.init(endpointID: Int(endpointID)))))
    }
}
