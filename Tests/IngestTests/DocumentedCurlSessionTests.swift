import Foundation
import Testing
import TestSupport

/// The curl sessions the README and docs/api.md print, run as printed against a real `pushav serve` (issue 51: the
/// README's manuallyTriggerTransport example had stopped working and nothing noticed). Only the API address is
/// replaced; streaming calls (`curl -sN …/events`) end by curl's own `max-time` from a `.curlrc`, so the text of each
/// command is untouched. Every answer the text promises (`# → …`, `...` standing for anything) must come back, and no
/// other command may be refused.
extension ServeEndToEndTests {
    @Test(arguments: [("docs/api.md", "## With curl"), ("README.md", "## HTTP API at a glance")])
    func aDocumentedCurlSessionWorksAsPrinted(file: String, section: String) async throws {
        let directory = try Fixtures.scratchDirectory("curl-session")
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent(file), encoding: .utf8)
        let block = try #require(Self.firstShellBlock(in: text, after: section), "no sh block after \(section) in \(file)")
        // What the session reads from its working folder: a PKI of its own (the README's `pushav certificates make`).
        let made = try await Fixtures.run(Fixtures.pushav.path, ["certificates", "make", directory.path + "/pki"])
        #expect(made.status == 0, "\(made.output)")
        for name in ["ca.pem", "client.pem", "client.key"] {
            try FileManager.default.copyItem(at: directory.appendingPathComponent("pki/\(name)"), to: directory.appendingPathComponent(name))
        }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("home"), withIntermediateDirectories: true)
        try "max-time = 3\n".write(to: directory.appendingPathComponent("home/.curlrc"), atomically: true, encoding: .utf8)

        let serve = try await Serve(directory: directory, source: TestPaths.media(Self.media).path, camera: "audioStreamID: 2")
        do {
            try await serve.waitUntilStreaming()
            // The address as a user types it (it read `[IPv4]127.0.0.1/127.0.0.1:8080`).
            #expect(serve.process.output.contains("pushav serve: listening on \(serve.api.dropFirst("http://".count)) (http)\n"),
                    "\(serve.process.output.prefix(2000))")
            let (script, commands) = Self.instrumented(block, api: serve.api)
            try script.write(to: directory.appendingPathComponent("session.sh"), atomically: true, encoding: .utf8)
            var environment = TestPaths.isolatedEnvironment()
            environment["HOME"] = directory.appendingPathComponent("home").path
            let shellEnvironment = environment
            let run = try await BlockingWork.run {
                try ProcessRun.runBlocking(URL(fileURLWithPath: "/bin/bash"), ["-c", "cd '\(directory.path)' && bash session.sh"],
                                           environment: shellEnvironment, timeout: 120)
            }
            let answers = run.stdout.components(separatedBy: Self.marker + "\n").dropFirst()
            #expect(answers.count == commands.count, "\(run.stdout)\n\(run.stderr)")
            for (command, answer) in zip(commands, answers) {
                if let expected = command.expected {
                    #expect(Self.matches(answer, expected), "\(command.text)\nanswered: \(answer)\nprinted: \(expected)")
                } else {
                    #expect(!answer.contains("\"clusterStatus\""), "refused: \(command.text)\n\(answer)")
                }
            }
        } catch {
            Issue.record("\(error)\n\(serve.process.output.suffix(4000))")
        }
        try await serve.shutdown()
    }

    static let marker = "@@command"

    struct DocumentedCommand {
        var text: String
        /// The `# → …` line after it, without the HTTP status the text puts first (curl -s prints only the body).
        var expected: String?
    }

    /// The text of the first ```sh block after the heading `section`.
    static func firstShellBlock(in text: String, after section: String) -> String? {
        guard let heading = text.range(of: "\n" + section + "\n"),
              let open = text.range(of: "```sh\n", range: heading.upperBound..<text.endIndex),
              let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex) else { return nil }
        return String(text[open.upperBound..<close.lowerBound])
    }

    /// The block with a marker echoed before each command (a line starting with `curl`), the API address set, and
    /// the commands with what the text says they answer.
    static func instrumented(_ block: String, api: String) -> (script: String, commands: [DocumentedCommand]) {
        var lines: [String] = []
        var commands: [DocumentedCommand] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("api=") {
                lines.append("api=\(api)")
            } else if line.hasPrefix("curl ") {
                lines.append("echo; echo '\(marker)'")
                lines.append(line)
                commands.append(DocumentedCommand(text: line))
            } else if line.hasPrefix("# → ") {
                var expected = String(line.dropFirst(4))
                if let space = expected.firstIndex(of: " "), Int(expected[..<space]) != nil {
                    expected = String(expected[expected.index(after: space)...])
                }
                commands[commands.count - 1].expected = expected
            } else {
                if line.hasPrefix(" ") || line.hasPrefix("\"") || line.hasPrefix("'"), !commands.isEmpty {
                    commands[commands.count - 1].text += "\n" + line
                }
                lines.append(line)
            }
        }
        return (lines.joined(separator: "\n") + "\necho\n", commands)
    }

    /// `answer` holds `expected`'s parts in order (`...` in the printed answer stands for anything).
    static func matches(_ answer: String, _ expected: String) -> Bool {
        var rest = answer[...]
        for part in expected.components(separatedBy: "...") where !part.isEmpty {
            guard let found = rest.range(of: part) else { return false }
            rest = rest[found.upperBound...]
        }
        return true
    }
}
