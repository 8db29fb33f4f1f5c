import Foundation

/// The DASH Media Presentation Description of one CMAF session, as Matter's Interface-2 uploads it next to the
/// tracks (`session_<N>/index.mpd`): one Period, one AdaptationSet per track, and a `SegmentTemplate` whose templates
/// give exactly the upload paths, relative to the MPD (`<track>/<track>.init`, `<track>/segment_$Number$.m4s` from
/// 1001).
///
/// A **dynamic** MPD announces a session before its first header is uploaded: the segments are not known yet, so the
/// template carries the nominal segment duration. The **static** MPD, uploaded after the last segment, lists every
/// segment's real start and duration in a `SegmentTimeline`.
public struct DASHManifest: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `availabilityStartTime`: when the session's first picture was captured.
        case dynamic(availabilityStart: Date)
        case `static`
    }

    public struct Track: Sendable, Equatable {
        public enum ContentType: String, Sendable { case video, audio }

        /// The CMAF track name: its folder and file names in the upload layout.
        public var name: String
        public var contentType: ContentType
        /// RFC 6381 codecs parameter, read back from the track's header.
        public var codecs: String
        public var timescale: UInt32
        /// Bits per second (the header's `btrt` average, or measured from the segments).
        public var bandwidth: Int
        public var width: Int?
        public var height: Int?
        public var sampleRate: Int?
        public var channels: Int?
        /// Each segment's decode start (`tfdt`) and duration, in `timescale` units, in order.
        public var segments: [Segment] = []
        /// The CENC default key ID of an encrypted track (a `ContentProtection` element names it).
        public var defaultKID: [UInt8]?

        public init(
            name: String, contentType: ContentType, codecs: String, timescale: UInt32, bandwidth: Int,
            width: Int? = nil, height: Int? = nil, sampleRate: Int? = nil, channels: Int? = nil,
            segments: [Segment] = [], defaultKID: [UInt8]? = nil
        ) {
            self.name = name
            self.contentType = contentType
            self.codecs = codecs
            self.timescale = timescale
            self.bandwidth = bandwidth
            self.width = width
            self.height = height
            self.sampleRate = sampleRate
            self.channels = channels
            self.segments = segments
            self.defaultKID = defaultKID
        }

        public struct Segment: Sendable, Equatable {
            public var start: UInt64
            public var duration: UInt64

            public init(start: UInt64, duration: UInt64) {
                self.start = start
                self.duration = duration
            }
        }

        /// Seconds from the track's first segment start to its last segment end.
        var duration: Double {
            guard let first = segments.first, let last = segments.last, timescale > 0 else { return 0 }
            return Double(last.start + last.duration - first.start) / Double(timescale)
        }
    }

    public static let contentType = "application/dash+xml"
    public static let fileName = "index.mpd"
    /// Segment numbers start here (the Matter upload layout).
    public static let firstSegmentNumber = 1001

    public var kind: Kind
    public var tracks: [Track]
    /// The session's nominal segment duration (Matter SegmentDuration).
    public var segmentDuration: Double

    public init(kind: Kind, tracks: [Track], segmentDuration: Double) {
        self.kind = kind
        self.tracks = tracks
        self.segmentDuration = segmentDuration
    }

    /// The MPD document (UTF-8 XML).
    public var xml: String {
        var lines = [#"<?xml version="1.0" encoding="UTF-8"?>"#]
        var mpd = [
            #"xmlns="urn:mpeg:dash:schema:mpd:2011""#,
            #"xmlns:cenc="urn:mpeg:cenc:2013""#,
            #"profiles="urn:mpeg:dash:profile:isoff-live:2011,urn:mpeg:dash:profile:cmaf:2019""#,
            "minBufferTime=\"\(Self.duration(segmentDuration))\"",
        ]
        switch kind {
        case .dynamic(let start):
            mpd.insert(#"type="dynamic""#, at: 2)
            mpd += ["availabilityStartTime=\"\(Self.dateTime(start))\"", "publishTime=\"\(Self.dateTime(start))\"",
                    "minimumUpdatePeriod=\"\(Self.duration(segmentDuration))\""]
        case .static:
            mpd.insert(#"type="static""#, at: 2)
            mpd.append("mediaPresentationDuration=\"\(Self.duration(tracks.map(\.duration).max() ?? 0))\"")
        }
        lines.append("<MPD " + mpd.joined(separator: " ") + ">")
        lines.append(#"  <Period id="0" start="PT0S">"#)
        for (index, track) in tracks.enumerated() {
            let mime = "\(track.contentType.rawValue)/mp4"
            lines.append("    <AdaptationSet id=\"\(index)\" contentType=\"\(track.contentType.rawValue)\" mimeType=\"\(mime)\" "
                + #"segmentAlignment="true" startWithSAP="1">"#)
            if let kid = track.defaultKID, kid.count == 16 {
                let hex = kid.map { String(format: "%02x", $0) }.joined()
                let uuid = [0 ..< 8, 8 ..< 12, 12 ..< 16, 16 ..< 20, 20 ..< 32].map { range in
                    String(hex[hex.index(hex.startIndex, offsetBy: range.lowerBound) ..< hex.index(hex.startIndex, offsetBy: range.upperBound)])
                }.joined(separator: "-")
                lines.append(#"      <ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc" "#
                    + "cenc:default_KID=\"\(uuid)\"/>")
            }
            var representation = ["id=\"\(Self.escaped(track.name))\"", "codecs=\"\(Self.escaped(track.codecs))\"",
                                  "bandwidth=\"\(max(track.bandwidth, 1))\""]
            if let width = track.width, let height = track.height { representation += ["width=\"\(width)\"", "height=\"\(height)\""] }
            if let rate = track.sampleRate { representation.append("audioSamplingRate=\"\(rate)\"") }
            lines.append("      <Representation " + representation.joined(separator: " ") + ">")
            if let channels = track.channels {
                lines.append(#"        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" "#
                    + "value=\"\(channels)\"/>")
            }
            let folder = Self.pathSegment(track.name)
            var template = ["timescale=\"\(track.timescale)\"", "initialization=\"\(folder)/\(folder).init\"",
                            "media=\"\(folder)/segment_$Number$.m4s\"", "startNumber=\"\(Self.firstSegmentNumber)\""]
            let timeline = Self.timeline(track.segments)
            if case .dynamic = kind {
                template.append("duration=\"\(UInt64((segmentDuration * Double(track.timescale)).rounded()))\"")
            }
            if case .static = kind, !timeline.isEmpty {
                lines.append("        <SegmentTemplate " + template.joined(separator: " ") + ">")
                lines.append("          <SegmentTimeline>")
                lines += timeline.map { "            " + $0 }
                lines.append("          </SegmentTimeline>")
                lines.append("        </SegmentTemplate>")
            } else {
                lines.append("        <SegmentTemplate " + template.joined(separator: " ") + "/>")
            }
            lines.append("      </Representation>")
            lines.append("    </AdaptationSet>")
        }
        lines.append("  </Period>")
        lines.append("</MPD>")
        return lines.joined(separator: "\n") + "\n"
    }

    /// `<S>` elements: the first with its start `t`, runs of equal durations folded with `r`, and a new `t` wherever a
    /// segment does not start where the previous one ended.
    static func timeline(_ segments: [Track.Segment]) -> [String] {
        var lines: [String] = []
        var index = 0
        var expectedStart: UInt64?
        while index < segments.count {
            let segment = segments[index]
            var repeats = 0
            while index + repeats + 1 < segments.count,
                  segments[index + repeats + 1].duration == segment.duration,
                  segments[index + repeats + 1].start == segments[index + repeats].start + segment.duration {
                repeats += 1
            }
            var attributes: [String] = []
            if expectedStart != segment.start { attributes.append("t=\"\(segment.start)\"") }
            attributes.append("d=\"\(segment.duration)\"")
            if repeats > 0 { attributes.append("r=\"\(repeats)\"") }
            lines.append("<S " + attributes.joined(separator: " ") + "/>")
            expectedStart = segment.start + segment.duration * UInt64(repeats + 1)
            index += repeats + 1
        }
        return lines
    }

    /// An xs:duration in seconds with millisecond precision, e.g. `PT4.000S`.
    static func duration(_ seconds: Double) -> String { String(format: "PT%.3fS", max(0, seconds)) }

    static func dateTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// A track name as one URL path segment (it may hold a space), then escaped for an XML attribute.
    static func pathSegment(_ name: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/$%")
        return escaped(name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name)
    }
}

extension DASHManifest.Track {
    /// A track as its CMAF header describes it (codecs, timescale, picture size or sample rate, key ID), with its
    /// segments (`tfdt` and duration each) and the bandwidth measured over their `byteCount` bytes
    /// (`fallbackBandwidth` when there are none yet).
    public init(name: String, header: CMAFHeader, segments: [Segment] = [], byteCount: Int = 0,
                fallbackBandwidth: Int = 1) throws {
        guard let codecs = header.codecString else {
            throw CMAFError.malformed(type: header.sampleEntry?.type ?? "moov", offset: 0,
                                      reason: "\(header.fileName): no codecs parameter can be derived from the sample entry")
        }
        guard let timescale = header.mediaTimescale, timescale > 0 else {
            throw CMAFError.malformed(type: "mdhd", offset: 0, reason: "\(header.fileName): no media timescale")
        }
        let ticks = segments.reduce(UInt64(0)) { $0 + $1.duration }
        let bandwidth = ticks > 0 ? Int((Double(byteCount) * 8 * Double(timescale) / Double(ticks)).rounded(.up)) : fallbackBandwidth
        let entry = header.sampleEntry
        self.init(name: name, contentType: header.isAudio ? .audio : .video, codecs: codecs, timescale: timescale,
                  bandwidth: bandwidth, width: header.isAudio ? nil : entry?.width.map(Int.init),
                  height: header.isAudio ? nil : entry?.height.map(Int.init),
                  sampleRate: header.isAudio ? entry?.sampleRate.map(Int.init) : nil,
                  channels: header.isAudio ? entry?.configuration?.audioChannelCount ?? entry?.channelCount.map(Int.init) : nil,
                  segments: segments)
        defaultKID = entry?.protection?.keyID
    }
}
