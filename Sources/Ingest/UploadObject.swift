import Domain
import Foundation

/// One object of the Matter Push AV upload layout: a track's CMAF header or one of its numbered segments.
public struct UploadObject: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// CMAF segments are numbered from 1001 per track and session (reference "Segments").
    public static let firstSegmentNumber = 1001

    public var session: SessionNumber
    public var track: TrackName
    /// 0 for the CMAF header (`<track>.init`), else the segment number (1001, 1002, …).
    public var number: Int

    public init(session: SessionNumber, track: TrackName, number: Int) {
        self.session = session
        self.track = track
        self.number = number
    }

    public static func header(session: SessionNumber, track: TrackName) -> UploadObject {
        UploadObject(session: session, track: track, number: 0)
    }

    /// The lane of a session's DASH manifests (CMAF Interface-2): no track name is empty.
    public static let manifestTrack: TrackName = ""

    /// `session_<N>/index.mpd`: the dynamic manifest (uploaded before the session's first header) or the static one
    /// (after its last segment). Both go to the same path; the spool keeps them apart.
    public static func manifest(session: SessionNumber, isFinal: Bool) -> UploadObject {
        UploadObject(session: session, track: manifestTrack, number: isFinal ? 1 : 0)
    }

    public var isManifest: Bool { track == Self.manifestTrack }
    /// The static manifest, uploaded after the session's last segment.
    public var isFinalManifest: Bool { isManifest && number == 1 }
    public var isHeader: Bool { number == 0 && !isManifest }

    /// `session_<N>/<track>/<track>.init`, `session_<N>/<track>/segment_<NNNN>.m4s` or `session_<N>/index.mpd`,
    /// relative to the URL.
    public var relativePath: String {
        if isManifest { return "session_\(session)/index.mpd" }
        let file = isHeader ? "\(track).init" : "segment_\(Self.padded(number)).m4s"
        return "session_\(session)/\(track)/\(file)"
    }

    /// Where the spool keeps the bytes (relative): ``relativePath``, except that the two manifests of a session,
    /// both pending while the endpoint is down, need two files.
    public var spoolPath: String {
        isManifest ? "session_\(session)/index-\(isFinalManifest ? "static" : "dynamic").mpd" : relativePath
    }

    /// The object a spool file stands for, from its ``spoolPath`` (nil for anything else: a temporary file, a
    /// directory, a name no object has). Why: the file, not its journal row, is the spool's durable record — a row
    /// lost with the last commits before a power failure is rebuilt from its file's name.
    public init?(spoolPath: String) {
        let components = spoolPath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard components.count >= 2, let session = SessionNumber(folderName: components[0]),
              let file = components.last, !file.hasPrefix(".") else { return nil }
        if components.count == 2 {
            guard file == "index-dynamic.mpd" || file == "index-static.mpd" else { return nil }
            self = .manifest(session: session, isFinal: file == "index-static.mpd")
            return
        }
        let object: UploadObject
        if file.hasPrefix("segment_"), file.hasSuffix(".m4s") {
            let digits = file.dropFirst(8).dropLast(4)
            guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let number = Int(digits), number > 0 else { return nil }
            object = UploadObject(session: session, track: TrackName(components[1..<(components.count - 1)].joined(separator: "/")),
                                  number: number)
        } else {
            // `<track>/<track>.init`: the track is the first half (a track name may hold a `/`).
            let rest = Array(components.dropFirst().joined(separator: "/").utf8)
            guard rest.count > 7, (rest.count - 6) % 2 == 0 else { return nil }
            object = .header(session: session, track: TrackName(String(decoding: rest.prefix((rest.count - 6) / 2), as: UTF8.self)))
        }
        guard !object.track.isEmpty else { return nil }
        // Exactly the name this object is kept under (a header's file is named after its track).
        guard object.spoolPath == spoolPath else { return nil }
        self = object
    }

    /// The one file name the spool keeps this object under, in its label's single directory: ``spoolPath`` with `%`
    /// and `/` percent-encoded (`session_3%2Fvideo%2Fsegment_1001.m4s`). Why flat: a directory per session and
    /// track is made and removed with every recording, and each mkdir/rmdir dirties an inode, a bitmap and a
    /// directory block that the journal writes again — on a camera's flash that was most of what a short event clip
    /// cost beyond its own bytes. One long-lived directory per label costs a directory entry per object.
    public var spoolFileName: String {
        spoolPath.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "/", with: "%2F")
    }

    /// The object a flat spool file stands for (see ``spoolFileName``); nil for any other name.
    public init?(spoolFileName: String) {
        guard !spoolFileName.contains("/"), !spoolFileName.hasPrefix("."),
              let path = spoolFileName.replacingOccurrences(of: "%2F", with: "/").removingPercentEncoding,
              let object = UploadObject(spoolPath: path), object.spoolFileName == spoolFileName
        else { return nil }
        self = object
    }

    /// ``relativePath`` as it goes into the PUT URL: the track name percent-encoded (it may hold a space).
    public var urlPath: String {
        if isManifest { return relativePath }
        let file = isHeader ? "\(percentEncodedPathSegment(track.rawValue)).init" : "segment_\(Self.padded(number)).m4s"
        return "session_\(session)/\(percentEncodedPathSegment(track.rawValue))/\(file)"
    }

    public var contentType: String {
        isManifest ? "application/dash+xml" : isHeader ? "video/mp4" : "video/iso.segment"
    }

    /// Upload order within one track: by session, the header before its segments, segments by number.
    public static func < (a: UploadObject, b: UploadObject) -> Bool {
        (a.session, a.number) < (b.session, b.number)
    }

    /// The object that must be delivered right before this one on its track, if it belongs to the same session.
    public var predecessor: UploadObject? {
        if isHeader || isManifest { return nil }
        return number == Self.firstSegmentNumber
            ? .header(session: session, track: track)
            : UploadObject(session: session, track: track, number: number - 1)
    }

    public var description: String { isManifest ? relativePath + (isFinalManifest ? " (static)" : " (dynamic)") : relativePath }

    static func padded(_ number: Int) -> String {
        let digits = String(number)
        return digits.count >= 4 ? digits : String(repeating: "0", count: 4 - digits.count) + digits
    }
}

/// A request path an ingest endpoint received, checked against the Matter layout
/// `[prefix/]session_<N>/<track>/(<track>.init|segment_<NNNN>.m4s)`.
public struct IngestPath: Hashable, Sendable {
    /// Directories before `session_<N>` (a publishing point such as `ingest/camera-1`), possibly empty.
    public var prefix: [String]
    public var object: UploadObject

    /// Why a path is refused.
    public enum Rejection: Error, Hashable, Sendable, CustomStringConvertible {
        case traversal(String)
        case layout(String)

        public var description: String {
            switch self {
            case .traversal(let why): "path traversal refused: \(why)"
            case .layout(let why): "path does not follow session_<N>/<track>/(<track>.init|segment_<NNNN>.m4s) or session_<N>/index.mpd: \(why)"
            }
        }
    }

    /// Parses a URL path (leading `/` optional). Percent escapes, `.`/`..` components, empty components and
    /// characters outside `[A-Za-z0-9._-]` are refused before anything touches the file system.
    public static func parse(_ rawPath: String) throws(Rejection) -> IngestPath {
        var path = Substring(rawPath)
        if path.hasPrefix("/") { path = path.dropFirst() }
        if path.contains("%") { throw .traversal("percent-encoded characters are not accepted") }
        if path.contains("\\") || path.contains("\0") { throw .traversal("backslash or NUL in path") }
        let components = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for component in components {
            if component == "." || component == ".." { throw .traversal("'\(component)' component") }
            if component.isEmpty { throw .layout("empty path component") }
            if component.hasPrefix(".") { throw .traversal("hidden component '\(component)'") }
            guard component.utf8.allSatisfy(isSafeByte) else { throw .layout("unsupported character in '\(component)'") }
        }
        if components.count >= 2, components[components.count - 1] == "index.mpd",
           let session = sessionNumber(components[components.count - 2]) {
            // A DASH manifest (Interface-2); whether dynamic or static is in its body.
            return IngestPath(prefix: Array(components.dropLast(2)), object: .manifest(session: session, isFinal: false))
        }
        guard components.count >= 3 else { throw .layout("needs at least session_<N>/<track>/<file>") }
        let file = components[components.count - 1]
        let track = components[components.count - 2]
        let sessionName = components[components.count - 3]
        guard let session = sessionNumber(sessionName) else { throw .layout("'\(sessionName)' is not session_<N>") }
        guard (1...64).contains(track.count) else { throw .layout("track name length") }
        let number: Int
        if file == "\(track).init" {
            number = 0
        } else if file.hasPrefix("segment_"), file.hasSuffix(".m4s") {
            let digits = file.dropFirst(8).dropLast(4)
            guard digits.count >= 4, digits.allSatisfy(\.isASCIIDigit), let value = Int(digits), value > 0 else {
                throw .layout("'\(file)' is not segment_<NNNN>.m4s")
            }
            number = value
        } else {
            throw .layout("'\(file)' is neither \(track).init nor segment_<NNNN>.m4s")
        }
        return IngestPath(prefix: Array(components.dropLast(3)),
                          object: UploadObject(session: session, track: TrackName(track), number: number))
    }

    /// The path relative to the receiver's root.
    public var relativePath: String { (prefix + [object.relativePath]).joined(separator: "/") }

    /// The header this object needs before it can be accepted.
    public var headerPath: String {
        (prefix + [UploadObject.header(session: object.session, track: object.track).relativePath]).joined(separator: "/")
    }

    private static func sessionNumber(_ name: String) -> SessionNumber? { SessionNumber(folderName: name) }

    private static func isSafeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

/// A track name as one percent-encoded URL path segment (RFC 3986 pchar, so `/`, `?` and `#` can never appear raw).
public func percentEncodedPathSegment(_ segment: String) -> String {
    var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(0x7F)))
    allowed.insert(charactersIn: "-._~!$&'()*+,;=:@")
    return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
}
