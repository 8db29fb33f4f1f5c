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
        let answer = try await clip(
            camera: input.path.camera, connectionID: input.path.connectionID, session: input.path.session,
            range: input.headers.range, ifRange: input.headers.ifRange) { parts, range in ConcatenatedFiles.body(parts, range: range) }
        switch answer {
        case .whole(let whole): return .ok(whole)
        case .part(let part): return .partialContent(part)
        case .unsatisfiable(let refusal): return .rangeNotSatisfiable(refusal)
        }
    }

    /// A player asks the size before its ranges. The same answer as the GET's, with a body of no bytes declared as
    /// long as the GET's (the runtime writes `Content-Length` from the body's declared length, over the header's).
    func recentClipHead(_ input: Operations.RecentClipHead.Input) async throws -> Operations.RecentClipHead.Output {
        let answer = try await clip(
            camera: input.path.camera, connectionID: input.path.connectionID, session: input.path.session,
            range: input.headers.range, ifRange: input.headers.ifRange) { _, range in HTTPBody([UInt8](), length: .known(Int64(range.count))) }
        switch answer {
        case .whole(let whole): return .ok(whole)
        case .part(let part): return .partialContent(part)
        case .unsatisfiable(let refusal): return .rangeNotSatisfiable(refusal)
        }
    }

    /// The document's three answers about a clip, which GET and HEAD share.
    private enum ClipAnswer {
        case whole(Components.Responses.ClipWhole)
        case part(Components.Responses.ClipPart)
        case unsatisfiable(Components.Responses.ClipRangeNotSatisfiable)
    }

    /// A player may keep the clip but asks again before reusing it.
    private static var clipCaching: String { "private, no-cache" }

    /// The answer about a clip: its headers (ETag, size, `Content-Range`) and, as `body` makes it, the bytes of the
    /// asked range; 404 for a clip not kept.
    private func clip(
        camera: String, connectionID: Int, session: Int, range: String?, ifRange: String?,
        body: (ClipParts, ClosedRange<Int>) -> HTTPBody
    ) async throws -> ClipAnswer {
        let connection: UInt16 = try Self.integer(connectionID, "connectionID")
        let session = SessionNumber(try Self.integer(session, "session", as: UInt64.self))
        // Only integers name a clip, and its files come from the spool's own journal: no path from the request.
        guard let clip = await control.clip(camera: camera, connection: connection, session: session), clip.size > 0 else {
            throw APIError.notFound("session: camera \(camera) has no recent clip of connection \(connection) session \(session)")
        }
        let etag = "\"\(connection)-\(session)-\(clip.parts.count)-\(clip.size)\""
        switch ByteRanges.answer(range: range, ifRange: ifRange, etag: etag, size: clip.size) {
        case .whole:
            return .whole(.init(
                headers: .init(acceptRanges: .bytes, eTag: etag, contentLength: clip.size, cacheControl: Self.clipCaching),
                body: .videoMp4(body(clip, 0...(clip.size - 1)))))
        case .part(let range):
            return .part(.init(
                headers: .init(acceptRanges: .bytes, eTag: etag, contentLength: range.count,
                               contentRange: "bytes \(range.lowerBound)-\(range.upperBound)/\(clip.size)", cacheControl: Self.clipCaching),
                body: .videoMp4(body(clip, range))))
        case .unsatisfiable:
            return .unsatisfiable(.init(headers: .init(contentRange: "bytes */\(clip.size)", acceptRanges: .bytes, eTag: etag)))
        }
    }
}
