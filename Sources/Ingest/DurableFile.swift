#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Crash-safe file writes: temp file, write, fsync, rename, fsync the directory. After `write` returns, the file
/// survives `kill -9` and power loss with exactly these bytes; before, the old state (no file) stays visible.
enum DurableFile {
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var path: String
        var code: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    static func write(_ bytes: some Collection<UInt8>, to url: URL) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString.prefix(8)).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(operation: "open", path: temporary.path, code: errno) }
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        let contiguous = Array(bytes)
        try contiguous.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw Failure(operation: "write", path: temporary.path, code: errno)
                }
                offset += written
            }
        }
        guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: temporary.path, code: errno) }
        close(fd)
        closed = true
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw Failure(operation: "rename", path: url.path, code: code)
        }
        try syncDirectory(directory)
    }

    /// Makes a rename or unlink in `directory` durable.
    static func syncDirectory(_ directory: URL) throws {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(operation: "open", path: directory.path, code: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: directory.path, code: errno) }
    }
}
