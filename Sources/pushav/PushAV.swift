import ArgumentParser
import Foundation

@main
struct PushAV: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushav",
        abstract: "Record camera events as CMAF and push them to a Matter Push AV ingest endpoint.",
        discussion: """
            pushav reads any video FFmpeg can open (a file or a camera URL), detects motion, and cuts event clips \
            the way a Matter Push AV transport records them (trigger, augmentation, max and blind durations, \
            pre-roll), each a CMAF session: one init segment plus numbered media segments per track, the layout \
            Matter Push AV uploads use. It can push them over HTTPS with client certificates, durably, and check \
            CMAF files with its own box parser.

            Examples:
              pushav record video.mp4 --out out
              pushav record video.mp4 --out out --sensitivity 10 --max-duration 15 --json
              pushav record camera.ts --out out --trigger continuous \\
                  --segment-duration 2000 --chunk-duration 500
              pushav record video.mp4 --out out --push https://ingest/streams/1/ \\
                  --ca ca.pem --cert cam.pem --key cam.key
              pushav serve --config serve.yaml
              pushav inspect out/session_1
              pushav receive --root received --cert server.pem --key server.key \\
                  --client-ca ca.pem
            """,
        version: PushAV.version,
        subcommands: [RecordCommand.self, ServeCommand.self, InspectCommand.self, ReceiveCommand.self, UploadCommand.self,
                      CertificatesCommand.self]
    )

    /// The release this binary is (`pushav --version`).
    static let version = "0.9.0"

    /// ArgumentParser's own entry point, with two things it does not do: a first word that is no subcommand is named
    /// as such (ArgumentParser says "2 unexpected arguments" for `pushav recrod x`), and an error that is not a
    /// sentence yet (Foundation's file errors) becomes one (``ErrorText``). Exit statuses are the README's table.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let word = arguments.first, !word.hasPrefix("-"), word != "help" {
            let names = configuration.subcommands.compactMap { $0.configuration.commandName }
            if !names.contains(word) {
                let near = names.min { editDistance($0, word) < editDistance($1, word) }
                let hint = near.map { editDistance($0, word) <= 2 ? " (did you mean '\($0)'?)" : "" } ?? ""
                FileHandle.standardError.write(Data(("Error: '\(word)' is not a pushav command\(hint); the commands are "
                    + names.joined(separator: ", ") + "\nSee 'pushav --help'.\n").utf8))
                Foundation.exit(ExitCode.validationFailure.rawValue)
            }
        }
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: ErrorText.fileErrorSentence(error).map(CLIError.init) ?? error)
        }
    }

    /// Levenshtein distance: how many single-letter edits turn `a` into `b` (for "did you mean").
    static func editDistance(_ a: String, _ b: String) -> Int {
        let b = Array(b)
        var row = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var diagonal = row[0]
            row[0] = i + 1
            for (j, y) in b.enumerated() {
                let above = row[j + 1]
                row[j + 1] = min(above + 1, row[j] + 1, diagonal + (x == y ? 0 : 1))
                diagonal = above
            }
        }
        return row[b.count]
    }
}
