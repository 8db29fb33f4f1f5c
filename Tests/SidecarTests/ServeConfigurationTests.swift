import Motion
import Sidecar
import Testing

@Suite("serve.yaml")
struct ServeConfigurationTests {
    static let example = """
        listen: 127.0.0.1:8080
        state: /var/lib/pushav
        spoolCapacityMiB: 1024
        cameras:
          - id: cam1
            source: rtsp://192.0.2.10/main
            live: true
            videoStreamID: 1
            audioStreamID: 2
            zones: [{id: 1, polygon: [[0,0],[640,0],[640,720],[0,720]], sensitivity: 5}]
        """

    @Test func theDocumentedExampleParses() throws {
        let configuration = try ServeConfiguration(yaml: Self.example)
        #expect(configuration.listen == ListenAddress(host: "127.0.0.1", port: 8080) && configuration.listen.isLoopback)
        #expect(configuration.state == "/var/lib/pushav" && configuration.spoolCapacityMiB == 1024)
        #expect(configuration.cameras == [CameraConfiguration(
            id: "cam1", source: "rtsp://192.0.2.10/main", live: true, videoStreamID: 1, audioStreamID: 2,
            zones: [MotionZone(id: 1, polygon: [.init(x: 0, y: 0), .init(x: 640, y: 0), .init(x: 640, y: 720), .init(x: 0, y: 720)],
                               sensitivity: 5)])])
    }

    @Test func defaultsForWhatIsLeftOut() throws {
        let configuration = try ServeConfiguration(yaml: "state: s\ncameras: [{id: a, source: f.mp4}]")
        #expect(configuration.listen.description == "127.0.0.1:8080" && configuration.spoolCapacityMiB == 1024)
        #expect(configuration.cameras[0].live && configuration.cameras[0].videoStreamID == 1 && configuration.cameras[0].audioStreamID == nil)
    }

    /// (YAML, the error's full text)
    static let refused: [(String, String)] = [
        ("state: s\ncameras: [{id: a, source: f}]\nlisten_port: 80", "listen_port: unknown key (known here: cameras, listen, spoolCapacityMiB, state)"),
        ("cameras: [{id: a, source: f}]", "state: required"),
        ("state: s", "cameras: required"),
        ("state: s\ncameras: []", "cameras: at least one camera is needed"),
        ("state: s\nlisten: 127.0.0.1\ncameras: [{id: a, source: f}]", #"listen: expected host:port, got "127.0.0.1""#),
        ("state: s\nlisten: 127.0.0.1:70000\ncameras: [{id: a, source: f}]", #"listen: expected host:port with a port 1…65535, got "127.0.0.1:70000""#),
        ("state: s\nspoolCapacityMiB: lots\ncameras: [{id: a, source: f}]", #"spoolCapacityMiB: expected an integer, got "lots""#),
        ("state: s\nspoolCapacityMiB: 0\ncameras: [{id: a, source: f}]", "spoolCapacityMiB: must be 1…1048576, got 0"),
        ("state: s\ncameras: [{id: a, source: f, sauce: g}]", "cameras[0].sauce: unknown key (known here: analysis, audioStreamID, id, keyFrameInterval, live, source, videoStreamID, zones)"),
        ("state: s\ncameras: [{id: a/b, source: f}]", #"cameras[0].id: use 1…64 of A–Z, a–z, 0–9, - and _ (it is part of API paths), got "a/b""#),
        ("state: s\ncameras: [{id: a, source: f}, {id: a, source: g}]", #"cameras[1].id: "a" is used by an earlier camera"#),
        ("state: s\ncameras: [{id: a}]", "cameras[0].source: required"),
        ("state: s\ncameras: [{id: a, source: f, live: maybe}]", #"cameras[0].live: expected true or false, got "maybe""#),
        ("state: s\ncameras: [{id: a, source: f, analysis: some}]", #"cameras[0].analysis: must be all or keyframes, got "some""#),
        ("state: s\ncameras: [{id: a, source: f, videoStreamID: 2, audioStreamID: 2}]", "cameras[0].audioStreamID: must differ from videoStreamID 2"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,1]]}]}]", "cameras[0].zones[0].polygon: a polygon needs at least 3 points, got 2"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,1],[2]]}]}]", "cameras[0].zones[0].polygon[2]: a point is [x, y] in video pixels, both ≥ 0"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,0],[1,1]], sensitivity: 12}]}]", "cameras[0].zones[0].sensitivity: must be 1…10, got 12"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,0],[1,1]]}, {id: 1, polygon: [[0,0],[1,0],[1,1]]}]}]", "cameras[0].zones[1].id: zone 1 is listed twice"),
        ("state: [s]\ncameras: [{id: a, source: f}]", "state: expected a string"),
        ("- just\n- a list", "expected a mapping of cameras, listen, spoolCapacityMiB, state"),
        ("state: s\ncameras: {id: a}", "cameras: expected a list, got a mapping"),
        ("state: 's\ncameras: [", "not valid YAML"),
    ]

    @Test(arguments: refused.map { $0.0 })
    func refusedNamingTheKey(yaml: String) {
        let expected = Self.refused.first { $0.0 == yaml }!.1
        #expect {
            try ServeConfiguration(yaml: yaml)
        } throws: { error in
            "\(error)".hasPrefix(expected)
        }
    }
}
