import CMAF
import Foundation
import Ingest

extension ClipParts {
    /// The largest `moof` read for a plan: a fragment's sample table is a few KiB; anything larger is not a fragment
    /// this recorder wrote, and the clip is refused instead of read into memory.
    static let largestFragmentHeader = 4 << 20

    /// The parts of the one fragmented MP4 the page plays for `tracks` (see `PlayableClip`): reads each header whole
    /// and only the `moof` boxes of the segments (a few KiB a segment), never their media. Blocking: call it on
    /// `BlockingIO`.
    /// - Throws: when a file cannot be read or is not the CMAF the spool's journal says it is.
    init(playing tracks: RecentTracks) throws {
        func track(_ files: [RecentFile]) throws -> PlayableClip.Track {
            guard let header = files.first else { throw CMAFError.malformed(type: "moov", offset: 0, reason: "no header") }
            let headerBytes = try [UInt8](Data(contentsOf: header.file))
            return PlayableClip.Track(header: headerBytes, segments: try files.dropFirst().map(Self.fragmentHeaders))
        }
        let video = try track(tracks.video)
        let audio = try tracks.audio.map(track)
        let plan = try PlayableClip(video: video, audio: audio)
        let files = [tracks.video.dropFirst().map(\.file), (tracks.audio ?? []).dropFirst().map(\.file)]
        let parts = plan.pieces.map { piece -> Part in
            switch piece {
            case .bytes(let bytes):
                return Part(made: bytes)
            case .file(let reference, let patches):
                let segment = (reference.track == 0 ? video : audio!).segments[reference.segment]
                return Part(file: files[reference.track][reference.segment], bytes: segment.size,
                            patches: patches.map { Patch(offset: $0.offset, bytes: $0.bytes) })
            }
        }
        self.init(parts: parts, hasAudio: audio != nil)
    }

    /// A segment file's size and its `moof` boxes, found by walking its top-level box headers.
    static func fragmentHeaders(_ file: RecentFile) throws -> PlayableClip.SegmentFile {
        let handle = try FileHandle(forReadingFrom: file.file)
        defer { try? handle.close() }
        var moofs: [(offset: Int, bytes: [UInt8])] = []
        var offset = 0
        while offset + 8 <= file.bytes {
            try handle.seek(toOffset: UInt64(offset))
            let head = [UInt8](try handle.read(upToCount: 16) ?? Data())
            guard head.count >= 8 else { break }
            var size = head[0 ..< 4].reduce(0) { $0 << 8 | Int($1) }
            let type = FourCC(rawValue: head[4 ..< 8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            if size == 1, head.count >= 16 { size = head[8 ..< 16].reduce(0) { $0 << 8 | Int($1) } }
            if size == 0 { size = file.bytes - offset }
            guard size >= 8, offset + size <= file.bytes else {
                throw CMAFError.boxExceedsParent(type: type, offset: offset, size: UInt64(size), parentEnd: file.bytes)
            }
            if type == "moof" {
                guard size <= largestFragmentHeader else {
                    throw CMAFError.malformed(type: type, offset: offset, reason: "a moof of \(size) bytes")
                }
                try handle.seek(toOffset: UInt64(offset))
                let bytes = [UInt8](try handle.read(upToCount: size) ?? Data())
                guard bytes.count == size else { throw CMAFError.truncatedBoxHeader(offset: offset) }
                moofs.append((offset, bytes))
            }
            offset += size
        }
        return PlayableClip.SegmentFile(size: file.bytes, moofs: moofs)
    }
}
