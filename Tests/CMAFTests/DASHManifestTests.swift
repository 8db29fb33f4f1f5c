import CMAF
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing

@Suite struct DASHManifestTests {
    typealias S = DASHManifest.Track.Segment

    /// (segments, the `<S>` elements): equal durations back to back fold into `r`; a gap or an overlap restarts `t`.
    static let timelines: [(String, [S], [String])] = [
        ("none", [], []),
        ("one", [S(start: 0, duration: 60)], [#"<S t="0" d="60"/>"#]),
        ("a run", [S(start: 0, duration: 60), S(start: 60, duration: 60), S(start: 120, duration: 60)], [#"<S t="0" d="60" r="2"/>"#]),
        ("run, then a shorter last", [S(start: 0, duration: 60), S(start: 60, duration: 60), S(start: 120, duration: 17)],
         [#"<S t="0" d="60" r="1"/>"#, #"<S d="17"/>"#]),
        ("late start (audio after video)", [S(start: 1024, duration: 96256), S(start: 97280, duration: 96256)],
         [#"<S t="1024" d="96256" r="1"/>"#]),
        ("a gap restarts t", [S(start: 0, duration: 60), S(start: 90, duration: 60)], [#"<S t="0" d="60"/>"#, #"<S t="90" d="60"/>"#]),
        ("alternating", [S(start: 0, duration: 61), S(start: 61, duration: 59), S(start: 120, duration: 61)],
         [#"<S t="0" d="61"/>"#, #"<S d="59"/>"#, #"<S d="61"/>"#]),
    ]

    @Test(arguments: timelines.indices)
    func segmentTimeline(_ index: Int) {
        let (name, segments, expected) = Self.timelines[index]
        let track = DASHManifest.Track(name: "video", contentType: .video, codecs: "avc1.4d401f", timescale: 30,
                                       bandwidth: 1000, segments: segments)
        let lines = DASHManifest(kind: .static, tracks: [track], segmentDuration: 2).xml.split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("<S ") }
        #expect(lines == expected, "\(name)")
    }

    /// Elements and attributes of a document, by element name (the last of each name).
    final class Collector: NSObject, XMLParserDelegate {
        var elements: [String: [String: String]] = [:]
        var order: [String] = []
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String]) {
            elements[name] = attributes
            order.append(name)
        }
    }

    static func parse(_ xml: String) throws -> Collector {
        let parser = XMLParser(data: Data(xml.utf8))
        let collector = Collector()
        parser.delegate = collector
        try #require(parser.parse(), "not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "")\n\(xml)")
        return collector
    }

    static let tracks = [
        DASHManifest.Track(name: "main cam", contentType: .video, codecs: "avc1.4d401f", timescale: 15360, bandwidth: 2_000_000,
                           width: 1280, height: 720, segments: [S(start: 0, duration: 61440), S(start: 61440, duration: 30720)]),
        DASHManifest.Track(name: "audio", contentType: .audio, codecs: "mp4a.40.2", timescale: 48000, bandwidth: 64000,
                           sampleRate: 48000, channels: 1, segments: [S(start: 0, duration: 192512), S(start: 192512, duration: 95232)]),
    ]

    @Test func staticManifestListsEverySegmentUnderTheUploadPaths() throws {
        let xml = DASHManifest(kind: .static, tracks: Self.tracks, segmentDuration: 4).xml
        let document = try Self.parse(xml)
        let mpd = try #require(document.elements["MPD"])
        #expect(mpd["type"] == "static" && mpd["xmlns"] == "urn:mpeg:dash:schema:mpd:2011")
        #expect(mpd["mediaPresentationDuration"] == "PT6.000S", "\(mpd)")  // the longer track: 92160 / 15360
        #expect(document.order.filter { $0 == "AdaptationSet" }.count == 2 && document.order.filter { $0 == "S" }.count == 4)
        #expect(xml.contains(#"initialization="main%20cam/main%20cam.init" media="main%20cam/segment_$Number$.m4s" startNumber="1001""#), "\(xml)")
        #expect(xml.contains(#"codecs="avc1.4d401f" bandwidth="2000000" width="1280" height="720""#))
        #expect(xml.contains(#"audioSamplingRate="48000""#) && xml.contains(#"value="1"/>"#))
        #expect(!xml.contains("duration=\"61440\""))  // a timeline, not a nominal duration
    }

    @Test func encryptedTrackNamesItsKeyID() throws {
        var tracks = Self.tracks
        tracks[0].defaultKID = Array(1 ... 16)
        let xml = DASHManifest(kind: .static, tracks: tracks, segmentDuration: 4).xml
        let document = try Self.parse(xml)
        #expect(document.order.filter { $0 == "ContentProtection" }.count == 1)
        #expect(xml.contains(#"<ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc" cenc:default_KID="01020304-0506-0708-090a-0b0c0d0e0f10"/>"#), "\(xml)")
    }

    @Test func dynamicManifestAnnouncesTheSessionWithItsNominalSegmentDuration() throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000.25)
        let empty = Self.tracks.map { var t = $0; t.segments = []; return t }
        let xml = DASHManifest(kind: .dynamic(availabilityStart: start), tracks: empty, segmentDuration: 4).xml
        let document = try Self.parse(xml)
        let mpd = try #require(document.elements["MPD"])
        #expect(mpd["type"] == "dynamic" && mpd["availabilityStartTime"] == "2026-11-18T11:06:40.250Z", "\(mpd)")
        #expect(mpd["minimumUpdatePeriod"] == "PT4.000S" && mpd["mediaPresentationDuration"] == nil)
        #expect(!document.order.contains("SegmentTimeline"))
        #expect(xml.contains(#"timescale="15360" initialization="main%20cam/main%20cam.init""#)
                && xml.contains(#"duration="61440"/>"#) && xml.contains(#"duration="192000"/>"#), "\(xml)")
    }
}

/// The MPD's AudioChannelConfiguration comes from the decoder configuration, not the sample entry's channelcount
/// (FFmpeg's mov muxer writes 2 there for mono AAC; every header here says 2).
@Suite struct DASHAudioChannelTests {
    @Test(arguments: [
        (ConfigBox.esds(audioSpecificConfig: [0x11, 0x88]), "mp4a", 1),  // AAC-LC 48 kHz, channelConfiguration 1
        (ConfigBox.esds(audioSpecificConfig: [0x11, 0x90]), "mp4a", 2),
        (ConfigBox.esds(audioSpecificConfig: [0x11, 0xB8]), "mp4a", 8),  // 7 = 7.1
        (ConfigBox.esds(audioSpecificConfig: [0x11, 0x80]), "mp4a", 2),  // 0: a PCE decides; the entry's count stands
        (ConfigBox.dOps(channels: 1), "Opus", 1),
    ])
    func channelsFromTheDecoderConfiguration(configBox: [UInt8], entry: String, channels: Int) throws {
        let header = try headerWith(entry: entry, configBox: configBox, handler: "soun")
        #expect(header.sampleEntry?.channelCount == 2)
        let track = try DASHManifest.Track(name: "audio", header: header)
        #expect(track.channels == channels)
    }
}
