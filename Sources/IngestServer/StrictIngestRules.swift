import Domain
import Foundation
import Ingest

/// `pushav receive --strict`: the rules the CSA's Push AV test server applies in strict mode, so that our own suite
/// holds the uploader to what certification checks. Beyond the layout every upload already follows
/// (`session_<N>/<track>/<track>.init`, `…/segment_<NNNN>.m4s`, `session_<N>/index.mpd`):
///
/// - CMAF-Ingest (Interface-1) sessions have no manifest: an `index.mpd` is refused.
/// - DASH (Interface-2): the dynamic MPD opens the session, before any header or segment; each track's header comes
///   once, before its segments; the static MPD closes the session, after at least one segment; a dynamic MPD after
///   segments is refused.
///
/// A client certificate on every upload is the TLS layer's rule (`--client-ca` makes the handshake require one), which
/// is why strict mode cannot be combined with plain HTTP. Decided from what the root already holds, so a restart of
/// the receiver keeps applying the same rules.
public struct StrictIngestRules: Sendable, Hashable {
    /// Which interface the sessions use (the CSA server's stream `interface`).
    public enum Interface: String, Sendable, Hashable, CaseIterable {
        case cmafIngest = "cmaf-ingest"
        case dash
    }

    public var interface: Interface
    /// The track names each stream may use, by stream prefix (the path before `session_<N>`, e.g. `streams/1`; ""
    /// for the root): the CSA server's expected track name of a stream (`POST /streams/{id}/trackName`, which the
    /// TC-PAVSTI scripts set), as a set so a transport with video and audio can be expected whole. A stream without
    /// an entry takes any name.
    public var expectedTrackNames: [String: Set<TrackName>] = [:]

    public init(interface: Interface, expectedTrackNames: [String: Set<TrackName>] = [:]) {
        self.interface = interface
        self.expectedTrackNames = expectedTrackNames
    }

    /// Why `path` (with `body`) breaks the rules, given the files under `root`; nil when it does not.
    public func problem(_ path: IngestPath, body: [UInt8], root: URL) -> String? {
        if !path.object.isManifest, let expected = expectedTrackNames[path.prefix.joined(separator: "/")],
           !expected.contains(path.object.track) {
            // The CSA server's words, so a log reads the same from either.
            return "Track name mismatch: \(path.object.track) != \(expected.sorted().map(\.rawValue).joined(separator: " or ")), "
                + "must match TrackName provided in ContainerOptions"
        }
        return layoutProblem(path, body: body, root: root)
    }

    private func layoutProblem(_ path: IngestPath, body: [UInt8], root: URL) -> String? {
        let session = root.appendingPathComponent((path.prefix + ["session_\(path.object.session)"]).joined(separator: "/"))
        let manifest = session.appendingPathComponent("index.mpd")
        switch interface {
        case .cmafIngest:
            if path.object.isManifest { return "Unsupported manifest object extension: a CMAF-Ingest session has no index.mpd" }
            return nil
        case .dash:
            let hasSegments = Self.hasSegments(in: session)
            if path.object.isManifest {
                switch DASHManifestCheck.type(of: body) {
                case "dynamic" where hasSegments:
                    return "a dynamic MPD after the session's segments (it must open the session)"
                case "static" where !hasSegments:
                    return "a static MPD before any segment of the session (it closes the session)"
                default:
                    return nil
                }
            }
            guard FileManager.default.fileExists(atPath: manifest.path) else {
                return "\(path.object.isHeader ? "header" : "segment") before the session's dynamic MPD opened it"
            }
            if path.object.isHeader, FileManager.default.fileExists(atPath: root.appendingPathComponent(path.relativePath).path) {
                return "duplicate header \(path.relativePath): a track's header is uploaded once"
            }
            if !path.object.isHeader, !FileManager.default.fileExists(atPath: root.appendingPathComponent(path.headerPath).path) {
                return "segment before its track's header \(path.headerPath)"
            }
            return nil
        }
    }

    private static func hasSegments(in session: URL) -> Bool {
        let tracks = (try? FileManager.default.contentsOfDirectory(atPath: session.path)) ?? []
        return tracks.contains { track in
            let files = (try? FileManager.default.contentsOfDirectory(atPath: session.appendingPathComponent(track).path)) ?? []
            return files.contains { $0.hasPrefix("segment_") && $0.hasSuffix(".m4s") }
        }
    }
}
