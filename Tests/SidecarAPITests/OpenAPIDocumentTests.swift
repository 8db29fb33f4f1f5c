import Foundation
import SidecarAPI
import Testing

@Suite struct OpenAPIDocumentTests {
    @Test func documentIsOpenAPI31() throws {
        let document = try JSONSerialization.jsonObject(with: try SidecarAPI.openAPIDocument) as? [String: Any]
        #expect(document?["openapi"] as? String == "3.1.0")
    }
}
