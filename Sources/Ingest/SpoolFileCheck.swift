#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Whether a spool file holds a whole object, as recovery must ask once objects are written without an immediate
/// fsync (``SegmentSpool/syncDelay``): after a power failure a file's name may have reached the disk without all of
/// its data — shorter than written, or the right length with zeroed blocks at the end.
///
/// A CMAF object is checked by its boxes alone (a few bytes read per box, not the media): top-level boxes that tile
/// the file exactly, each with a size of at least its own header (a zeroed header reads as size 0, which the recorder
/// never writes) and a type of four printable characters, and the box that makes it useful (`moov` in a header,
/// `mdat` in a segment). Zeroes inside the last `mdat` are not seen: a page of missing media there decodes as a
/// damaged picture, which the ingest's players survive, where a broken box structure would make the whole object
/// unreadable. A manifest is checked whole: UTF-8 text that ends with `</MPD>`.
enum SpoolFileCheck {
    /// Reads `count` bytes at `offset`; nil when they cannot be read.
    typealias Reader = (_ offset: Int, _ count: Int) -> [UInt8]?

    /// The box walk over a file of `length` bytes; `required` is the box type it must contain.
    static func isWholeISOBMFF(length: Int, required: String, read: Reader) -> Bool {
        guard length > 0 else { return false }
        var offset = 0
        var seen = false
        while offset < length {
            guard length - offset >= 8, let head = read(offset, min(16, length - offset)), head.count >= 8 else { return false }
            var size = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
            let type = head[4..<8]
            guard type.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return false }
            var header = 8
            if size == 1 {
                guard head.count >= 16 else { return false }
                let large = head[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard large <= UInt64(Int.max) else { return false }
                size = Int(large)
                header = 16
            }
            guard size >= header, size <= length - offset else { return false }
            if String(decoding: type, as: UTF8.self) == required { seen = true }
            offset += size
        }
        return seen
    }

    static func isWholeManifest(_ bytes: [UInt8]) -> Bool {
        guard let text = String(validating: bytes, as: UTF8.self) else { return false }
        return text.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix("</MPD>")
    }

    /// Whether the file at `url` is a whole `object` of `length` bytes.
    static func isWhole(_ object: UploadObject, at url: URL, length: Int) -> Bool {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let read: Reader = { offset, count in
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, count, off_t(offset)) }
            return got == count ? bytes : nil
        }
        if object.isManifest {
            // Manifests are a few kB: read whole.
            guard length <= 1 << 20, let bytes = read(0, length) else { return false }
            return isWholeManifest(bytes)
        }
        return isWholeISOBMFF(length: length, required: object.isHeader ? "moov" : "mdat", read: read)
    }
}
