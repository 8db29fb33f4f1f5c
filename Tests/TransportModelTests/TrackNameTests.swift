import Domain
import Foundation
import Testing
import TransportModel

/// Track names resolve per the upload rule and are refused when they could not be one path segment.
@Suite("Track names")
struct TrackNameTests {
    enum Expected: Sendable {
        case names(TrackNames)
        case refused(TransportStatus)
    }

    /// (case, trackName, video stream name, audio stream name, expected names or the failing status)
    static let cases: [(String, String?, String?, String?, Expected)] = [
        ("defaults", nil, nil, nil, .names(.init(video: "video", audio: "audio"))),
        ("trackName names video", "media", nil, nil, .names(.init(video: "media", audio: "audio"))),
        ("stream names win over trackName", "media", "front", "mic", .names(.init(video: "front", audio: "mic"))),
        ("spaces are no name (certification allocates \" \")", " ", nil, nil, .names(.init(video: "video", audio: "audio"))),
        ("a name with a space", "front door", nil, nil, .names(.init(video: "front door", audio: "audio"))),
        ("16 bytes", "abcdefghijklmnop", nil, nil, .names(.init(video: "abcdefghijklmnop", audio: "audio"))),
        ("17 bytes", "abcdefghijklmnopq", nil, nil, .refused(.constraintError)),
        ("empty", "", nil, nil, .refused(.constraintError)),
        ("slash", "a/b", nil, nil, .refused(.constraintError)),
        ("dot", ".", nil, nil, .refused(.constraintError)),
        ("dot dot", nil, "..", nil, .refused(.constraintError)),
        ("NUL", nil, "a\u{0}", nil, .refused(.constraintError)),
        ("DEL", nil, nil, "a\u{7F}", .refused(.constraintError)),
        ("audio and video alike", nil, "same", "same", .refused(.cluster(.invalidStream))),
        ("trackName equal to the default audio name", "audio", nil, nil, .refused(.cluster(.invalidStream))),
    ]

    @Test(arguments: cases.map { $0.0 })
    func resolvedOrRefused(name: String) {
        let (_, trackName, video, audio, expected) = Self.cases.first { $0.0 == name }!
        var options = continuousOptions()
        options.containerOptions.cmafContainerOptions?.trackName = trackName
        options.videoStreams = video.map { [VideoStreamStruct(videoStreamName: $0, videoStreamID: videoStreamID)] }
        options.audioStreams = audio.map { [AudioStreamStruct(audioStreamName: $0, audioStreamID: audioStreamID)] }
        do {
            let names = try options.trackNames()
            guard case .names(let want) = expected else { Issue.record("got \(names), expected \(expected)"); return }
            #expect(names == want)
        } catch {
            guard case .refused(let want) = expected else { Issue.record("got \(error), expected \(expected)"); return }
            #expect(error.status == want, "\(error)")
        }
    }
}

/// Allocation stores the names the rule gives (CurrentConnections shows them in VideoStreams / AudioStreams).
@Suite("Track names at allocation")
struct AllocatedTrackNameTests {
    @Test(arguments: [("media", "media"), (" ", "video"), (nil, "video")] as [(String?, String)])
    func legacyStreamsTakeTheTrackNameForVideo(trackName: String?, video: String) async throws {
        let server = try makeServer()
        var options = continuousOptions()
        options.containerOptions.cmafContainerOptions?.trackName = trackName
        let allocated = try await server.allocatePushTransport(options, fabric: fabric1)
        let stored = try #require(allocated.transportOptions)
        #expect(stored.videoStreams?.map(\.videoStreamName) == [video])
        #expect(stored.audioStreams?.map(\.audioStreamName) == ["audio"])
        #expect(try stored.trackNames() == TrackNames(video: TrackName(video), audio: "audio"))
    }

    @Test func namedStreamsKeepTheirNames() async throws {
        let server = try makeServer()
        var options = continuousOptions()
        (options.videoStreamID, options.audioStreamID) = (nil, nil)
        options.videoStreams = [VideoStreamStruct(videoStreamName: "front", videoStreamID: videoStreamID)]
        options.audioStreams = [AudioStreamStruct(audioStreamName: "mic", audioStreamID: audioStreamID)]
        let stored = try #require(try await server.allocatePushTransport(options, fabric: fabric1).transportOptions)
        #expect(try stored.trackNames() == TrackNames(video: "front", audio: "mic"))
    }
}
