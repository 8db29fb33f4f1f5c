import Sidecar

// The service's own state: liveness (`/health`), readiness (`/ready`) and the cameras (`/v1/cameras`). The control's
// structs are the bodies (the document's schemas of them are generated as those types).
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
}
