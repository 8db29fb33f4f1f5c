import Foundation
import NIOPosix
import OpenAPIRuntime
import Sidecar

/// Several files sent as one body: a recent clip is its video track's header and segments, each a file of the spool,
/// and together one fragmented MP4. Read in chunks on NIO's blocking-I/O pool as the body is written, one chunk when
/// the writer asks for the next (so a clip costs a chunk of memory, not its size) — never copied into a file of its own.
struct ConcatenatedFiles: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    /// How much is read from disk at a time.
    static let chunk = 128 << 10

    /// One read: `length` bytes of `file` from `offset`.
    struct Read: Sendable, Hashable {
        var file: URL
        var offset: Int
        var length: Int
    }

    /// The reads that make up the bytes `range` of the files of `clip` laid end to end, in order.
    let reads: [Read]

    init(_ clip: ClipParts, range: ClosedRange<Int>) {
        var reads: [Read] = []
        var offset = 0
        for part in clip.parts {
            defer { offset += part.bytes }
            let from = Swift.max(range.lowerBound, offset), to = Swift.min(range.upperBound, offset + part.bytes - 1)
            guard from <= to else { continue }
            for start in stride(from: from - offset, through: to - offset, by: Self.chunk) {
                reads.append(Read(file: part.file, offset: start, length: Swift.min(Self.chunk, to - offset + 1 - start)))
            }
        }
        self.reads = reads
    }

    /// The bytes as the HTTP API's body (`video/mp4`), its length known up front.
    static func body(_ clip: ClipParts, range: ClosedRange<Int>) -> HTTPBody {
        HTTPBody(ConcatenatedFiles(clip, range: range), length: .known(Int64(range.count)), iterationBehavior: .single)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<Read>

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let read = remaining.popFirst() else { return nil }
            let bytes = try await NIOThreadPool.singleton.runIfActive { () throws -> [UInt8] in
                let handle = try FileHandle(forReadingFrom: read.file)
                defer { try? handle.close() }
                try handle.seek(toOffset: UInt64(read.offset))
                return Array(try handle.read(upToCount: read.length) ?? Data())
            }
            // A file shorter than the journal said (evicted under the reader): end the body short rather than send
            // bytes that are not the clip's.
            guard bytes.count == read.length else { throw ClipFileShort(file: read.file) }
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
