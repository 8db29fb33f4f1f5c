import Domain
import Foundation
import Motion
@testable import Sidecar
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
            analysisSource: rtsp://192.0.2.10/sub
            perZoneSensitivity: true
            zones: [{id: 1, polygon: [[0,0],[640,0],[640,720],[0,720]], sensitivity: 5}]
        """

    /// A file that cannot be read says why (it said only "cannot read nope.yaml").
    @Test(arguments: [("/nonexistent/nope.yaml", "No such file or directory"), ("/tmp", "it is a folder")])
    func anUnreadableFileSaysWhy(path: String, reason: String) {
        #expect(throws: ConfigurationError(key: "", message: "cannot read \(path): \(reason)")) {
            try ServeConfiguration.load(path: path)
        }
    }

    /// Times the API reports are seconds to the millisecond, not a binary floating-point difference.
    @Test(arguments: [(1.9199999999999999 - 1.0, 0.92), (0.0004, 0.0), (2.0005, 2.001), (12.3456, 12.346)])
    func offsetsAreMilliseconds(seconds: Double, expected: Double) {
        #expect(CameraService.milliseconds(seconds) == expected)
        #expect("\(CameraService.milliseconds(seconds))" == "\(expected)")
    }

    @Test func theDocumentedExampleParses() throws {
        let configuration = try ServeConfiguration(yaml: Self.example)
        #expect(configuration.listen == ListenAddress(host: "127.0.0.1", port: 8080) && configuration.listen.isLoopback)
        #expect(configuration.state == "/var/lib/pushav" && configuration.spoolCapacityMiB == 1024)
        #expect(configuration.cameras == [CameraConfiguration(
            id: "cam1", source: "rtsp://192.0.2.10/main", live: true, videoStreamID: 1, audioStreamID: 2,
            zones: [MotionZone(id: 1, polygon: [.init(x: 0, y: 0), .init(x: 640, y: 0), .init(x: 640, y: 720), .init(x: 0, y: 720)],
                               sensitivity: 5)],
            analysisSource: "rtsp://192.0.2.10/sub", perZoneSensitivity: true)])
    }

    @Test func defaultsForWhatIsLeftOut() throws {
        let configuration = try ServeConfiguration(yaml: "state: s\ncameras: [{id: a, source: f.mp4}]")
        #expect(configuration.listen.description == "127.0.0.1:8080" && configuration.spoolCapacityMiB == 1024)
        #expect(configuration.cameras[0].live && configuration.cameras[0].videoStreamID == 1 && configuration.cameras[0].audioStreamID == nil)
        #expect(configuration.cameras[0].analysisSource == nil && !configuration.cameras[0].perZoneSensitivity)
    }

    /// (YAML, the error's full text)
    static let refused: [(String, String)] = [
        ("state: s\ncameras: [{id: a, source: f}]\nlisten_port: 80", "listen_port: unknown key (known here: allowedOrigins, cameras, listen, recentRecordingsMiB, retiredDeliveryPatienceSeconds, spoolCapacityMiB, state, tls, tokenFile, uploadMaxBackoffMs)"),
        ("cameras: [{id: a, source: f}]", "state: required"),
        ("state: s", "cameras: required"),
        ("state: s\ncameras: []", "cameras: at least one camera is needed"),
        ("state: s\nlisten: 127.0.0.1\ncameras: [{id: a, source: f}]", #"listen: expected host:port, got "127.0.0.1""#),
        ("state: s\nlisten: 127.0.0.1:70000\ncameras: [{id: a, source: f}]", #"listen: expected host:port with a port 1…65535, got "127.0.0.1:70000""#),
        ("state: s\nspoolCapacityMiB: lots\ncameras: [{id: a, source: f}]", #"spoolCapacityMiB: expected an integer, got "lots""#),
        ("state: s\nspoolCapacityMiB: 0\ncameras: [{id: a, source: f}]", "spoolCapacityMiB: must be 1…1048576, got 0"),
        ("state: s\ncameras: [{id: a, source: f, sauce: g}]", "cameras[0].sauce: unknown key (known here: analysis, analysisSource, audioStreamID, id, keyFrameInterval, live, perZoneSensitivity, source, videoStreamID, zones)"),
        ("state: s\ncameras: [{id: a/b, source: f}]", #"cameras[0].id: use 1…64 of A–Z, a–z, 0–9, - and _ (it is part of API paths), got "a/b""#),
        ("state: s\ncameras: [{id: a, source: f}, {id: a, source: g}]", #"cameras[1].id: "a" is used by an earlier camera"#),
        ("state: s\ncameras: [{id: a}]", "cameras[0].source: required"),
        ("state: s\ncameras: [{id: a, source: f, live: maybe}]", #"cameras[0].live: expected true or false, got "maybe""#),
        ("state: s\ncameras: [{id: a, source: f, analysisSource: [a, b]}]", "cameras[0].analysisSource: expected a string"),
        ("state: s\ncameras: [{id: a, source: f, analysis: some}]", #"cameras[0].analysis: must be all or keyframes, got "some""#),
        ("state: s\ncameras: [{id: a, source: f, perZoneSensitivity: yes-please}]", #"cameras[0].perZoneSensitivity: expected true or false, got "yes-please""#),
        ("state: s\ncameras: [{id: a, source: f, videoStreamID: 2, audioStreamID: 2}]", "cameras[0].audioStreamID: must differ from videoStreamID 2"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,1]]}]}]", "cameras[0].zones[0].polygon: a polygon has 3…12 points (a Zone Management zone), got 2"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,1],[2]]}]}]", "cameras[0].zones[0].polygon[2]: a point is [x, y] in video pixels, both 0…65535"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,1],[1e300,2]]}]}]", "cameras[0].zones[0].polygon[2]: a point is [x, y] in video pixels, both 0…65535"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [" + String(repeating: "[0,0],", count: 12) + "[1,1]]}]}]",
         "cameras[0].zones[0].polygon: a polygon has 3…12 points (a Zone Management zone), got 13"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, name: " + String(repeating: "z", count: 33) + ", polygon: [[0,0],[1,0],[1,1]]}]}]",
         "cameras[0].zones[0].name: at most 32 bytes (a Zone Management zone name), got 33"),
        ("state: s\ncameras: [{id: a, source: f, zones: [" + (1...70).map { "{id: \($0), polygon: [[0,0],[1,0],[1,1]]}" }.joined(separator: ", ") + "]}]",
         "cameras[0].zones: at most 8 zones (the camera's MaxZones), got 70"),
        ("state: s\nretiredDeliveryPatienceSeconds: 0\ncameras: [{id: a, source: f}]", "retiredDeliveryPatienceSeconds: must be 1…604800, got 0"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,0],[1,1]], sensitivity: 12}]}]", "cameras[0].zones[0].sensitivity: must be 1…10, got 12"),
        ("state: s\ncameras: [{id: a, source: f, zones: [{id: 1, polygon: [[0,0],[1,0],[1,1]]}, {id: 1, polygon: [[0,0],[1,0],[1,1]]}]}]", "cameras[0].zones[1].id: zone 1 is listed twice"),
        ("state: [s]\ncameras: [{id: a, source: f}]", "state: expected a string"),
        ("- just\n- a list", "expected a mapping of allowedOrigins, cameras, listen, recentRecordingsMiB, retiredDeliveryPatienceSeconds, spoolCapacityMiB, state, tls, tokenFile, uploadMaxBackoffMs"),
        ("state: s\ncameras: {id: a}", "cameras: expected a list, got a mapping"),
        ("state: 's\ncameras: [", "not valid YAML"),
        ("state: s\ntokenFile: [t]\ncameras: [{id: a, source: f}]", "tokenFile: expected a string"),
        ("state: s\ntls: {certificate: c.pem, key: k.pem}\ncameras: [{id: a, source: f}]", "tls.clientCA: required"),
        ("state: s\ntls: {certificate: c.pem, key: k.pem, clientCA: ca.pem, ca: x}\ncameras: [{id: a, source: f}]",
         "tls.ca: unknown key (known here: certificate, clientCA, key)"),
        ("state: s\ntls: c.pem\ncameras: [{id: a, source: f}]", "tls: expected a mapping of certificate, clientCA, key"),
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

    @Test func tokenFileAndTLSParse() throws {
        let configuration = try ServeConfiguration(yaml: """
            listen: 0.0.0.0:8443
            tokenFile: /etc/pushav/api-token
            tls: {certificate: /etc/pushav/api.pem, key: /etc/pushav/api.key, clientCA: /etc/pushav/ca.pem}
            state: s
            cameras: [{id: a, source: f}]
            """)
        #expect(configuration.tokenFile == "/etc/pushav/api-token")
        #expect(configuration.tls == APITLSFiles(certificate: "/etc/pushav/api.pem", key: "/etc/pushav/api.key",
                                                 clientCA: "/etc/pushav/ca.pem"))
        #expect(throws: Never.self) { try configuration.checkAPIAccess() }
    }

    /// (host, loopback): only what cannot leave the machine counts; a name other than localhost might resolve anywhere.
    @Test(arguments: [
        ("127.0.0.1", true), ("127.8.9.10", true), ("localhost", true), ("LOCALHOST", true), ("::1", true),
        ("0:0:0:0:0:0:0:1", true), ("0.0.0.0", false), ("::", false), ("192.168.1.10", false), ("::ffff:127.0.0.1", false),
        ("127.example.com", false), ("128.0.0.1", false), ("example.com", false), ("fe80::1", false),
    ])
    func loopbackAddresses(host: String, loopback: Bool) {
        #expect(ListenAddress(host: host, port: 8080).isLoopback == loopback)
    }

    /// A non-loopback address needs a token or mutual TLS; loopback needs neither.
    @Test(arguments: [
        ("127.0.0.1:8080", false, false, true), ("[::1]:8080", false, false, true), ("0.0.0.0:8080", false, false, false),
        ("0.0.0.0:8080", true, false, true), ("0.0.0.0:8080", false, true, true), ("192.0.2.7:8080", true, true, true),
    ])
    func accessNeededOffLoopback(listen: String, token: Bool, tls: Bool, accepted: Bool) throws {
        var yaml = "listen: \"\(listen)\"\nstate: s\ncameras: [{id: a, source: f}]\n"
        if token { yaml += "tokenFile: t\n" }
        if tls { yaml += "tls: {certificate: c, key: k, clientCA: ca}\n" }
        let configuration = try ServeConfiguration(yaml: yaml)
        if accepted {
            #expect(throws: Never.self) { try configuration.checkAPIAccess() }
        } else {
            #expect {
                try configuration.checkAPIAccess()
            } throws: { error in
                "\(error)" == "listen: \(listen) is not a loopback address; the control API needs a bearer token (tokenFile, or --token-file) or mutual TLS (tls) there"
            }
        }
    }
}

/// `allowedOrigins`: exact web origins, nothing that a browser would never send as `Origin`.
@Suite struct AllowedOriginsConfigurationTests {
    @Test func originsParse() throws {
        let configuration = try ServeConfiguration(
            yaml: "state: s\nallowedOrigins: [https://controller.example:8443, http://127.0.0.1:3000]\ncameras: [{id: a, source: f}]")
        #expect(configuration.allowedOrigins == ["https://controller.example:8443", "http://127.0.0.1:3000"])
    }

    @Test(arguments: ["https://controller.example/", "ftp://controller.example", "controller.example", "https://a.example/ui"])
    func notAnOrigin(origin: String) {
        #expect(throws: ConfigurationError.self) {
            try ServeConfiguration(yaml: "state: s\nallowedOrigins: [\"\(origin)\"]\ncameras: [{id: a, source: f}]")
        }
    }
}
