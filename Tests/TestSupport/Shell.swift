import Foundation
import Synchronization

/// A shell script run to its end off the cooperative pool (``BlockingWork``): `set -e`, optionally in `directory`.
public enum Shell {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The script's stdout; throws with the script, its exit status and everything it printed when it fails.
    @discardableResult
    public static func run(_ script: String, in directory: URL? = nil) async throws -> String {
        try await BlockingWork.run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "set -e\n" + (directory.map { "cd '\($0.path)'\n" } ?? "") + script]
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            try process.run()
            // stderr drains beside stdout, so a chatty script never blocks on a full pipe.
            let errors = Mutex(Data())
            let drained = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                let data = err.fileHandleForReading.readDataToEndOfFile()
                errors.withLock { $0 = data }
                drained.signal()
            }
            let data = out.fileHandleForReading.readDataToEndOfFile()
            drained.wait()
            process.waitUntilExit()
            let text = String(decoding: data, as: UTF8.self)
            guard process.terminationStatus == 0 else {
                throw Failure(description: "\(script)\n→ exit \(process.terminationStatus): \(text)"
                    + String(decoding: errors.withLock { $0 }, as: UTF8.self))
            }
            return text
        }
    }
}
