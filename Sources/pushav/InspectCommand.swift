import ArgumentParser

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "inspect", abstract: "Check CMAF init and segment files.")
    @Argument var paths: [String]
    func run() async throws { throw CLIError("inspect is not available yet") }
}
