import Foundation
import Testing
import TestSupport

/// What a newcomer types wrong (issue 51): each mistake is answered with one plain sentence and the exit status of
/// the README's table (1: refused or failed, 64: the command line cannot be parsed), never a Foundation error dump.
@Suite struct CommandLineTests {
    static let media = "a_720p30_h264_main.mp4"

    /// A number out of range gets the same message however it is written: `--initial -5` used to be read as a
    /// missing value (`-5` looked like a flag), and `--initial=-5` was answered "0…65535" although 0 is refused too.
    @Test(arguments: [
        (["--initial", "-5"], "CONSTRAINT_ERROR (0x87): --initial must be 1…65535 s, got -5"),
        (["--initial=-5"], "CONSTRAINT_ERROR (0x87): --initial must be 1…65535 s, got -5"),
        (["--initial", "0"], "CONSTRAINT_ERROR (0x87): --initial must be 1…65535 s, got 0"),
        (["--pre-roll", "-1"], "CONSTRAINT_ERROR (0x87): --pre-roll must be 0…65535 ms, got -1"),
        (["--blind", "70000"], "CONSTRAINT_ERROR (0x87): --blind must be 0…65535 s, got 70000"),
        (["--sensitivity", "-2"], "CONSTRAINT_ERROR (0x87): --sensitivity must be 1…10, got -2"),
        (["--segment-duration", "-4000"], "CONSTRAINT_ERROR (0x87): --segment-duration must be 500…65500 ms, got -4000"),
    ])
    func aNumberOutOfRangeHasOneMessage(flags: [String], expected: String) async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try await PushAVBinary.run(["record", Fixtures.media(Self.media).path, "--out", dir.appendingPathComponent("out").path] + flags)
        #expect(result.status == 1)
        #expect(result.stderr == "Error: \(expected)\n", "stderr: \(result.stderr)")
    }

    /// An output folder that cannot be made is named with the system's reason, in one line (it was
    /// `Error Domain=NSCocoaErrorDomain Code=4 … UserInfo={…} (0 session(s), 0 segment file(s) …)`).
    @Test func anOutputFolderThatCannotBeMadeIsNamedWithTheReason() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("file.mp4")
        try Data("x".utf8).write(to: file)
        for (out, reason) in [("/proc/pushav-\(UUID().uuidString)", "No such file or directory"),
                              (file.appendingPathComponent("out").path, "Not a directory")] {
            let result = try await PushAVBinary.run(["record", Fixtures.media(Self.media).path, "--out", out])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("Error: cannot create \(out)"), "stderr: \(result.stderr)")
            #expect(result.stderr.hasSuffix(": \(reason)\n"), "stderr: \(result.stderr)")
            #expect(!result.stderr.contains("NSCocoaErrorDomain"))
            #expect(result.stderr.split(separator: "\n").count == 1, "stderr: \(result.stderr)")
        }
    }

    /// A mistyped command is named as such, with the nearest command (ArgumentParser said "2 unexpected arguments").
    @Test(arguments: [
        (["recrod", "x"], "Error: 'recrod' is not a pushav command (did you mean 'record'?); the commands are record, serve, inspect, receive, upload, certificates"),
        (["xyzzy"], "Error: 'xyzzy' is not a pushav command; the commands are record, serve, inspect, receive, upload, certificates"),
    ])
    func anUnknownCommandIsNamed(arguments: [String], expected: String) async throws {
        let result = try await PushAVBinary.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix(expected + "\n"), "stderr: \(result.stderr)")
    }

    @Test func versionAndHelpAnswer() async throws {
        let version = try await PushAVBinary.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.split(separator: ".").count == 3, "stdout: \(version.stdout)")
        let help = try await PushAVBinary.run(["help", "record"])
        #expect(help.status == 0)
        // Every flag that takes a duration says its unit.
        for flag in ["--initial <seconds>", "--augmentation <seconds>", "--max-duration <seconds>", "--blind <seconds>",
                     "--pre-roll <ms>", "--segment-duration <ms>", "--chunk-duration <ms>", "--max-backoff <ms>"] {
            #expect(help.stdout.contains(flag), "\(flag) missing from: \(help.stdout)")
        }
    }

    /// Examples in `--help` are copied into a shell: none is broken mid-line at 80 columns (ArgumentParser wraps long
    /// lines at the terminal's width, which cut `--segment-duration 2000` into two lines); long ones continue with `\`.
    @Test(arguments: [[], ["record"], ["serve"], ["inspect"], ["receive"], ["upload"], ["certificates", "make"]])
    func helpExamplesFitEightyColumns(command: [String]) async throws {
        let help = try await PushAVBinary.run(command + ["--help"])
        #expect(help.status == 0)
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "Examples:") else { return }
        for line in lines[(start + 1)...].prefix(while: { !$0.isEmpty }) {
            #expect(line.hasPrefix("  "), "a wrapped example line in pushav \(command.joined()) --help: \(line)")
        }
    }
}
