import Domain
import Foundation

extension TransportOptionsStruct {
    /// The track names of this transport, checked the way the cluster checks them — 1…16 bytes
    /// (CONSTRAINT_ERROR), audio and video different (InvalidStream) — and, because a name becomes one segment of a
    /// file path and of the PUT URL, refused when it could leave that segment: `/`, control characters, `.` or `..`
    /// (CONSTRAINT_ERROR). Anything else, spaces included (the certification tests allocate TrackName " "), is
    /// written as it is and percent-encoded in URLs.
    ///
    /// The rule (each track's name is the path segment `session_<N>/<name>/…` of every object it uploads):
    /// - Streams named by the controller (`videoStreams` / `audioStreams`, Matter 1.5.1): each track is its stream's
    ///   name ("VideoStreamName … becomes the CMAF track name").
    /// - Streams named by ID only (`videoStreamID` / `audioStreamID`, Matter 1.5, how the TC-PAVSTI scripts
    ///   allocate): the video track is the CMAF `TrackName` when it is not blank (1.5: "the CMAF track name"), else
    ///   `video`; the audio track is `audio`. Allocation stores these as the connection's stream names.
    /// Why audio does not take `TrackName` too: two CMAF tracks under one name would share one directory — their
    /// headers and numbered segments collide, and a DASH ingest (the CSA test server's included) takes one header per
    /// track name. A server that expects the single `TrackName` for every path of a stream (the CSA server's
    /// `track_name`, which TC-PAVSTI-1.2 sets to "media" while allocating video *and* audio) therefore cannot accept
    /// the audio of such a transport under any name; it accepts the video. Matter 1.5.1 replaced `TrackName` with
    /// per-stream names for this reason.
    public func trackNames() throws(TransportCommandError) -> TrackNames {
        let cmaf = containerOptions.cmafContainerOptions
        let named = cmaf?.trackName.flatMap(Self.nameOrBlank)
        let video = videoStreams?.first?.videoStreamName ?? named ?? "video"
        let audio = audioStreams?.first?.audioStreamName ?? "audio"
        let videoField = videoStreams?.first != nil ? "videoStreams.videoStreamName"
            : named != nil ? "containerOptions.cmafContainerOptions.trackName" : "video track"
        try Self.checkTrackName(video, field: videoField)
        try Self.checkTrackName(audio, field: "audioStreams.audioStreamName")
        guard video != audio else {
            throw .cluster(.invalidStream, "\(videoField): audio and video tracks are both named \"\(video)\"")
        }
        return TrackNames(video: TrackName(video), audio: TrackName(audio))
    }

    /// A CMAF TrackName of spaces only is no name (the certification scripts' default " "): nil. Anything else, the
    /// empty string included (refused by the length check), is taken as given.
    static func nameOrBlank(_ trackName: String) -> String? {
        !trackName.isEmpty && trackName.allSatisfy({ $0 == " " }) ? nil : trackName
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
