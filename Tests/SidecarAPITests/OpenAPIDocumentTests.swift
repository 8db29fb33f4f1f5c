import Crypto
import Foundation
import HummingbirdTesting
import Logging
@testable import SidecarAPI
import Testing

@Suite struct OpenAPIDocumentTests {
    private func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try SidecarAPI.openAPIDocument) as? [String: Any])
    }

    @Test func documentIsOpenAPI31() throws {
        #expect(try document()["openapi"] as? String == "3.1.0")
    }

    /// Every route the router has is in the document with its method, and the document has nothing the router lacks.
    @Test func routesAndDocumentedPathsAreTheSame() throws {
        let router = try SidecarRouter.router(control: try TestSidecar(), logger: Logger(label: "openapi-test"))
        let routed = Set(router.routes.map { "\($0.method.rawValue) \($0.path)" })
        let paths = try #require(try document()["paths"] as? [String: [String: Any]])
        let methods = ["get", "put", "post", "delete", "patch", "head", "options"]
        let documented = Set(paths.flatMap { path, item in
            item.keys.filter(methods.contains).map { "\($0.uppercased()) \(path)" }
        })
        #expect(routed.count == 49)
        #expect(routed.subtracting(documented).isEmpty, "routes missing from openapi.json: \(routed.subtracting(documented).sorted())")
        #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed).sorted())")
    }

    /// The generated types and server code (`Sources/SidecarAPI/Generated`) were made from the document as it is now:
    /// an edit of `openapi.json` without `Scripts/generate-api` fails here, not as a silent drift between the two.
    @Test func generatedCodeIsFromThisDocument() throws {
        let digest = SHA256.hash(data: try SidecarAPI.openAPIDocument).map { String(format: "%02x", $0) }.joined()
        #expect(digest == generatedFromDocumentSHA256, "openapi.json changed since Scripts/generate-api last ran")
    }

    /// Every operation with a request body has its body type in `RequestBodyTypes`, so a number out of its field's
    /// range is named on each of them (without an entry the answer would only say the body is not valid JSON).
    @Test func everyRequestBodyCanBeProbedForItsField() throws {
        let paths = try #require(try document()["paths"] as? [String: [String: Any]])
        var withBodies: [String] = []
        for (_, item) in paths {
            for (_, operation) in item {
                guard let operation = operation as? [String: Any], operation["requestBody"] != nil,
                      let id = operation["operationId"] as? String else { continue }
                withBodies.append(id)
            }
        }
        #expect(withBodies.count >= 27)
        for id in withBodies.sorted() { #expect(RequestBodyTypes.decoders[id] != nil, "\(id) is not in RequestBodyTypes") }
    }

    /// Every `$ref` points at a component that exists.
    @Test func referencesResolve() throws {
        let text = String(decoding: try SidecarAPI.openAPIDocument, as: UTF8.self)
        let components = try #require(try document()["components"] as? [String: [String: Any]])
        let regex = try NSRegularExpression(pattern: ##""\$ref": "#/components/(\w+)/(\w+)""##)
        let matches = regex.matches(in: text, range: NSRange(text.startIndex..., in: text))
        #expect(!matches.isEmpty)
        for match in matches {
            let kind = String(text[Range(match.range(at: 1), in: text)!])
            let name = String(text[Range(match.range(at: 2), in: text)!])
            #expect(components[kind]?[name] != nil, "unresolved $ref \(kind)/\(name)")
        }
    }

    @Test func documentIsServed() async throws {
        try await withAPI { _, client in
            let response = try await client.call(.get, "/openapi.json")
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json")
            #expect(Data(buffer: response.body) == (try SidecarAPI.openAPIDocument))
        }
    }

    /// The bearer token is declared, and every operation documents the 401 it answers without it.
    @Test func everyOperationDocumentsTheTokenRefusal() throws {
        let document = try document()
        let schemes = try #require((document["components"] as? [String: Any])?["securitySchemes"] as? [String: [String: Any]])
        #expect(schemes["bearerToken"]?["scheme"] as? String == "bearer")
        #expect(schemes["mutualTLS"]?["type"] as? String == "mutualTLS")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var operations = 0
        for (path, item) in paths {
            for (method, operation) in item where method != "parameters" {
                let responses = (operation as? [String: Any])?["responses"] as? [String: Any]
                #expect(responses?["401"] != nil, "\(method) \(path) does not document 401")
                operations += 1
            }
        }
        #expect(operations == 49)
    }
}
