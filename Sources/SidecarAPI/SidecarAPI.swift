import Crypto
import Foundation
import Hummingbird
import Ingest
import Sidecar

/// `pushav serve`'s HTTP API over a ``SidecarControl``.
public enum SidecarAPI {
    /// The OpenAPI 3.1 document that describes the API (served at `/openapi.json`). Read once (a file read is blocking
    /// work: ``loadResources()`` does it off the cooperative pool at start).
    public static var openAPIDocument: Data {
        get throws { try resources.get().openAPI }
    }

    /// `GET /`: the status page (plain HTML and JavaScript, no external resources). Read once, like the document.
    public static var statusPage: Data {
        get throws { try resources.get().page }
    }

    /// The status page's policy, computed once with the page.
    public static var statusPageHeaderPolicy: String {
        get throws { try resources.get().policy }
    }

    private static let resources = Result { () throws -> (openAPI: Data, page: Data, policy: String) in
        let page = try Data(contentsOf: Bundle.module.url(forResource: "page", withExtension: "html")!)
        return (try Data(contentsOf: Bundle.module.url(forResource: "openapi", withExtension: "json")!), page, statusPagePolicy(page))
    }

    /// Reads the bundled document and page on a blocking-I/O thread, so no request ever waits on the disk for them.
    public static func loadResources() async throws {
        _ = try await BlockingIO.run { try resources.get() }
    }

    /// The status page's Content-Security-Policy: only its own inline script runs (allowed by its SHA-256, not by
    /// `'unsafe-inline'`, so an injected script would not), it talks to its own origin only, and no other site may
    /// frame it. Inline styles stay allowed (the page sets colours in `style` attributes; they cannot run code).
    public static func statusPagePolicy(_ page: Data) -> String {
        let html = String(decoding: page, as: UTF8.self)
        let scripts = html.components(separatedBy: "<script>").dropFirst().compactMap { $0.components(separatedBy: "</script>").first }
        let hashes = scripts.map { "'sha256-\(Data(SHA256.hash(data: Data($0.utf8))).base64EncodedString())'" }
        return "default-src 'self'; script-src \(hashes.joined(separator: " ")); style-src 'self' 'unsafe-inline'; "
            + "img-src 'self' data:; media-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    }
}
