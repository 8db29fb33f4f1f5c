import Foundation
import Hummingbird
import NIOCore
import NIOPosix
import Sidecar

/// Several files sent as one body: a recent clip is its video track's header and segments, each a file of the spool,
/// and together one fragmented MP4. Read in chunks on NIO's blocking-I/O pool as the body is written (so a clip costs a
/// chunk of memory, not its size) — never copied into a file of its own.
enum ConcatenatedFiles {
    /// How much is read from disk at a time.
    static let chunk = 128 << 10

    /// The bytes `range` of the files of `clip` laid end to end.
    static func body(_ clip: ClipParts, range: ClosedRange<Int>) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            var offset = 0
            for part in clip.parts {
                defer { offset += part.bytes }
                let from = max(range.lowerBound, offset), to = min(range.upperBound, offset + part.bytes - 1)
                guard from <= to else { continue }
                var position = from - offset
                let end = to - offset + 1
                while position < end {
                    let length = min(chunk, end - position)
                    let at = position
                    let bytes = try await NIOThreadPool.singleton.runIfActive { () throws -> [UInt8] in
                        let handle = try FileHandle(forReadingFrom: part.file)
                        defer { try? handle.close() }
                        try handle.seek(toOffset: UInt64(at))
                        return Array(try handle.read(upToCount: length) ?? Data())
                    }
                    // A file shorter than the journal said (evicted under the reader): end the body short rather than
                    // send bytes that are not the clip's.
                    guard bytes.count == length else { throw ClipFileShort(file: part.file) }
                    try await writer.write(ByteBuffer(bytes: bytes))
                    position += length
                }
            }
            try await writer.finish(nil)
        }
    }
}

/// A clip's file held fewer bytes than the spool's journal said (evicted while it was read): the body ends short.
struct ClipFileShort: Error, CustomStringConvertible {
    var file: URL
    var description: String { "\(file.lastPathComponent) ended before the bytes the spool recorded" }
}
