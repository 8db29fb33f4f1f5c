import ArgumentParser
import MediaIO

@main
struct PushAV: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pushav", abstract: "PushAV Recorder")
    mutating func run() async throws { print("libavformat \(libavformatVersion)") }
}
