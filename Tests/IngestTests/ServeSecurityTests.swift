import AsyncHTTPClient
import Foundation
import NIOHTTP1
import NIOSSL
import Testing
import TestSupport

/// `pushav serve`'s control API as a network sees it: the real binary, its configuration and its listening socket.
@Suite(.serialized) struct ServeSecurityTests {
    static let token = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

    /// A start `pushav serve` must refuse: the configuration's extra lines (and command-line arguments), and a
    /// piece of the one error line it prints.
    struct RefusedStart: Sendable, CustomStringConvertible {
        var name: String
        var listenHost = "0.0.0.0"
        var settings = ""
        var arguments: [String] = []
        var mentions: String
        var description: String { name }
    }

    static let refusedStarts: [RefusedStart] = [
        RefusedStart(name: "all addresses, no token or TLS", mentions: "is not a loopback address; the control API needs a bearer token"),
        RefusedStart(name: "IPv6 any, no token or TLS", listenHost: "::", mentions: "is not a loopback address"),
        RefusedStart(name: "--listen off loopback", listenHost: "127.0.0.1", arguments: ["--listen", "0.0.0.0:9"],
                     mentions: "listen: 0.0.0.0:9 is not a loopback address"),
        RefusedStart(name: "token file missing", settings: "tokenFile: /nonexistent/pushav-token",
                     mentions: "tokenFile: cannot read the token file /nonexistent/pushav-token"),
        RefusedStart(name: "token too short", settings: "tokenFile: {dir}/short-token", mentions: "shorter than 16 characters"),
        RefusedStart(name: "--token-file unreadable", arguments: ["--token-file", "/nonexistent/t"],
                     mentions: "--token-file: cannot read the token file /nonexistent/t"),
        RefusedStart(name: "TLS certificate missing",
                     settings: "tls: {certificate: /nonexistent/api.pem, key: {dir}/pki/server.key, clientCA: {dir}/pki/ca.pem}",
                     mentions: "tls.certificate: cannot read /nonexistent/api.pem"),
        RefusedStart(name: "TLS client CA not a certificate",
                     settings: "tls: {certificate: {dir}/pki/server.pem, key: {dir}/pki/server.key, clientCA: {dir}/pki/server.key}",
                     mentions: "tls.clientCA: {dir}/pki/server.key holds no PEM certificate"),
        RefusedStart(name: "TLS key of another certificate",
                     settings: "tls: {certificate: {dir}/pki/server.pem, key: {dir}/pki/client.key, clientCA: {dir}/pki/ca.pem}",
                     mentions: "tls: cannot serve TLS with"),
    ]

    /// Each refused start exits non-zero by itself, before opening anything, with one line that says why.
    @Test(arguments: refusedStarts)
    func refusesToStartWithoutAccessControl(_ start: RefusedStart) async throws {
        let directory = try Fixtures.scratchDirectory("refused-\(start.name)")
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        try await BlockingWork.run { try Data("too-short\n".utf8).write(to: directory.appendingPathComponent("short-token")) }
        let fill = { (text: String) in text.replacingOccurrences(of: "{dir}", with: directory.path) }
        let config = directory.appendingPathComponent("serve.yaml")
        let yaml = """
            listen: "\(start.listenHost.contains(":") ? "[\(start.listenHost)]" : start.listenHost):\(try LocalPorts.freeTCPPort())"
            state: \(directory.appendingPathComponent("state").path)
            \(fill(start.settings))
            cameras: [{id: cam1, source: \(TestPaths.media("a_720p30_h264_main.mp4").path)}]
            """
        try await BlockingWork.run { try Data(yaml.utf8).write(to: config) }
        let process = try ChildProcess.start(
            Fixtures.pushav.path, ["serve", "--config", config.path] + start.arguments,
            log: directory.appendingPathComponent("serve.log"), environment: TestPaths.isolatedEnvironment())
        let exited = try await process.waitForExit(timeout: .seconds(20))
        if !exited { process.kill() }
        try #require(exited, "pushav serve started: \(process.output)")
        #expect(process.exitedNormally && process.status != 0, "status \(process.status)")
        let lines = process.output.split(separator: "\n")
        #expect(lines.count == 1, "\(process.output)")
        #expect(process.output.contains(fill(start.mentions)), "\(process.output)")
        let stateCreated = try await BlockingWork.run {
            FileManager.default.fileExists(atPath: directory.appendingPathComponent("state").path)
        }
        #expect(!stateCreated, "the state folder was created before the refusal")
    }

    /// Configurations past a limit (issue 28: 70 zones crashed the detector at every start, a crash loop under
    /// systemd): one line naming the key and the limit, exit status 2, nothing opened.
    @Test(arguments: [
        ("zones: [" + (1...70).map { "{id: \($0), polygon: [[0,0],[9,0],[9,9]]}" }.joined(separator: ", ") + "]",
         "cameras[0].zones: at most 8 zones (the camera's MaxZones), got 70"),
        ("zones: [{id: 1, polygon: [[0,0],[1e300,0],[9,9]]}]", "cameras[0].zones[0].polygon[1]: a point is [x, y] in video pixels, both 0…65535"),
        ("keyFrameInterval: 0", "cameras[0].keyFrameInterval: must be 1…65535, got 0"),
    ])
    func aConfigurationPastALimitExitsWithStatus2(camera: String, mentions: String) async throws {
        let directory = try Fixtures.scratchDirectory("badconfig")
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("serve.yaml")
        let yaml = """
            state: \(directory.appendingPathComponent("state").path)
            cameras: [{id: cam1, source: \(TestPaths.media("a_720p30_h264_main.mp4").path), \(camera)}]
            """
        try await BlockingWork.run { try Data(yaml.utf8).write(to: config) }
        let process = try ChildProcess.start(Fixtures.pushav.path, ["serve", "--config", config.path],
                                             log: directory.appendingPathComponent("serve.log"),
                                             environment: TestPaths.isolatedEnvironment())
        let exited = try await process.waitForExit(timeout: .seconds(20))
        if !exited { process.kill() }
        try #require(exited, "pushav serve started: \(process.output)")
        #expect(process.exitedNormally && process.status == 2, "status \(process.status): \(process.output)")
        #expect(process.output.split(separator: "\n").count == 1 && process.output.contains(mentions), "\(process.output)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("state").path))
    }

    /// Off loopback with a token: every request without it is refused, over the network, before any route runs.
    @Test(arguments: [false, true])
    func tokenIsRequiredOffLoopback(fromCommandLine: Bool) async throws {
        let directory = try Fixtures.scratchDirectory("token-\(fromCommandLine)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokenFile = directory.appendingPathComponent("api-token")
        try await BlockingWork.run { try Data("\(Self.token)\n".utf8).write(to: tokenFile) }
        let serve = try await Serve(
            directory: directory, source: TestPaths.media("a_720p30_h264_main.mp4").path, listenHost: "0.0.0.0",
            settings: fromCommandLine ? "" : "tokenFile: \(tokenFile.path)",
            arguments: fromCommandLine ? ["--token-file", tokenFile.path] : [])
        do {
            for (authorization, status) in [(nil, 401), ("Bearer wrong-token-0123456789", 401), ("Bearer \(Self.token)", 200)] as [(String?, UInt)] {
                for path in ["/health", "/v1/cameras", "/openapi.json", "/v1/cameras/cam1/attributes/supportedFormats", "/no/such/route"] {
                    let (got, text) = try await serve.request(.GET, path, headers: authorization.map { [("Authorization", $0)] } ?? [])
                    let expected: UInt = path == "/no/such/route" && status == 200 ? 404 : status
                    #expect(got == expected, "\(path) with \(authorization ?? "no token"): \(got) \(text)")
                    if got == 401 { #expect(text.contains("UNSUPPORTED_ACCESS")) }
                }
            }
            let (status, _) = try await serve.request(.POST, "/v1/tls/endpoints", #"{"hostname":"h","port":1}"#)
            #expect(status == 401)
            // The event stream: refused without the token, subscribed with it.
            let (eventsStatus, _) = try await serve.request(.GET, "/v1/cameras/cam1/events")
            #expect(eventsStatus == 401)
            let feed = try await EventFeed.start(client: serve.client, url: serve.api + "/v1/cameras/cam1/events",
                                                 authorization: "Bearer \(Self.token)")
            feed.stop()
        } catch {
            try await serve.shutdown()
            throw error
        }
        try await serve.shutdown()
    }

    /// A request the real service must refuse, with the token configured on loopback: (name, method, path, body,
    /// Authorization, HTTP status, a piece of the error body's message).
    static let refusedRequests: [(String, HTTPMethod, String, String?, String?, UInt, String)] = [
        ("no token", .GET, "/v1/cameras", nil, nil, 401, "a bearer token is required"),
        ("wrong token", .POST, "/v1/cameras/cam1/commands/findTransport", "{}", "Bearer not-the-token-0123456789", 401, "not valid"),
        ("malformed JSON", .POST, "/v1/cameras/cam1/commands/findTransport", #"{"connectionID":"#, "Bearer \(token)", 400, "body: not a valid JSON document"),
        ("wrong type", .POST, "/v1/cameras/cam1/commands/deallocatePushTransport", #"{"connectionID":"7"}"#, "Bearer \(token)", 400,
         "connectionID: expected an integer"),
        ("out of range", .PUT, "/v1/cameras/cam1/attributes/recordingMicrophoneMuted", #"{"value":2}"#, "Bearer \(token)", 400, "value: "),
        ("unknown camera", .GET, "/v1/cameras/cam9/attributes/supportedFormats", nil, "Bearer \(token)", 404, #"no camera "cam9""#),
        ("body over 64 KiB", .POST, "/v1/tls/endpoints", #"{"hostname":""# + String(repeating: "h", count: 70_000) + #""}"#,
         "Bearer \(token)", 413, "larger than 65536 bytes"),
    ]

    /// The body limit, the field-naming 400s, the unknown camera's 404 and the token's 401 as the real service
    /// answers them over its socket, each with the error body.
    @Test func badRequestsGetTheirFourHundred() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokenFile = directory.appendingPathComponent("api-token")
        try await BlockingWork.run { try Data("\(Self.token)\n".utf8).write(to: tokenFile) }
        let serve = try await Serve(directory: directory, source: TestPaths.media("a_720p30_h264_main.mp4").path,
                                    settings: "tokenFile: \(tokenFile.path)")
        do {
            for (name, method, path, body, authorization, expected, mentions) in Self.refusedRequests {
                let (status, text) = try await serve.request(method, path, body, headers: authorization.map { [("Authorization", $0)] } ?? [])
                #expect(status == expected, "\(name): \(status) \(text)")
                let error = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                #expect((error?["message"] as? String)?.contains(mentions) == true, "\(name): \(text)")
            }
            #expect(try await serve.request(.GET, "/health", headers: [("Authorization", "Bearer \(Self.token)")]).status == 200)
        } catch {
            try await serve.shutdown()
            throw error
        }
        try await serve.shutdown()
    }

    /// With `tls`, the API speaks HTTPS and completes the handshake only with a client certificate from `clientCA`.
    @Test func mutualTLSRequiresAClientCertificate() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
        // Client configurations that trust the test CA: with the client certificate, with one of another CA, with none.
        let (withCertificate, stranger, noCertificate) = try await BlockingWork.run { () throws -> (TLSConfiguration, TLSConfiguration, TLSConfiguration) in
            var trusting = TLSConfiguration.makeClientConfiguration()
            trusting.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pki.caPEM))
            var client = trusting
            client.certificateChain = try NIOSSLCertificate.fromPEMBytes(pki.clientPEM).map { .certificate($0) }
            client.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: pki.clientKey, format: .pem))
            var stranger = trusting
            stranger.certificateChain = try NIOSSLCertificate.fromPEMBytes(pki.strangerPEM).map { .certificate($0) }
            stranger.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: pki.strangerKey, format: .pem))
            return (client, stranger, trusting)
        }
        let serve = try await Serve(
            directory: directory, source: TestPaths.media("a_720p30_h264_main.mp4").path, listenHost: "0.0.0.0",
            settings: "tls: {certificate: \(pki.path("server.pem")), key: \(pki.path("server.key")), clientCA: \(pki.path("ca.pem"))}",
            clientTLS: withCertificate)
        do {
            // Hummingbird's own "listening on" line can come before pushav's, which names the scheme.
            try await Fixtures.waitUntil("pushav serve's https line", timeout: .seconds(10)) {
                serve.process.output.contains("pushav serve: listening on") && serve.process.output.contains("(https)")
            }
            #expect(try await serve.request(.GET, "/health").status == 200)
            for (name, configuration) in [("no client certificate", noCertificate), ("a certificate of another CA", stranger)] {
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: configuration))
                let outcome: String
                do {
                    let response = try await client.execute(HTTPClientRequest(url: serve.api + "/health"), timeout: .seconds(10))
                    outcome = "answered \(response.status.code)"
                } catch {
                    outcome = "refused"
                }
                try await client.shutdown()
                #expect(outcome == "refused", "\(name)")
            }
            // Plain HTTP on the TLS port gets no answer from the API.
            let plain = HTTPClient(eventLoopGroupProvider: .singleton)
            let plainStatus = try? await plain.execute(
                HTTPClientRequest(url: serve.api.replacingOccurrences(of: "https:", with: "http:") + "/health"),
                timeout: .seconds(10)).status.code
            try await plain.shutdown()
            #expect(plainStatus == nil || plainStatus == 400, "\(String(describing: plainStatus))")
        } catch {
            try await serve.shutdown()
            throw error
        }
        try await serve.shutdown()
    }

    /// Path parameters and body fields that look like paths never put a file outside the state folder: each attempt
    /// that would name a local path is a 4xx; a connection whose ingest URL has dot segments records and spools
    /// under the state folder; afterwards the test folder holds only what the test and the state folder put there.
    /// (Plays the media in real time: one of Scripts/test's serve suites.)
    @Test func requestsCannotReachOutsideTheStateFolder() async throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await Serve(directory: directory, source: TestPaths.media("a_720p30_h264_main.mp4").path)
        do {
            let endpoint = try await serve.request(.POST, "/v1/tls/endpoints", JSON.text([
                "hostname": "../../escape-tls", "port": 443, "caCertificate": "", "clientCertificate": "", "clientKey": "",
            ]))
            #expect((400..<500).contains(endpoint.status), "\(endpoint)")
            // A real TLS endpoint, so that only the path-like field can be what an allocation is refused for.
            let pki = try await TestPKI.make(in: directory.appendingPathComponent("pki"))
            let endpointID = try await serve.addTLSEndpoint(pki: pki, port: 9)
            /// The video track named by a VideoStreams entry: the name becomes a folder of the recording and the spool.
            func streams(_ options: inout [String: Any], video name: String) {
                options["videoStreamID"] = nil
                options["videoStreams"] = [["videoStreamName": name, "videoStreamID": 1]]
            }
            func options(_ change: (inout [String: Any]) -> Void) -> String {
                var options = TransportJSON.options(endpointID: endpointID, ingestPort: 9, trigger: .continuous)
                change(&options)
                return JSON.text(["transportOptions": options])
            }
            let attempts: [(HTTPMethod, String, String?)] = [
                (.GET, "/v1/cameras/..%2F..%2Fescape/attributes/supportedFormats", nil),
                (.GET, "/v1/cameras/%2e%2e/attributes/supportedFormats", nil),
                (.GET, "/v1/cameras/../../escape/events", nil),
                (.PUT, "/v1/cameras/..%2Fescape/attributes/recordingMicrophoneMuted", #"{"value":true}"#),
                (.GET, "/v1/tls/endpoints/..%2F..%2Fescape", nil),
                (.DELETE, "/v1/tls/endpoints/%2e%2e", nil),
                (.POST, "/v1/cameras/cam1/commands/..%2F..%2Fescape", "{}"),
                (.POST, "/v1/cameras/cam1/commands/allocatePushTransport", options { streams(&$0, video: "../../escape") }),
                (.POST, "/v1/cameras/cam1/commands/allocatePushTransport", options { streams(&$0, video: "..") }),
                (.POST, "/v1/cameras/cam1/commands/allocatePushTransport", options { streams(&$0, video: "a/escape") }),
                (.POST, "/v1/cameras/cam1/commands/allocatePushTransport", options { $0["url"] = "file:///tmp/escape/" }),
            ]
            for (method, path, body) in attempts {
                let (status, text) = try await serve.request(method, path, body)
                #expect((400..<500).contains(status), "\(method) \(path) \(body ?? ""): \(status) \(text)")
            }
            // The same options with a plain track name are accepted.
            let control = try await serve.request(.POST, "/v1/cameras/cam1/commands/allocatePushTransport",
                                                  options { streams(&$0, video: "main") })
            #expect(control.status == 200, "\(control.text)")
            // Dot segments in the ingest URL are the remote server's business (RFC 3986 allows them): accepted, and
            // what the connection records is spooled under the state folder whatever the URL says. No ingest
            // listens on port 9, so the objects stay in the spool.
            let dotted = try await serve.request(.POST, "/v1/cameras/cam1/commands/allocatePushTransport",
                                                 options { $0["url"] = "https://localhost:9/../../escape/" })
            #expect(dotted.status == 200, "\(dotted.text)")
            let connectionID = try #require(
                ((try JSONSerialization.jsonObject(with: Data(dotted.text.utf8)) as? [String: Any])?["transportConfiguration"]
                    as? [String: Any])?["connectionID"] as? Int)
            try await serve.setActive(connectionID)
            try await Fixtures.waitUntil("a spooled object", timeout: .seconds(30)) {
                try await BlockingWork.run {
                    let spool = directory.appendingPathComponent("state/spool/objects").path
                    return (FileManager.default.enumerator(atPath: spool)?.allObjects as? [String] ?? []).contains { $0.hasSuffix(".m4s") }
                }
            }
            #expect(serve.process.isRunning)
        } catch {
            try await serve.shutdown()
            throw error
        }
        try await serve.shutdown()
        let found = try await BlockingWork.run { () -> [String] in
            let root = directory.standardizedFileURL.resolvingSymlinksInPath().path
            let enumerator = FileManager.default.enumerator(atPath: root)
            var paths: [String] = []
            while let path = enumerator?.nextObject() as? String { paths.append(path) }
            return paths
        }
        let outside = found.filter { !$0.hasPrefix("state") && !$0.hasPrefix("pki") && !["serve.yaml", "serve-1.log"].contains($0) }
        #expect(outside.isEmpty, "files outside the state folder: \(outside)")
        #expect(!found.contains { $0.contains("escape") }, "\(found.filter { $0.contains("escape") })")
        let escaped = try await BlockingWork.run {
            FileManager.default.fileExists(atPath: directory.deletingLastPathComponent().appendingPathComponent("escape").path)
                || FileManager.default.fileExists(atPath: "/tmp/escape")
        }
        #expect(!escaped)
    }
}
