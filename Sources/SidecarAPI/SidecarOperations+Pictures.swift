import Domain
import Foundation
import OpenAPIRuntime
import Sidecar

// Pictures (`image/jpeg`): a recording's thumbnail and the camera's latest snapshot, never sniffed as anything else.
extension SidecarOperations {
    func recentClipThumbnail(
        _ input: Operations.RecentClipThumbnail.Input
    ) async throws -> Operations.RecentClipThumbnail.Output {
        let camera = input.path.camera
        let connection: UInt16 = try Self.integer(input.path.connectionID, "connectionID")
        let session = SessionNumber(try Self.integer(input.path.session, "session", as: UInt64.self))
        guard let jpeg = await control.thumbnail(camera: camera, connection: connection, session: session) else {
            throw APIError.notFound("session: camera \(camera) has no thumbnail of connection \(connection) session \(session)")
        }
        // A recording's thumbnail never changes.
        return .ok(.init(
            headers: .init(cacheControl: "private, max-age=3600", xContentTypeOptions: "nosniff"),
            body: .jpeg(HTTPBody(jpeg))))
    }

    func cameraSnapshot(_ input: Operations.CameraSnapshot.Input) async throws -> Operations.CameraSnapshot.Output {
        let camera = input.path.camera
        guard let snapshot = await control.snapshot(camera: camera) else {
            throw APIError.notFound("camera: camera \(camera) has not analysed a picture yet")
        }
        return .ok(.init(
            headers: .init(lastModified: Self.httpDate(snapshot.taken), cacheControl: "no-store", xContentTypeOptions: "nosniff"),
            body: .jpeg(HTTPBody(snapshot.jpeg))))
    }

    /// `Last-Modified`'s form (RFC 9110 IMF-fixdate).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
