import OpenAPIRuntime
import Sidecar

// The service's own state: liveness (`/health`), readiness (`/ready`), the cameras (`/v1/cameras`), the metrics
// (`/metrics`) and the page (`/`). The control's structs are the bodies (the document's schemas of them are generated
// as those types).
extension SidecarOperations {
    func health(_ input: Operations.Health.Input) async throws -> Operations.Health.Output {
        .ok(.init(body: .json(await control.health())))
    }

    /// Not ready answers 503 (what a load balancer or an orchestrator's readiness probe expects), with the same body:
    /// which store or camera source is the reason.
    func ready(_ input: Operations.Ready.Input) async throws -> Operations.Ready.Output {
        let readiness = await control.readiness()
        return readiness.ready ? .ok(.init(body: .json(readiness))) : .serviceUnavailable(.init(body: .json(readiness)))
    }

    func listCameras(_ input: Operations.ListCameras.Input) async throws -> Operations.ListCameras.Output {
        .ok(.init(body: .json(.init(cameras: await control.cameraStatuses()))))
    }

    /// The Prometheus text exposition format (0.0.4), the camera gauges refreshed first.
    func metrics(_ input: Operations.Metrics.Input) async throws -> Operations.Metrics.Output {
        await control.refreshGauges()
        return .ok(.init(body: .textPlainCharsetUtf8Version_0_0_4(HTTPBody(metrics.emitToBuffer()))))
    }

    /// The status page, with the headers that keep it to itself: its own scripts and styles only, never framed, no
    /// referrer, never sniffed.
    func statusPage(_ input: Operations.StatusPage.Input) async throws -> Operations.StatusPage.Output {
        .ok(.init(
            headers: .init(
                contentSecurityPolicy: try SidecarAPI.statusPageHeaderPolicy, xContentTypeOptions: "nosniff",
                referrerPolicy: "no-referrer", xFrameOptions: "DENY"),
            body: .textHtmlCharsetUtf8(HTTPBody(try SidecarAPI.statusPage))))
    }
}
