#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SystemPackage

/// Crash-safe file writes: temp file, write, fsync, rename, fsync the directory. After `write` returns, the file
/// survives `kill -9` and power loss with exactly these bytes; before, the old state (no file) stays visible.
/// With `sync: false` only the kill -9 half holds until ``sync(_:)`` is called: the rename still shows the whole file
/// or none to every later reader, but a power failure may leave the name with missing or zeroed data.
enum DurableFile {
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var path: String
        var code: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    static func write(_ bytes: some Collection<UInt8>, to url: URL, sync: Bool = true) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString.prefix(8)).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(operation: "open", path: temporary.path, code: errno) }
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        do {
            _ = try FileDescriptor(rawValue: fd).writeAll(bytes)
        } catch let error as Errno {
            throw Failure(operation: "write", path: temporary.path, code: error.rawValue)
        }
        if sync {
            guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: temporary.path, code: errno) }
        }
        close(fd)
        closed = true
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw Failure(operation: "rename", path: url.path, code: code)
        }
        if sync { try syncDirectory(directory) }
    }

    /// Makes a file written with `sync: false` durable (its data and size; its name needs ``syncDirectory(_:)``).
    /// False when the file is gone (it was delivered and removed meanwhile: nothing left to keep).
    static func sync(_ url: URL) throws -> Bool {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return false }
            throw Failure(operation: "open", path: url.path, code: errno)
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: url.path, code: errno) }
        return true
    }

    /// Reads a whole file; errors name the path and the system's reason ("Is a directory", "No such file…").
    static func read(_ url: URL) throws -> [UInt8] {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(operation: "open", path: url.path, code: errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "read", path: url.path, code: errno)
            }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// Makes a rename or unlink in `directory` durable.
    static func syncDirectory(_ directory: URL) throws {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(operation: "open", path: directory.path, code: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: directory.path, code: errno) }
    }
}
