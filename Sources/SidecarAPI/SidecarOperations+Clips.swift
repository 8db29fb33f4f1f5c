import Domain
import Foundation
import OpenAPIRuntime
import Sidecar

// A recent clip (`/v1/cameras/{camera}/clips/{connectionID}/{session}`), whole or a byte range of it (see
// ``ByteRanges``): the spool's files of its video track (header, then segments) served one after the other as one
// fragmented MP4, read from disk as they go out (``ConcatenatedFiles``). `Accept-Ranges`, a strong ETag (the parts'
// sizes: they are written once), 206 with `Content-Range`, 416 past the end; HEAD answers the same headers, no bytes.
extension SidecarOperations {
    func recentClip(_ input: Operations.RecentClip.Input) async throws -> Operations.RecentClip.Output {
        let found = try await clip(
            camera: input.path.camera, connectionID: input.path.connectionID, session: input.path.session,
            range: input.headers.range, ifRange: input.headers.ifRange)
        switch found.answer {
        case .whole:
            return .ok(.init(
                headers: .init(acceptRanges: .bytes, eTag: found.etag, contentLength: found.size, cacheControl: Self.clipCaching),
                body: .videoMp4(ConcatenatedFiles.body(found.parts, range: 0...(found.size - 1)))))
        case .part(let range):
            return .partialContent(.init(
                headers: .init(acceptRanges: .bytes, eTag: found.etag, contentLength: range.count,
                               contentRange: "bytes \(range.lowerBound)-\(range.upperBound)/\(found.size)", cacheControl: Self.clipCaching),
                body: .videoMp4(ConcatenatedFiles.body(found.parts, range: range))))
        case .unsatisfiable:
            return .rangeNotSatisfiable(.init(headers: .init(contentRange: "bytes */\(found.size)", acceptRanges: .bytes, eTag: found.etag)))
        }
    }

    /// A player asks the size before its ranges.
    func recentClipHead(_ input: Operations.RecentClipHead.Input) async throws -> Operations.RecentClipHead.Output {
        let found = try await clip(
            camera: input.path.camera, connectionID: input.path.connectionID, session: input.path.session,
            range: input.headers.range, ifRange: input.headers.ifRange)
        switch found.answer {
        case .whole:
            return .ok(.init(
                headers: .init(acceptRanges: .bytes, eTag: found.etag, contentLength: found.size, cacheControl: Self.clipCaching),
                body: .videoMp4(Self.headBody(length: found.size))))
        case .part(let range):
            return .partialContent(.init(
                headers: .init(acceptRanges: .bytes, eTag: found.etag, contentLength: range.count,
                               contentRange: "bytes \(range.lowerBound)-\(range.upperBound)/\(found.size)", cacheControl: Self.clipCaching),
                body: .videoMp4(Self.headBody(length: range.count))))
        case .unsatisfiable:
            return .rangeNotSatisfiable(.init(headers: .init(contentRange: "bytes */\(found.size)", acceptRanges: .bytes, eTag: found.etag)))
        }
    }

    /// A HEAD answer's body: no bytes, declared as long as the GET's (the runtime writes `Content-Length` from the
    /// body's declared length, over the header's).
    private static func headBody(length: Int) -> HTTPBody { HTTPBody([UInt8](), length: .known(Int64(length))) }

    /// A player may keep the clip but asks again before reusing it.
    private static var clipCaching: String { "private, no-cache" }

    /// The clip's files, its ETag and size, and what the request's range asks of it; 404 for a clip not kept.
    private func clip(
        camera: String, connectionID: Int, session: Int, range: String?, ifRange: String?
    ) async throws -> (parts: ClipParts, etag: String, size: Int, answer: ByteRanges.Answer) {
        let connection: UInt16 = try Self.integer(connectionID, "connectionID")
        let session = SessionNumber(try Self.integer(session, "session", as: UInt64.self))
        // Only integers name a clip, and its files come from the spool's own journal: no path from the request.
        guard let clip = await control.clip(camera: camera, connection: connection, session: session), clip.size > 0 else {
            throw APIError.notFound("session: camera \(camera) has no recent clip of connection \(connection) session \(session)")
        }
        let etag = "\"\(connection)-\(session)-\(clip.parts.count)-\(clip.size)\""
        return (clip, etag, clip.size, ByteRanges.answer(range: range, ifRange: ifRange, etag: etag, size: clip.size))
    }
}
