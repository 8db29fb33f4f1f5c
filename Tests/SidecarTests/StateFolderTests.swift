import Foundation
import Sidecar
import Testing
import TestSupport

/// The state folder holds TLS client keys and recordings: a new (or empty) one is made owner-only; one that already
/// holds state and that other users may enter is refused at start, with the fix in the message.
@Suite struct StateFolderTests {
    static func configuration(_ state: URL) -> ServeConfiguration {
        ServeConfiguration(state: state.path,
                           cameras: [CameraConfiguration(id: "cam1", source: TestPaths.media("a_720p30_h264_main.mp4").path)])
    }

    static func mode(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test(arguments: [0o755, 0o750, 0o701])
    func aStateFolderOthersCanEnterIsRefused(mode: Int) async throws {
        let directory = try TestPaths.scratchDirectory("state-mode")
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state")
        _ = try await SidecarEngine(configuration: Self.configuration(state))  // a first start: owner-only
        #expect(try Self.mode(state) == 0o700)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: state.path)
        do {
            _ = try await SidecarEngine(configuration: Self.configuration(state))
            Issue.record("started on a state folder of mode \(String(mode, radix: 8))")
        } catch let error as ServeError {
            #expect(error.description.contains("chmod 700 \(state.path)"), "\(error)")
            #expect(error.description.contains("mode \(String(mode, radix: 8))"), "\(error)")
        }
        #expect(try Self.mode(state) == mode, "the folder is left as the operator made it")
    }

    /// An empty folder made beforehand (as `--demo --state` and `mkdir` give it) holds nothing yet: it becomes 0700.
    @Test func anEmptyFolderIsMadeOwnerOnly() async throws {
        let directory = try TestPaths.scratchDirectory("state-empty")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        _ = try await SidecarEngine(configuration: Self.configuration(directory))
        #expect(try Self.mode(directory) == 0o700)
    }
}
