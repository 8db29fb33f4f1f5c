import Foundation
import Ingest
import OpenAPIRuntime
import Sidecar

/// A recent clip's parts sent as one body (see ``ClipParts``): the bytes made for it and the spool's files, patched
/// where the clip's bytes differ from the file's. Files are read in chunks on `BlockingIO`'s threads as the body is
/// written, one chunk when the writer asks for the next (so a clip costs a chunk of memory, not its size) — never
/// copied into a file of its own.
struct ConcatenatedFiles: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    /// How much is read from disk at a time.
    static let chunk = 128 << 10

    /// One read: `length` bytes of `file` from `offset` with `patches` applied (offsets from the file's start), or
    /// `made` bytes.
    struct Read: Sendable, Hashable {
        var file: URL?
        var made: ArraySlice<UInt8> = []
        var offset: Int
        var length: Int
        var patches: [ClipParts.Patch] = []
    }

    /// The reads that make up the bytes `range` of the parts of `clip` laid end to end, in order.
    let reads: [Read]

    init(_ clip: ClipParts, range: ClosedRange<Int>) {
        var reads: [Read] = []
        var offset = 0
        for part in clip.parts {
            defer { offset += part.bytes }
            let from = Swift.max(range.lowerBound, offset), to = Swift.min(range.upperBound, offset + part.bytes - 1)
            guard from <= to else { continue }
            guard let file = part.file else {
                reads.append(Read(file: nil, made: part.made[(from - offset)...(to - offset)], offset: from - offset, length: to - from + 1))
                continue
            }
            for start in stride(from: from - offset, through: to - offset, by: Self.chunk) {
                let length = Swift.min(Self.chunk, to - offset + 1 - start)
                let patches = part.patches.filter { $0.offset < start + length && $0.offset + $0.bytes.count > start }
                reads.append(Read(file: file, offset: start, length: length, patches: patches))
            }
        }
        self.reads = reads
    }

    /// `bytes` read from `offset` with the patches that overlap them written over.
    static func patched(_ bytes: [UInt8], from offset: Int, _ patches: [ClipParts.Patch]) -> [UInt8] {
        var bytes = bytes
        for patch in patches {
            for (index, byte) in patch.bytes.enumerated() {
                let at = patch.offset + index - offset
                if at >= 0, at < bytes.count { bytes[at] = byte }
            }
        }
        return bytes
    }

    /// The bytes as the HTTP API's body (`video/mp4`), its length known up front.
    static func body(_ clip: ClipParts, range: ClosedRange<Int>) -> HTTPBody {
        HTTPBody(ConcatenatedFiles(clip, range: range), length: .known(Int64(range.count)), iterationBehavior: .single)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<Read>

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let read = remaining.popFirst() else { return nil }
            guard let file = read.file else { return read.made }
            let bytes = try await BlockingIO.run { () throws -> [UInt8] in
                let handle = try FileHandle(forReadingFrom: file)
                defer { try? handle.close() }
                try handle.seek(toOffset: UInt64(read.offset))
                return ConcatenatedFiles.patched(Array(try handle.read(upToCount: read.length) ?? Data()), from: read.offset,
                                                 read.patches)
            }
            // A file shorter than the journal said (evicted under the reader): end the body short rather than send
            // bytes that are not the clip's.
            guard bytes.count == read.length else { throw ClipFileShort(file: file) }
            return bytes[...]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: reads[...]) }
}

/// A clip's file held fewer bytes than the spool's journal said (evicted while it was read): the body ends short.
struct ClipFileShort: Error, CustomStringConvertible {
    var file: URL
    var description: String { "\(file.lastPathComponent) ended before the bytes the spool recorded" }
}
