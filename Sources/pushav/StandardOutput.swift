#if canImport(Glibc)
import Glibc
#endif
import SystemPackage

/// Standard output for lines a command prints as it goes. `FileHandle.write(_:)` stops the process with a fatal error
/// and a backtrace when the reader has gone (`pushav serve --demo | head -3`: EPIPE, since the process ignores
/// SIGPIPE for its sockets). A pipeline expects the writer to end quietly by SIGPIPE (status 141 in a shell), which is
/// what happens here; any other write error leaves nothing better to do than go on.
enum StandardOutput {
    static func write(_ text: String) {
        do {
            _ = try FileDescriptor.standardOutput.writeAll(text.utf8)
        } catch Errno.brokenPipe {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
            _exit(128 + SIGPIPE)
        } catch {
            return
        }
    }
}
