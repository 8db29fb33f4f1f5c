import Sidecar
import TransportModel

// Finding a request's camera: shared by the generated operations and the hand-written routes.
extension SidecarControl {
    /// The camera's Push AV Stream Transport server; 404 naming the configured cameras otherwise.
    func transportServer(camera: String) throws(APIError) -> PushAVStreamTransportServer {
        guard let transport = transport(camera: camera) else { throw unknownCamera(camera) }
        return transport
    }

    func unknownCamera(_ cameraID: String) -> APIError {
        APIError.notFound("camera: no camera \"\(cameraID)\" (cameras: \(cameraIDs.joined(separator: ", ")))")
    }
}
