import Foundation

/// The CMAF track names a transport's recordings are written and uploaded under
/// (`session_<N>/<track>/<track>.init`, `…/segment_<NNNN>.m4s`).
public struct TransportTrackNames: Sendable, Hashable {
    public var video: String
    public var audio: String

    public init(video: String = "video", audio: String = "audio") {
        self.video = video
        self.audio = audio
    }
}

extension TransportOptionsStruct {
    /// The track names of this transport (the upload rule: the VideoStreams / AudioStreams name, else the CMAF
    /// `trackName` for video, else `video` / `audio`), checked the way the cluster checks them — 1…16 bytes
    /// (CONSTRAINT_ERROR), audio and video different (InvalidStream) — and, because a name becomes one segment of a
    /// file path and of the PUT URL, refused when it could leave that segment: `/`, control characters, `.` or `..`
    /// (CONSTRAINT_ERROR). Anything else, spaces included (the certification tests allocate TrackName " "), is
    /// written as it is and percent-encoded in URLs.
    public func trackNames() throws(TransportCommandError) -> TransportTrackNames {
        let cmaf = containerOptions.cmafContainerOptions
        let video = videoStreams?.first?.videoStreamName ?? cmaf?.trackName ?? "video"
        let audio = audioStreams?.first?.audioStreamName ?? "audio"
        let videoField = videoStreams?.first != nil ? "videoStreams.videoStreamName"
            : cmaf?.trackName != nil ? "containerOptions.cmafContainerOptions.trackName" : "video track"
        try Self.checkTrackName(video, field: videoField)
        try Self.checkTrackName(audio, field: "audioStreams.audioStreamName")
        guard video != audio else {
            throw .cluster(.invalidStream, "\(videoField): audio and video tracks are both named \"\(video)\"")
        }
        return TransportTrackNames(video: video, audio: audio)
    }

    static func checkTrackName(_ name: String, field: String) throws(TransportCommandError) {
        guard (1...16).contains(name.utf8.count) else {
            throw .im(.constraintError, "\(field): length must be 1…16 bytes, got \(name.utf8.count)")
        }
        guard name != ".", name != ".." else {
            throw .im(.constraintError, "\(field): \"\(name)\" cannot name a track directory")
        }
        if let bad = name.unicodeScalars.first(where: { $0 == "/" || $0.value < 0x20 || $0.value == 0x7F }) {
            throw .im(.constraintError, "\(field): must not contain \(bad == "/" ? "\"/\"" : String(format: "U+%04X", bad.value))")
        }
    }
}

/// A track name as one percent-encoded URL path segment (RFC 3986 pchar, so `/`, `?` and `#` can never appear raw).
public func percentEncodedPathSegment(_ segment: String) -> String {
    var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(0x7F)))
    allowed.insert(charactersIn: "-._~!$&'()*+,;=:@")
    return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
}
