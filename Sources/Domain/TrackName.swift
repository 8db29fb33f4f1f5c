/// A CMAF track's name: the directory and header name of every object the track uploads
/// (`session_<n>/<name>/<name>.init`, `session_<n>/<name>/segment_<NNNN>.m4s`).
///
/// Why a type of its own: the name is chosen once, by the transport's options (its stream names or CMAF TrackName),
/// and then travels through the recorder's layout and events, the spool's journal and lanes, the uploader's URLs and
/// the receiving ingest's checks. As a bare `String` it sat beside every other string of those layers (connection
/// IDs, paths, reasons) and two parallel properties (`videoTrackName`, `audioTrackName`) in three types. Whether a
/// name is acceptable for a transport is the cluster's rule (`TransportOptionsStruct.trackNames()`); this type holds
/// a name that has passed it, or one read back from what was written with one.
public struct TrackName: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible, Codable
{
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ name: some StringProtocol) { self.rawValue = String(name) }
    public init(stringLiteral value: String) { self.rawValue = value }

    /// The names a recording's tracks take when its transport names none.
    public static let defaultVideo: TrackName = "video"
    public static let defaultAudio: TrackName = "audio"

    public var description: String { rawValue }
    public var isEmpty: Bool { rawValue.isEmpty }

    public static func < (lhs: TrackName, rhs: TrackName) -> Bool { lhs.rawValue < rhs.rawValue }

    /// A bare string in JSON.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The track names of one recording: what its video and its audio are written and uploaded under.
public struct TrackNames: Sendable, Hashable {
    public var video: TrackName = .defaultVideo
    public var audio: TrackName = .defaultAudio

    public init(video: TrackName = .defaultVideo, audio: TrackName = .defaultAudio) {
        self.video = video
        self.audio = audio
    }

    /// The name of the track of `kind`.
    public subscript(kind: MediaKind) -> TrackName {
        switch kind {
        case .video: video
        case .audio: audio
        }
    }
}
