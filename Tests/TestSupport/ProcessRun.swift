import Foundation
import Synchronization

/// A child process run to its end: both pipes drained at once (a chatty child never blocks on a full pipe), stdin
/// closed, and terminated at an optional time limit. Call ``run(_:_:environment:timeout:)`` from async code (it
/// waits on a thread of its own, ``BlockingWork``), or ``runBlocking(_:_:environment:timeout:)`` from such a thread.
public struct ProcessRun: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// The signal that ended the process (a Swift trap is SIGILL), nil when it exited.
    public var terminatedBySignal: Int32?
    /// It was still running at its time limit and was terminated.
    public var timedOut: Bool

    /// stdout, then stderr.
    public var output: String { stdout + stderr }
    public var succeeded: Bool { status == 0 && terminatedBySignal == nil && !timedOut }

    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                           timeout: TimeInterval? = nil) async throws -> ProcessRun {
        try await BlockingWork.run { try runBlocking(executable, arguments, environment: environment, timeout: timeout) }
    }

    public static func runBlocking(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                                   timeout: TimeInterval? = nil) throws -> ProcessRun {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let collected = Mutex((out: Data(), err: Data()))
        let group = DispatchGroup()
        for (pipe, isOut) in [(out, true), (err, false)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.withLock { if isOut { $0.out = data } else { $0.err = data } }
                group.leave()
            }
        }
        let timedOut = timeout.map { group.wait(timeout: .now() + $0) == .timedOut } ?? false
        if timedOut { process.terminate() }
        group.wait()
        process.waitUntilExit()
        let (stdout, stderr) = collected.withLock { ($0.out, $0.err) }
        return ProcessRun(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                          stderr: String(decoding: stderr, as: UTF8.self),
                          terminatedBySignal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil,
                          timedOut: timedOut)
    }
}
