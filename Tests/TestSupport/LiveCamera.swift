import Foundation

/// A live RTSP camera for tests: Debian's `rtsp-server-perl` on free loopback ports, and the `ffmpeg` CLI publishing
/// a media file to it in real time, looped forever (`-re -stream_loop -1 … -c copy -f rtsp`). Clients read ``url``.
///
/// ``start(media:logDirectory:path:timeout:)`` returns once a client can read the stream (ffprobe sees its video);
/// ``stop()`` (or deinit) kills both processes, ``restart(timeout:)`` brings them back on the same ports. Logs of both
/// go to `logDirectory` for failure messages.
/// Needs `rtsp-server-perl` (its RTSP::Server module) and `ffmpeg` (Scripts/setup installs both).
public final class LiveCamera: @unchecked Sendable {  // the processes change only under `lock`; stop() is idempotent
    /// `rtsp://127.0.0.1:<port>/<path>` for clients (PLAY).
    public let url: String
    /// Where the publisher sends the stream (ANNOUNCE/RECORD).
    public let publishURL: String
    public let logDirectory: URL
    private let media: URL
    private let path: String
    private let ports: Ports
    private let lock = NSLock()
    private var server: ChildProcess
    private var publisher: ChildProcess

    private struct Ports {
        var client: Int
        var source: Int
        var rtpStart: Int
    }

    private init(url: String, publishURL: String, logDirectory: URL, media: URL, path: String, ports: Ports,
                 server: ChildProcess, publisher: ChildProcess) {
        self.url = url
        self.publishURL = publishURL
        self.logDirectory = logDirectory
        self.media = media
        self.path = path
        self.ports = ports
        self.server = server
        self.publisher = publisher
    }

    /// After ``stop()``: the same camera again, on the same ports and URL (a camera coming back after an outage).
    /// Returns once a client can read video again.
    public func restart(timeout: Duration = .seconds(30)) async throws {
        stop()
        let deadline = ContinuousClock.now + timeout
        var failures: [String] = []
        // The ports were just released; a bind can lose a race with a lingering socket for a moment.
        while ContinuousClock.now < deadline {
            do {
                let started = try await Self.launch(media: media, logDirectory: logDirectory, path: path, deadline: deadline,
                                                    ports: ports)
                lock.withLock {
                    server = started.server
                    publisher = started.publisher
                }
                return
            } catch {
                failures.append("\(error)\n" + logs)
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        throw LiveCameraError("restart failed: " + failures.joined(separator: "\n"))
    }

    public static func start(media: URL, logDirectory: URL, path: String = "cam", timeout: Duration = .seconds(60)) async throws -> LiveCamera {
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        let deadline = ContinuousClock.now + timeout
        // Free ports are probed, then bound by other processes a moment later: another test can win the race. An
        // attempt that fails (a process dies, usually "Address already in use") is retried on new ports.
        var failures: [String] = []
        for attempt in 1...3 {
            do {
                let started = try await launch(media: media, logDirectory: logDirectory, path: path, deadline: deadline)
                return LiveCamera(url: started.url, publishURL: started.publishURL, logDirectory: logDirectory, media: media,
                                  path: path, ports: started.ports, server: started.server, publisher: started.publisher)
            } catch {
                failures.append("attempt \(attempt): \(error)\n" + logs(in: logDirectory))
                if ContinuousClock.now >= deadline { break }
            }
        }
        throw LiveCameraError(failures.joined(separator: "\n"))
    }

    /// The running processes of one start (not a `LiveCamera`: its deinit would kill them).
    private struct Launch {
        var url: String
        var publishURL: String
        var ports: Ports
        var server: ChildProcess
        var publisher: ChildProcess
    }

    private static func launch(media: URL, logDirectory: URL, path: String,
                               deadline: ContinuousClock.Instant, ports: Ports? = nil) async throws -> Launch {
        let clientPort = try ports?.client ?? LocalPorts.freeTCPPort()
        let sourcePort = try ports?.source ?? LocalPorts.freeTCPPort(excluding: [clientPort])
        // The server takes two UDP ports per stream for the publisher and two per stream for each client (pushav,
        // and the one ffprobe check below), counting up from $RTP_START_PORT; 64 is room for a dozen clients.
        // --rtp_start_port alone does not do: every closed connection resets the counter to the package variable
        // $RTP_START_PORT. So this runs /usr/bin/rtsp-server-perl's few lines itself, with that variable set too.
        let rtpStart = try ports?.rtpStart ?? LocalPorts.freeUDPRange(count: 64)
        let server = try ChildProcess.start(
            "/usr/bin/perl",
            ["-MAnyEvent", "-MRTSP::Server", "-e",
             "$RTSP::Server::RTP_START_PORT = shift @ARGV; my $server = RTSP::Server->new_with_options; $server->listen; "
                + "AnyEvent->condvar->recv",
             "\(rtpStart)", "--rtp_start_port", "\(rtpStart)", "--clientport", "\(clientPort)", "--serverport", "\(sourcePort)",
             "--client_listen_address", "127.0.0.1", "--source_listen_address", "127.0.0.1", "--loglevel", "3"],
            log: logDirectory.appendingPathComponent("rtsp-server.log"))
        var publisher: ChildProcess?
        do {
            try await waitUntil("rtsp-server-perl listening on \(clientPort) and \(sourcePort)", deadline: deadline, alive: [server]) {
                LocalPorts.isListening(port: clientPort) && LocalPorts.isListening(port: sourcePort)
            }
            let publishURL = "rtsp://127.0.0.1:\(sourcePort)/\(path)"
            let started = try ChildProcess.start(
                "/usr/bin/ffmpeg",
                ["-nostdin", "-hide_banner", "-loglevel", "warning", "-re", "-stream_loop", "-1", "-i", media.path,
                 "-c", "copy", "-f", "rtsp", publishURL],
                log: logDirectory.appendingPathComponent("publisher.log"))
            publisher = started
            let url = "rtsp://127.0.0.1:\(clientPort)/\(path)"
            // The mount exists (DESCRIBE answers with video) — asked over TCP only, so no RTP ports are used up.
            try await waitUntil("\(url) described", deadline: deadline, alive: [server, started]) {
                try await describes(url: url, port: clientPort)
            }
            // Then video packets really flow to a client.
            try await waitUntil("video packets from \(url)", deadline: deadline, alive: [server, started]) {
                try await ChildProcess.output("/usr/bin/ffprobe", [
                    "-v", "error", "-timeout", "5000000", "-select_streams", "v", "-read_intervals", "%+#5",
                    "-show_entries", "packet=pts", "-of", "csv=p=0", url,
                ]).split(separator: "\n").count >= 5
            }
            guard server.isRunning && started.isRunning else { throw LiveCameraError("the camera stopped right after starting") }
            return Launch(url: url, publishURL: publishURL,
                          ports: Ports(client: clientPort, source: sourcePort, rtpStart: rtpStart), server: server,
                          publisher: started)
        } catch {
            publisher?.kill()
            server.kill()
            throw error
        }
    }

    /// True when an RTSP DESCRIBE of `url` answers 200 with a video stream in its SDP.
    private static func describes(url: String, port: Int) async throws -> Bool {
        let request = "DESCRIBE \(url) RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n"
        let answer: String? = await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: LocalPorts.exchange(port: port, request: request) { $0.contains("m=video") })
            }.start()
        }
        guard let answer else { return false }
        return answer.hasPrefix("RTSP/1.0 200") && answer.contains("m=video")
    }

    /// What the server and the publisher logged, for failure messages.
    public var logs: String { Self.logs(in: logDirectory) }

    private static func logs(in directory: URL) -> String {
        ["rtsp-server.log", "publisher.log"].map {
            "\($0): " + ((try? String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8)) ?? "")
        }.joined(separator: "\n")
    }

    /// Kills the publisher and the server and waits for both.
    public func stop() {
        let (publisher, server) = lock.withLock { (self.publisher, self.server) }
        publisher.kill()
        server.kill()
    }

    deinit { stop() }

    private static func waitUntil(
        _ what: String, deadline: ContinuousClock.Instant, alive: [ChildProcess], _ condition: () async throws -> Bool
    ) async throws {
        while !(try await condition()) {
            if let dead = alive.first(where: { !$0.isRunning }) {
                throw LiveCameraError("\(dead.name) exited (status \(dead.status)) while waiting for \(what)")
            }
            guard ContinuousClock.now < deadline else { throw LiveCameraError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

public struct LiveCameraError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A child process whose stdout and stderr go to a log file; killed (and reaped) on demand.
public final class ChildProcess: @unchecked Sendable {  // Process is thread-safe for what is used here
    public let process: Process
    public let name: String
    public let log: URL

    private init(process: Process, name: String, log: URL) {
        self.process = process
        self.name = name
        self.log = log
    }

    /// `environment` nil inherits the test process's; `currentDirectory` nil runs it in the test process's (a tool
    /// that leaves caches in its working folder gets a scratch folder instead).
    public static func start(_ executable: String, _ arguments: [String], log: URL,
                             environment: [String: String]? = nil, currentDirectory: URL? = nil) throws -> ChildProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        if let environment { process.environment = environment }
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try handle.close()  // the child has its own copy
        return ChildProcess(process: process, name: URL(fileURLWithPath: executable).lastPathComponent, log: log)
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var status: Int32 { process.isRunning ? -1 : process.terminationStatus }
    /// True when it exited by itself (`status` is the exit code), false when a signal ended it.
    public var exitedNormally: Bool { !process.isRunning && process.terminationReason == .exit }
    public var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) { if process.isRunning { Foundation.kill(process.processIdentifier, number) } }

    /// Waits until it exits; false if it is still running after `timeout`.
    public func waitForExit(timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// SIGKILL and reap; nothing to do if it already exited.
    public func kill() {
        signal(SIGKILL)
        process.waitUntilExit()
    }

    /// Runs a short command to completion off the cooperative pool and returns its stdout (stderr is dropped).
    public static func output(_ executable: String, _ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: executable)
                    process.arguments = arguments
                    let pipe = Pipe()
                    process.standardOutput = pipe
                    process.standardError = FileHandle.nullDevice
                    process.standardInput = FileHandle.nullDevice
                    try process.run()
                    let data = pipe.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    return String(decoding: data, as: UTF8.self)
                })
            }.start()
        }
    }
}

