/// What kind of elementary stream a track carries: what the input's streams are, and the role of each track a session
/// writes (its muxer, its clip stream, its name in the upload layout, its line in the report). One type for both: the
/// recorder had a second enum of the same two cases for the role of a session's track.
public enum MediaKind: String, Sendable, Codable, CaseIterable {
    case video, audio
}
