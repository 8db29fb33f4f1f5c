import CMAF
import Domain
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Ingest

/// The receiving side's rules, without HTTP: where an object goes, whether it is acceptable, and writing it
/// atomically. ``IngestServer`` maps the answers to responses.
public struct IngestStore: Sendable {
    public let root: URL
    /// Whether each object is checked with the CMAF conformance checker (400 with the reasons when it fails).
    public var validatesMedia: Bool
    /// The CSA test server's strict-mode rules (order, manifests per interface), 400 when broken; nil: not applied.
    public var strict: StrictIngestRules?

    /// An answer to one upload.
    public struct Answer: Sendable, Hashable {
        public var status: Int
        public var message: String
    }

    public init(root: URL, validatesMedia: Bool = true, strict: StrictIngestRules? = nil) {
        self.root = root.standardizedFileURL
        self.validatesMedia = validatesMedia
        self.strict = strict
    }

    /// Checks and stores one uploaded object: 400 for a bad path or invalid CMAF, 403 for traversal, 412 for a
    /// segment whose header was never received, 201 when created, 204 when replaced.
    public func accept(path rawPath: String, body: [UInt8]) -> Answer {
        let path: IngestPath
        do {
            path = try IngestPath.parse(rawPath)
        } catch .traversal(let why) {
            return Answer(status: 403, message: IngestPath.Rejection.traversal(why).description)
        } catch {
            return Answer(status: 400, message: error.description)
        }
        let destination = root.appendingPathComponent(path.relativePath)
        // Defence in depth: the parser allows no `..`, but the resolved path must still lie under the root.
        guard destination.standardizedFileURL.path.hasPrefix(root.path + "/") else {
            return Answer(status: 403, message: "path traversal refused")
        }
        // Strict first: the CSA server answers an object out of order with 400 whatever its content.
        if let strict, let problem = strict.problem(path, body: body, root: root) {
            return Answer(status: 400, message: "strict (\(strict.interface.rawValue)): \(problem)")
        }
        if validatesMedia, let problem = validate(body, path: path) {
            return problem
        }
        if !path.object.isHeader && !path.object.isManifest {
            let header = root.appendingPathComponent(path.headerPath)
            if !FileManager.default.fileExists(atPath: header.path) {
                return Answer(status: 412, message: "no CMAF header \(path.headerPath) received before \(path.relativePath)")
            }
        }
        let existed = FileManager.default.fileExists(atPath: destination.path)
        do {
            try AtomicFile.write(body, to: destination)
        } catch {
            return Answer(status: 500, message: "could not store \(path.relativePath): \(error)")
        }
        return Answer(status: existed ? 204 : 201, message: "stored \(path.relativePath) (\(body.count) bytes)")
    }

    private func validate(_ body: [UInt8], path: IngestPath) -> Answer? {
        let name = (path.relativePath as NSString).lastPathComponent
        if path.object.isManifest {
            return DASHManifestCheck.problem(in: body).map { Answer(status: 400, message: "invalid DASH manifest: \($0)") }
        }
        if path.object.isHeader {
            let header: CMAFHeader
            do {
                header = try CMAFHeader(bytes: body, fileName: name)
            } catch {
                return Answer(status: 400, message: "invalid CMAF header: \(error)")
            }
            let errors = CMAFConformance().check(header: header, segments: []).filter { $0.severity == .error }
            return errors.isEmpty ? nil : Answer(status: 400, message: "invalid CMAF header: " + errors.map(\.description).joined(separator: "; "))
        }
        let headerURL = root.appendingPathComponent(path.headerPath)
        guard let headerBytes = try? Data(contentsOf: headerURL),
              let header = try? CMAFHeader(bytes: Array(headerBytes), fileName: headerURL.lastPathComponent)
        else {
            return Answer(status: 412, message: "no CMAF header \(path.headerPath) received before \(path.relativePath)")
        }
        let segment: CMAFSegment
        do {
            segment = try CMAFSegment(bytes: body, fileName: name, header: header)
        } catch {
            return Answer(status: 400, message: "invalid CMAF segment: \(error)")
        }
        let checker = CMAFConformance(expectations: .init(chunks: segment.chunkCount > 1))
        let errors = checker.check(header: header, segments: [segment]).filter { $0.severity == .error }
        return errors.isEmpty ? nil : Answer(status: 400, message: "invalid CMAF segment: " + errors.map(\.description).joined(separator: "; "))
    }

    // MARK: - Listing

    /// One received session: its tracks and what arrived of each.
    public struct Session: Codable, Sendable, Hashable {
        public struct Track: Codable, Sendable, Hashable {
            public var name: String
            public var hasHeader: Bool
            public var segments: [Int]
            public var bytes: Int
        }

        /// Path below the root, e.g. `session_3` or `ingest/cam1/session_3`.
        public var path: String
        public var session: SessionNumber
        public var tracks: [Track]
    }

    /// Sessions under the root (publishing-point prefixes up to four levels deep), newest first.
    public func sessions() -> [Session] {
        var found: [Session] = []
        collectSessions(in: root, relative: [], depth: 0, into: &found)
        return found.sorted { ($0.session, $0.path) > ($1.session, $1.path) }
    }

    private func collectSessions(in directory: URL, relative: [String], depth: Int, into found: inout [Session]) {
        let fm = FileManager.default
        guard depth <= 4, let names = try? fm.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names.sorted() where !name.hasPrefix(".") {
            let url = directory.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            if let number = SessionNumber(folderName: name) {
                let tracks = ((try? fm.contentsOfDirectory(atPath: url.path)) ?? []).sorted().compactMap { track -> Session.Track? in
                    guard !track.hasPrefix("."), let files = try? fm.contentsOfDirectory(atPath: url.appendingPathComponent(track).path)
                    else { return nil }
                    var bytes = 0
                    var numbers: [Int] = []
                    for file in files where !file.hasPrefix(".") {
                        let fileURL = url.appendingPathComponent(track).appendingPathComponent(file)
                        bytes += ((try? fm.attributesOfItem(atPath: fileURL.path)[.size]) as? Int) ?? 0
                        if let parsed = try? IngestPath.parse("\(name)/\(track)/\(file)"), !parsed.object.isHeader {
                            numbers.append(parsed.object.number)
                        }
                    }
                    return Session.Track(name: track, hasHeader: files.contains("\(track).init"), segments: numbers.sorted(), bytes: bytes)
                }
                found.append(Session(path: (relative + [name]).joined(separator: "/"), session: number, tracks: tracks))
            } else {
                collectSessions(in: url, relative: relative + [name], depth: depth + 1, into: &found)
            }
        }
    }

    /// A track of a session as one fragmented MP4 (header + segments in order) for the `<video>` player.
    public func playableTrack(sessionPath: String, track: String) -> [UInt8]? {
        guard let parsed = try? IngestPath.parse("\(sessionPath)/\(track)/\(track).init") else { return nil }
        let directory = root.appendingPathComponent(parsed.relativePath).deletingLastPathComponent()
        guard let header = try? Data(contentsOf: directory.appendingPathComponent("\(track).init")) else { return nil }
        var bytes = Array(header)
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .compactMap { file in (try? IngestPath.parse("\(sessionPath)/\(track)/\(file)")).map { ($0.object.number, file) } }
            .filter { $0.0 > 0 }
            .sorted { $0.0 < $1.0 }
        for (_, file) in files {
            if let data = try? Data(contentsOf: directory.appendingPathComponent(file)) { bytes += data }
        }
        return bytes
    }
}

/// Temp file in the destination directory, fsync, rename: readers see the old object or the new one, never a part.
enum AtomicFile {
    static func write(_ bytes: [UInt8], to url: URL) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString.prefix(8)).part")
        let handle = try FileHandle(forWritingTo: {
            FileManager.default.createFile(atPath: temporary.path, contents: nil)
            return temporary
        }())
        do {
            try handle.write(contentsOf: bytes)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, url.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }
}

/// What a receiver checks of an uploaded `index.mpd`: well-formed XML whose root is a DASH `MPD` of type `dynamic` or
/// `static`.
enum DASHManifestCheck {
    private final class Root: NSObject, XMLParserDelegate {
        var name: String?
        var attributes: [String: String] = [:]
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String]) {
            if self.name == nil { (self.name, self.attributes) = (name, attributes) }
        }
    }

    /// The MPD's `type` attribute ("dynamic", "static"), nil when the body is no MPD.
    static func type(of body: [UInt8]) -> String? {
        guard case .success(let root) = parse(body), root.name == "MPD" else { return nil }
        return root.attributes["type"]
    }

    static func problem(in body: [UInt8]) -> String? {
        let root: Root
        switch parse(body) {
        case .success(let parsed): root = parsed
        case .failure(let reason): return reason.description
        }
        guard root.name == "MPD" else { return "the root element is \(root.name ?? "missing"), not MPD" }
        guard let type = root.attributes["type"], ["dynamic", "static"].contains(type) else {
            return "MPD@type must be dynamic or static"
        }
        return nil
    }

    private struct NotXML: Error, CustomStringConvertible { var description: String }

    /// The document's root element, or why the body is not well-formed XML.
    private static func parse(_ body: [UInt8]) -> Result<Root, NotXML> {
        let parser = XMLParser(data: Data(body))
        let root = Root()
        parser.delegate = root
        guard parser.parse() else {
            return .failure(NotXML(description: "not well-formed XML (\(parser.parserError.map { "\($0)" } ?? "?"))"))
        }
        return .success(root)
    }
}
