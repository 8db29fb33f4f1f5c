import Foundation
import Testing
import TestSupport

/// Locations the tests share: the bundled test media, the built `pushav` binary, scratch directories.
enum Fixtures {
    static let packageRoot = TestPaths.packageRoot
    static let testMedia = TestPaths.testMedia

    static func media(_ name: String) -> URL { TestPaths.media(name) }

    /// The `pushav` executable built next to the test bundle (the test target depends on it).
    static var pushav: URL { TestPaths.pushav }

    /// A new empty directory, removed by the caller's `defer`.
    static func scratchDirectory(_ label: String = #function) throws -> URL { try TestPaths.scratchDirectory(label) }
}

/// The result of running the `pushav` binary.
typealias CommandResult = ProcessRun

enum PushAVBinary {
    /// Runs `pushav` (or `executable`) with `arguments` and returns what it printed; a hung process is killed after
    /// `timeout` seconds. Waits off the cooperative pool (``BlockingWork``).
    static func run(_ arguments: [String], timeout: TimeInterval = 120, executable: URL = Fixtures.pushav,
                    sourceLocation: SourceLocation = #_sourceLocation) async throws -> CommandResult {
        let result = try await BlockingWork.runHeavy {
            try ProcessRun.runBlocking(executable, arguments, environment: TestPaths.isolatedEnvironment(), timeout: timeout)
        }
        if result.timedOut {
            Issue.record("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) did not finish within \(timeout) s",
                         sourceLocation: sourceLocation)
        }
        return result
    }

}
