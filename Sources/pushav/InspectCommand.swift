import ArgumentParser
import CMAF
import Foundation
import Ingest

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Check CMAF init and segment files with pushav's own box parser (not FFmpeg).",
        discussion: """
            Each .init file starts a track; the segment_*.m4s files in the same directory belong to it (in number \
            order). A directory is searched for tracks. Prints per track the RFC 6381 codec string, timescale and, \
            per segment, tfdt, duration, sample and chunk counts and whether the first sample is a sync sample and \
            which random access picture it is (idr, or cra/bla: valid without RASL pictures); then checks the CMAF conformance checklist (items 1–22: brands, one track, mvex/trex, empty \
            sample tables, tfhd/trun flags and data offsets, tfdt continuity, mfhd order, SAP 1/2 starts, prft, chunks, \
            segment durations). Exits 1 on any violation.

            Examples:
              pushav inspect out/session_1
              pushav inspect out/session_1/video/video.init \\
                  out/session_1/video/segment_*.m4s --segment-duration 4000
              pushav inspect out --json | jq '.violations'
            """
    )

    @Argument(help: "Init segments, media segments or directories.")
    var paths: [String]

    @Option(name: .long, help: "Expected segment duration in ms (checks item 20: all but the last segment last this long).")
    var segmentDuration: Int?

    @Option(name: .long, help: "Expected keyframe interval in ms (bounds how far past the target a segment may run).")
    var keyframeInterval: Int?

    @Flag(name: .long, help: "Segments are made of several chunks (moof + mdat each); otherwise one chunk per segment is expected.")
    var chunked = false

    @Flag(name: .long, help: "Print JSON: the per-track summary, the violations and ok.")
    var json = false

    @Flag(name: .long, help: "Print one line per track instead of the segment table.")
    var summary = false

    struct Output: Encodable {
        var ok: Bool
        var tracks: [InspectionSummary.Track]
        var violations: [Violation]
    }

    func run() throws {
        let tracks = try TrackFiles.collect(paths)
        guard !tracks.isEmpty else { throw CLIError("no .init file found in \(paths.joined(separator: " "))") }
        let checker = CMAFConformance(expectations: .init(
            segmentDuration: segmentDuration.map { Double($0) / 1000 }, chunks: chunked,
            keyFrameInterval: keyframeInterval.map { Double($0) / 1000 }))
        var output = Output(ok: true, tracks: [], violations: [])
        for track in tracks {
            let headerFile = try track.load(track.initPath)
            let segmentFiles = try track.segmentPaths.map { try track.load($0) }
            let violations = checker.check(header: headerFile, segments: segmentFiles)
            output.violations += violations
            // The summary needs parsed boxes; a file the checker could not parse is already a violation.
            if let header = try? CMAFHeader(bytes: headerFile.bytes, fileName: headerFile.name) {
                let segments = segmentFiles.compactMap { try? CMAFSegment(bytes: $0.bytes, fileName: $0.name, header: header) }
                output.tracks.append(InspectionSummary.Track(header: header, segments: segments))
            }
        }
        output.ok = !output.violations.contains { $0.severity == .error }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(output), as: UTF8.self))
        } else {
            if summary {
                for t in output.tracks { print(Self.line(t)) }
            } else {
                print(InspectionSummary(tracks: output.tracks).renderText())
            }
            for v in output.violations { print(v.description) }
            let errors = output.violations.filter { $0.severity == .error }.count
            print(errors == 0 ? "OK: \(output.tracks.count) track(s) conform" : "FAIL: \(errors) violation(s)")
        }
        if !output.ok { throw ExitCode(1) }
    }

    static func line(_ t: InspectionSummary.Track) -> String {
        let total = t.segments.map(\.durationSeconds).reduce(0, +)
        let idr = t.handler == "vide"
            ? (t.segments.allSatisfy { $0.firstSampleIsRandomAccessPoint == true }
                ? ", every segment starts with a random access point (IDR, or CRA/BLA without RASL)"
                : ", NOT every segment starts with a random access point")
            : ""
        return String(format: "%@: %@ %@, timescale %u, %d segment(s), %.3f s%@", t.initFile, t.handler ?? "?",
                      t.codec ?? "?", t.timescale ?? 0, t.segments.count, total, idr)
    }
}

/// One track's files on disk: its init segment and its media segments in number order.
struct TrackFiles {
    var initPath: String
    var segmentPaths: [String]

    func load(_ path: String) throws -> CMAFFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(path): \(UnreadableFile.reason(path))") }
        return CMAFFile(name: path, bytes: [UInt8](data))
    }

    /// Groups the given paths into tracks: explicit segments go with the init in their directory; a directory
    /// contributes every init below it with all the segments next to it.
    static func collect(_ paths: [String]) throws -> [TrackFiles] {
        var inits: [String] = []
        var segments: [String: [String]] = [:]  // directory -> explicit segment files
        var isDirectory: ObjCBool = false
        for path in paths {
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw CLIError("\(path): No such file or directory")
            }
            if isDirectory.boolValue {
                let found = try FileManager.default.subpathsOfDirectory(atPath: path).sorted()
                for sub in found where sub.hasSuffix(".init") {
                    let full = (path as NSString).appendingPathComponent(sub)
                    inits.append(full)
                    let dir = (full as NSString).deletingLastPathComponent
                    let siblings = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".m4s") }
                    segments[dir, default: []] += siblings.map { (dir as NSString).appendingPathComponent($0) }
                }
            } else if path.hasSuffix(".init") {
                inits.append(path)
            } else {
                segments[(path as NSString).deletingLastPathComponent, default: []].append(path)
            }
        }
        return inits.map { initPath in
            let dir = (initPath as NSString).deletingLastPathComponent
            let ordered = Set(segments[dir] ?? []).sorted { segmentNumber($0) < segmentNumber($1) }
            return TrackFiles(initPath: initPath, segmentPaths: ordered)
        }
    }

    static func segmentNumber(_ path: String) -> Int {
        let name = (path as NSString).lastPathComponent
        return Int(name.filter(\.isNumber)) ?? Int.max
    }
}
