import Foundation
import Motion
import Sidecar
import Testing
import TestSupport

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
}
