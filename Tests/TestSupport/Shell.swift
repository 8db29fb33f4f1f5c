import Foundation

/// A shell script run to its end off the cooperative pool (``BlockingWork``): `set -e`, optionally in `directory`.
public enum Shell {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The script's stdout; throws with the script, its exit status and everything it printed when it fails.
    @discardableResult
    public static func run(_ script: String, in directory: URL? = nil) async throws -> String {
        let result = try await ProcessRun.run(URL(fileURLWithPath: "/bin/sh"),
                                              ["-c", "set -e\n" + (directory.map { "cd '\($0.path)'\n" } ?? "") + script])
        guard result.status == 0 else {
            throw Failure(description: "\(script)\n→ exit \(result.status): \(result.output)")
        }
        return result.stdout
    }
}
