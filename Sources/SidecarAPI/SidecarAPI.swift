import Foundation
import Hummingbird
import Sidecar

/// `pushav serve`'s HTTP API over a ``SidecarControl``.
public enum SidecarAPI {
    /// The OpenAPI 3.1 document that describes the API (served at `/openapi.json`).
    public static var openAPIDocument: Data {
        get throws { try Data(contentsOf: Bundle.module.url(forResource: "openapi", withExtension: "json")!) }
    }

    /// `GET /`: the status page (plain HTML and JavaScript, no external resources).
    public static var statusPage: Data {
        get throws { try Data(contentsOf: Bundle.module.url(forResource: "page", withExtension: "html")!) }
    }
}
