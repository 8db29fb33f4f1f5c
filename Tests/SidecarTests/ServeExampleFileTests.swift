import Domain
import Foundation
import Motion
import Sidecar
import TestSupport
import Testing

/// `serve.example.yaml` at the repository's root, which the README points to, is a configuration `pushav serve` accepts
/// and says what its comments say.
@Suite("serve.example.yaml") struct ServeExampleFileTests {
    @Test func theExampleFileParsesAsDocumented() throws {
        let path = TestPaths.packageRoot.appendingPathComponent("serve.example.yaml").path
        let configuration = try ServeConfiguration.load(path: path)
        #expect(configuration.listen == ListenAddress(host: "127.0.0.1", port: 8080) && configuration.listen.isLoopback)
        #expect(configuration.state == "/var/lib/pushav" && configuration.spoolCapacityMiB == 1024)
        try #require(configuration.cameras.count == 2)
        let cam1 = configuration.cameras[0]
        #expect(cam1.id == "cam1" && cam1.source == "rtsp://192.0.2.10/main" && cam1.live)
        #expect(cam1.videoStreamID == 1 && cam1.audioStreamID == 2 && cam1.keyFrameInterval == 2000 && cam1.analysis == .all)
        #expect(cam1.zones == [
            MotionZone(id: 1, name: "door", polygon: [.init(x: 0, y: 0), .init(x: 640, y: 0), .init(x: 640, y: 720), .init(x: 0, y: 720)],
                       sensitivity: 5),
            MotionZone(id: 2, name: "drive", polygon: [.init(x: 640, y: 360), .init(x: 1280, y: 360), .init(x: 1280, y: 720)],
                       sensitivity: nil),
        ])
        let garden = configuration.cameras[1]
        #expect(garden.id == "garden" && garden.audioStreamID == nil && garden.zones.isEmpty && garden.keyFrameInterval == 2000)
    }

    /// The commented-out access settings are valid as written: uncommented, they parse to what the comments say.
    @Test func theCommentedAccessSettingsParse() async throws {
        let path = TestPaths.packageRoot.appendingPathComponent("serve.example.yaml").path
        let text = try await BlockingWork.run { try String(contentsOfFile: path, encoding: .utf8) }
        let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("# tokenFile:") || line.hasPrefix("# tls:") || line.hasPrefix("#   ") ? line.dropFirst(2) : line
        }.joined(separator: "\n")
        var configuration = try ServeConfiguration(yaml: uncommented)
        #expect(configuration.tokenFile == "/etc/pushav/api-token")
        #expect(configuration.tls == APITLSFiles(certificate: "/etc/pushav/api.pem", key: "/etc/pushav/api.key",
                                                 clientCA: "/etc/pushav/controller-ca.pem"))
        configuration.listen = ListenAddress(host: "0.0.0.0", port: 8080)
        #expect(throws: Never.self) { try configuration.checkAPIAccess() }
    }
}
