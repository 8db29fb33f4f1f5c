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
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
    /// The signal that killed the process (a Swift trap is SIGILL), nil when it exited.
    var terminatedBySignal: Int32? = nil
    /// It was still running after its time limit and was terminated.
    var timedOut = false
}

enum PushAVBinary {
    /// Runs `pushav` (or `executable`) with `arguments` and returns what it printed; a hung process is killed after
    /// `timeout` seconds. Waits off the cooperative pool (``BlockingWork``).
    static func run(_ arguments: [String], timeout: TimeInterval = 120, executable: URL = Fixtures.pushav,
                    sourceLocation: SourceLocation = #_sourceLocation) async throws -> CommandResult {
        let result = try await BlockingWork.runHeavy { try runBlocking(arguments, timeout: timeout, executable: executable) }
        if result.timedOut {
            Issue.record("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) did not finish within \(timeout) s",
                         sourceLocation: sourceLocation)
        }
        return result
    }

    private static func runBlocking(_ arguments: [String], timeout: TimeInterval, executable: URL) throws -> CommandResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = TestPaths.isolatedEnvironment()
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Drain both pipes concurrently so a chatty child never blocks on a full pipe.
        let outData = DataBox(), errData = DataBox()
        let group = DispatchGroup()
        for (pipe, box) in [(out, outData), (err, errData)] {
            group.enter()
            DispatchQueue.global().async {
                box.data = pipe.fileHandleForReading.readDataToEndOfFile()
                group.leave()
            }
        }
        let timedOut = group.wait(timeout: .now() + timeout) == .timedOut
        if timedOut { process.terminate() }  // the caller records the issue, in its test's context
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus, stdout: String(decoding: outData.data, as: UTF8.self),
                             stderr: String(decoding: errData.data, as: UTF8.self),
                             terminatedBySignal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil,
                             timedOut: timedOut)
    }

    private final class DataBox: @unchecked Sendable {  // written by one queue, read after group.wait
        var data = Data()
    }
}
