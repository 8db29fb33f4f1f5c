import Domain
import Foundation

/// Where one session's files live. The layout on disk is the upload layout (Matter Push AV / DASH-IF Interface-1):
/// `session_<N>/<track>/<track>.init` and `session_<N>/<track>/segment_<1001+k>.m4s`, plus `clips/session_<N>.mp4`.
public struct SessionLayout: Sendable, Equatable {
    public let root: URL
    public let session: SessionNumber
    public let trackNames: TrackNames

    public init(root: URL, session: SessionNumber, trackNames: TrackNames = TrackNames()) {
        self.root = root
        self.session = session
        self.trackNames = trackNames
    }

    public func trackName(_ kind: MediaKind) -> TrackName { trackNames[kind] }

    /// Path of the session directory relative to the root: `session_<N>`.
    public var sessionPath: String { "session_\(session)" }
    public func initPath(_ kind: MediaKind) -> String { "\(sessionPath)/\(trackName(kind))/\(trackName(kind)).init" }
    /// `number` is the segment's 1-based index within the session; files are numbered from 1001 (at least 4 digits).
    public func segmentPath(_ kind: MediaKind, number: Int) -> String {
        "\(sessionPath)/\(trackName(kind))/segment_\(1000 + number).m4s"
    }
    public var clipPath: String { "clips/session_\(session).mp4" }
    /// The session's DASH manifest (CMAF Interface-2).
    public var manifestPath: String { "\(sessionPath)/index.mpd" }
    public func url(_ relative: String) -> URL { root.appendingPathComponent(relative) }

    /// The highest session number already in `root` (`session_<N>/` or `clips/session_<N>.mp4`), 0 if none.
    /// A new recording into the same folder continues after it, so it never mixes its files with an earlier run's
    /// and session numbers only ever increase.
    public static func highestSession(in root: URL) -> SessionNumber {
        let fm = FileManager.default
        let names = ((try? fm.contentsOfDirectory(atPath: root.path)) ?? [])
            + ((try? fm.contentsOfDirectory(atPath: root.appendingPathComponent("clips").path)) ?? [])
                .filter { $0.hasSuffix(".mp4") }.map { String($0.dropLast(4)) }
        return names.compactMap(SessionNumber.init(folderName:)).max() ?? 0
    }
}
