import Foundation
import Testing
import TestSupport
@testable import MediaIO

@Suite struct MediaInputTests {
    @Test func missingFileThrowsFFmpegErrorWithOperationAndReason() throws {
        let error = #expect(throws: FFmpegError.self) { try MediaInput(url: "/nonexistent/clip.mp4") }
        #expect(error?.operation == "open /nonexistent/clip.mp4")
        #expect(error?.message == "No such file or directory")
    }

    @Test func nonMediaFileIsRejectedWithAHint() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pushav-not-media-\(UUID()).mp4")
        try Data("this is not a video\n".utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = #expect(throws: MediaError.self) { try MediaInput(url: url.path) }
        #expect(error?.description.contains("Invalid data found when processing input") == true)
        #expect(error?.description.contains("truncated or still being written") == true)
    }

    /// A network open blocks inside FFmpeg until a peer connects; cancelling the task must end it through the
    /// AVIO interrupt callback, not leave a thread blocked forever. The test cancels only once the socket is
    /// listening (visible in /proc/net/tcp), i.e. while FFmpeg is blocked in accept.
    @Test(.timeLimit(.minutes(1))) func cancellingABlockedNetworkOpenReturnsCancellation() async throws {
        let port = UInt16(try LocalPorts.freeTCPPort())
        let flag = InterruptFlag()
        let task = Task {
            try await MediaThread.run(name: "test-open", interrupt: flag) {
                _ = try MediaInput(url: "tcp://127.0.0.1:\(port)?listen=1", interrupt: flag)
            }
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while !Self.isListening(port: port) {
            try #require(ContinuousClock.now < deadline, "FFmpeg never started listening on \(port)")
            await Task.yield()
        }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(!Self.isListening(port: port), "the listening socket must be closed after cancellation")
    }

    /// Whether some socket listens on 127.0.0.1:`port` (state 0A in /proc/net/tcp).
    static func isListening(port: UInt16) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return false }
        let local = String(format: "0100007F:%04X", port)
        return table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1] == local && fields[3] == "0A"
        }
    }

    @Test func ffmpegErrorTextComesFromAvStrerror() {
        let error = FFmpegError("demo", code: -2)  // AVERROR(ENOENT)
        #expect(error.description == "demo: No such file or directory")
    }
}
