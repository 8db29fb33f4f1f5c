import Foundation
import NIOHTTP1
import Testing
import TestSupport

extension ServeEndToEndTests {
    /// TC-PAVST-2.15 (UpdateMotionZoneOptions, provisional) step by step against the real `pushav serve`, with the
    /// camera's PERZONESENS feature off (the default) and on, its zones created through Zone Management's
    /// CreateTwoDCartesianZone as the official script creates them. Each step expects the official status: the HTTP
    /// mapping carries it in the error body (`status`, and `clusterStatus` for the cluster's own codes).
    @Test(arguments: [false, true])
    func tcPAVST215UpdateMotionZoneOptions(perZoneSensitivity: Bool) async throws {
        try await ConformanceRun.run(perZoneSensitivity: perZoneSensitivity) { run in
            let serve = run.serve
            // Precondition: the FeatureMap, and two motion zones made with CreateTwoDCartesianZone.
            let featureMap = try await serve.json(.GET, "/v1/cameras/cam1/attributes/featureMap")["value"] as? Int
            #expect(featureMap == (perZoneSensitivity ? 1 : 0))
            let zone1 = try await run.createZone("Zone1", x: 10), zone2 = try await run.createZone("Zone2", x: 30)
            func zoneEntry(_ zone: Any) -> [String: Any] { perZoneSensitivity ? ["zone": zone, "sensitivity": 4] : ["zone": zone] }

            // Step 1: a Motion transport (the helper's 2.11 allocation with TriggerType Motion).
            var options = TransportJSON.options(endpointID: run.endpointID, ingestPort: run.server.port, path: "streams/1/",
                                                trigger: .motion(initial: 5, augmentation: 2, max: 10, blind: 1, preRollMs: 4000),
                                                segmentMs: 4000, chunkMs: 4)
            var trigger = try #require(options["triggerOptions"] as? [String: Any])
            trigger["motionZones"] = [zoneEntry(zone1)]
            if perZoneSensitivity { trigger["motionSensitivity"] = nil }
            options["triggerOptions"] = trigger
            options["expiryTime"] = 3600
            let id = try await run.serve.allocate(options)

            // Step 2: Zones and MaxZones.
            let zoneManagement = try await serve.json(.GET, "/v1/cameras/cam1/zoneManagement/attributes")
            let maxZones = try #require(zoneManagement["maxZones"] as? Int)
            #expect((zoneManagement["zones"] as? [[String: Any]])?.compactMap { $0["zoneID"] as? Int } == [zone1, zone2])

            func update(_ body: [String: Any], fabric: Int = 1) async throws -> String {
                try await run.command("updateMotionZoneOptions", body, fabric: fabric)
            }
            func findTrigger() async throws -> [String: Any] {
                let options = try #require(try await run.find(id).first?["transportOptions"] as? [String: Any])
                return try #require(options["triggerOptions"] as? [String: Any])
            }

            #expect(try await update(["connectionID": id + 100]) == "NOT_FOUND", "step 3")
            #expect(try await update(["connectionID": id], fabric: 2) == "NOT_FOUND", "step 4 (another fabric)")
            #expect(try await update(["connectionID": id, "motionZones": [zoneEntry(zone1), zoneEntry(zone1)]]) == "ALREADY_EXISTS",
                    "step 5")
            // Step 6: MaxZones + 1 entries. The script wants MaxZones + 1 motion zones to exist, which a camera holding
            // at most MaxZones zones never has (the script then skips the step); MaxZones zones and the null zone
            // ("outside every zone") make the same MaxZones + 1 valid entries.
            var temporary: [Int] = []
            for index in 2..<maxZones { temporary.append(try await run.createZone("Temp\(index)", x: (index + 4) * 10)) }
            let many = ([zone1, zone2] + temporary).map(zoneEntry) + [zoneEntry(NSNull())]
            #expect(many.count == maxZones + 1)
            #expect(try await update(["connectionID": id, "motionZones": many]) == "DYNAMIC_CONSTRAINT_ERROR", "step 6")
            for zone in temporary {
                #expect(try await run.status("/v1/cameras/cam1/zoneManagement/commands/removeZone", ["zoneID": zone]) == "SUCCESS")
            }
            #expect(try await update(["connectionID": id, "motionZones": [zoneEntry(9999)]]) == "FAILURE/5", "step 7: InvalidZone")
            #expect(try await update(["connectionID": id, "motionZones": [[String: Any]]()]) == "SUCCESS", "step 8")
            #expect((try await findTrigger()["motionZones"] as? [Any])?.isEmpty == true, "step 9")
            #expect(try await update(["connectionID": id, "motionZones": [zoneEntry(zone1), zoneEntry(zone2)]]) == "SUCCESS", "step 10")
            let zones = (try await findTrigger()["motionZones"] as? [[String: Any]])?.compactMap { $0["zone"] as? Int }
            #expect(zones == [zone1, zone2], "step 11")
            if perZoneSensitivity {
                #expect(try await update(["connectionID": id, "motionSensitivity": 5]) == "INVALID_COMMAND", "step 15")
            } else {
                #expect(try await update(["connectionID": id, "motionSensitivity": 11]) == "CONSTRAINT_ERROR", "step 12")
                #expect(try await update(["connectionID": id, "motionSensitivity": 5]) == "SUCCESS", "step 13")
                #expect(try await findTrigger()["motionSensitivity"] as? Int == 5, "step 14")
            }
            // Zone Management: a zone a transport names cannot go.
            #expect(try await run.status("/v1/cameras/cam1/zoneManagement/commands/removeZone", ["zoneID": zone2]) == "INVALID_IN_STATE")
        }
    }

    /// TC-PAVST-2.3 / 2.11 (AllocatePushTransport) through the real `pushav serve`, with PERZONESENS off and on: each
    /// portable step with the status the official script asserts. Not portable: steps 3–5 (the camera's streams are
    /// serve.yaml's, there is no CameraAvStreamManagement to allocate or remove them).
    @Test(arguments: [false, true])
    func tcPAVST23Allocate(perZoneSensitivity: Bool) async throws {
        try await ConformanceRun.run(perZoneSensitivity: perZoneSensitivity) { run in
            let serve = run.serve
            let zone = try await run.createZone("Zone1", x: 10)
            func entry(_ zone: Any) -> [String: Any] { perZoneSensitivity ? ["zone": zone, "sensitivity": 4] : ["zone": zone] }
            /// A Motion transport naming `zones`, with MotionSensitivity 5 unless PERZONESENS forbids it.
            func motion(_ zones: [[String: Any]]?, timeControl: [String: Any]? = ["initialDuration": 10, "augmentationDuration": 5,
                                                                                  "maxDuration": 20, "blindDuration": 1]) -> [String: Any] {
                var options = run.continuous()
                var trigger: [String: Any] = ["triggerType": 1, "maxPreRollLen": 4000]
                trigger["motionZones"] = zones ?? NSNull()
                if !perZoneSensitivity { trigger["motionSensitivity"] = 5 }
                if let timeControl { trigger["motionTimeControl"] = timeControl }
                options["triggerOptions"] = trigger
                return options
            }
            func with(_ options: [String: Any], _ change: (inout [String: Any]) -> Void) -> [String: Any] {
                var options = options
                change(&options)
                return options
            }
            func trigger(_ options: [String: Any], _ key: String, _ value: Any?) -> [String: Any] {
                with(options) { options in
                    var trigger = options["triggerOptions"] as? [String: Any] ?? [:]
                    trigger[key] = value
                    options["triggerOptions"] = trigger
                }
            }
            func cmaf(_ key: String, _ value: Any) -> [String: Any] {
                with(run.continuous()) { options in
                    var container = options["containerOptions"] as? [String: Any] ?? [:]
                    var cmaf = container["cmafContainerOptions"] as? [String: Any] ?? [:]
                    cmaf[key] = value
                    container["cmafContainerOptions"] = cmaf
                    options["containerOptions"] = container
                }
            }

            // Steps 6–7: a valid allocation answers its configuration and is Inactive in CurrentConnections.
            let id = try await run.serve.allocate(run.continuous())
            #expect(try await run.find(id).first?["transportStatus"] as? Int == 1)
            let current = try await serve.json(.GET, "/v1/cameras/cam1/attributes/currentConnections")["value"] as? [[String: Any]]
            #expect(current?.count == 1 && current?.first?["transportStatus"] as? Int == 1)
            // Steps 8–9: Zones and MaxZones.
            let zoneManagement = try await serve.json(.GET, "/v1/cameras/cam1/zoneManagement/attributes")
            let maxZones = try #require(zoneManagement["maxZones"] as? Int)

            let steps: [(step: String, options: [String: Any], expected: String)] = [
                ("11 TLSEndpointID not provisioned", with(run.continuous()) { $0["tlsEndpointID"] = 5 }, "FAILURE/2"),
                ("12 IngestMethod unknown", with(run.continuous()) { $0["ingestMethod"] = 3 }, "CONSTRAINT_ERROR"),
                ("13 http:// URL", with(run.continuous()) { $0["url"] = "http://localhost:\(run.server.port)/streams/1/" }, "FAILURE/4"),
                ("14 TriggerType unknown", trigger(run.continuous(), "triggerType", 3), "CONSTRAINT_ERROR"),
                ("15 a null zone", motion([entry(NSNull())]), "SUCCESS"),
                ("16 a zone twice", motion([entry(zone), entry(zone)]), "ALREADY_EXISTS"),
                ("17 two null zones", motion([entry(NSNull()), entry(NSNull())]), "ALREADY_EXISTS"),
                ("18 an unknown zone", motion([entry(14)]), "FAILURE/5"),
                ("19 an unknown video stream", with(run.continuous()) { $0["videoStreamID"] = 9 }, "FAILURE/3"),
                ("20 an unknown audio stream", with(run.continuous()) { $0["audioStreamID"] = 9 }, "FAILURE/3"),
                ("21 no stream at all", with(run.continuous()) { $0["videoStreamID"] = nil }, "INVALID_COMMAND"),
                ("22 video stream null (automatic)", with(run.continuous()) { $0["videoStreamID"] = NSNull() }, "SUCCESS"),
                // MaxZones + 1 distinct entries (the count is checked before the zones are looked up).
                ("23 MaxZones + 1 zones", motion([entry(zone), entry(NSNull())] + (1..<maxZones).map { entry(1000 + $0) }),
                 "DYNAMIC_CONSTRAINT_ERROR"),
                perZoneSensitivity
                    ? ("24 PERZONESENS and MotionSensitivity", trigger(motion([entry(zone)]), "motionSensitivity", 5), "INVALID_COMMAND")
                    : ("25 MotionSensitivity 11", trigger(motion([entry(zone)]), "motionSensitivity", 11), "CONSTRAINT_ERROR"),
                ("26 Motion without MotionTimeControl", motion([entry(zone)], timeControl: nil), "INVALID_COMMAND"),
                ("27 InitialDuration 0", motion([entry(zone)], timeControl: ["initialDuration": 0, "augmentationDuration": 5,
                                                                           "maxDuration": 20, "blindDuration": 1]), "CONSTRAINT_ERROR"),
                ("28 MaxDuration 0", motion([entry(zone)], timeControl: ["initialDuration": 10, "augmentationDuration": 5,
                                                                        "maxDuration": 0, "blindDuration": 1]), "CONSTRAINT_ERROR"),
                perZoneSensitivity
                    ? ("29 empty MotionZones (no MotionSensitivity with PERZONESENS)", motion([]), "SUCCESS")
                    : ("29 empty MotionZones, MotionSensitivity null", trigger(motion([]), "motionSensitivity", NSNull()), "SUCCESS"),
                ("30 empty MotionZones", motion([]), "SUCCESS"),
                ("31 StreamUsage unknown", with(run.continuous()) { $0["streamUsage"] = 9 }, "CONSTRAINT_ERROR"),
                ("32 CMAF without CMAFContainerOptions", with(run.continuous()) { $0["containerOptions"] = ["containerType": 0] }, "INVALID_COMMAND"),
                ("33 SegmentDuration not a multiple of KeyFrameInterval", cmaf("segmentDuration", 1001), "FAILURE/9"),
                ("34 StreamUsage Internal", with(run.continuous()) { $0["streamUsage"] = 0 }, "FAILURE/10"),
                ("35 MaxPreRollLen below KeyFrameInterval", trigger(motion([entry(zone)]), "maxPreRollLen", 200), "FAILURE/12"),
            ]
            for step in steps {
                #expect(try await run.command("allocatePushTransport", ["transportOptions": step.options]) == step.expected,
                        "step \(step.step)")
            }
        }
    }
}

/// One official test's set-up: an ingest applying the CSA server's strict rules, `pushav serve` with one camera
/// (PERZONESENS as asked), and a TLS endpoint for that ingest; torn down whatever the body does.
struct ConformanceRun {
    let ingest: ServeIngest
    let server: RunningServer
    let serve: Serve
    let endpointID: Int
    let perZoneSensitivity: Bool

    static func run(perZoneSensitivity: Bool = false, label: String = #function,
                    _ body: (ConformanceRun) async throws -> Void) async throws {
        let ingest = try await ServeIngest(label)
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve = try await Serve(directory: ingest.directory, source: TestPaths.media("a_720p30_h264_main.mp4").path,
                                    camera: perZoneSensitivity ? "perZoneSensitivity: true" : "")
        do {
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            try await body(ConformanceRun(ingest: ingest, server: server, serve: serve, endpointID: endpointID,
                                          perZoneSensitivity: perZoneSensitivity))
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }

    /// POSTs `body` to `path`; the Matter status it answers: "SUCCESS", the error body's status, or
    /// "FAILURE/<cluster status>" for the cluster's own codes.
    func status(_ path: String, _ body: [String: Any], fabric: Int = 1) async throws -> String {
        let (code, text) = try await serve.request(.POST, path, JSON.text(body), headers: [("X-Fabric-Index", "\(fabric)")])
        if code == 200 { return "SUCCESS" }
        let error = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(code) \(text)")
        let name = try #require(error["status"] as? String, "\(text)")
        return (error["clusterStatus"] as? Int).map { "\(name)/\($0)" } ?? name
    }

    /// A cluster command's Matter status.
    func command(_ name: String, _ body: [String: Any], fabric: Int = 1) async throws -> String {
        try await status("/v1/cameras/cam1/commands/\(name)", body, fabric: fabric)
    }

    /// CreateTwoDCartesianZone with a 10-pixel square at `x` (as the official scripts make their zones); its ZoneID.
    func createZone(_ name: String, x: Int) async throws -> Int {
        let vertices = [[x, 10], [x + 10, 10], [x + 10, 20], [x, 20]].map { ["x": $0[0], "y": $0[1]] }
        let answer = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/createTwoDCartesianZone",
                                          JSON.text(["zone": ["name": name, "use": 0, "vertices": vertices, "color": "#00FFFF"]]))
        return try #require(answer["zoneID"] as? Int)
    }

    /// The helper's default allocation (TC_PAVSTTestBase): Continuous, Interface-1, ChunkDuration 4, SegmentDuration
    /// 4000, TrackName " ", ExpiryTime 10.
    func continuous(expiryTime: Int = 10) -> [String: Any] {
        ["streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": endpointID,
         "url": "https://localhost:\(server.port)/streams/1/", "triggerOptions": ["triggerType": 2],
         "ingestMethod": 0, "expiryTime": expiryTime,
         "containerOptions": ["containerType": 0, "cmafContainerOptions": [
             "cmafInterface": 0, "chunkDuration": 4, "segmentDuration": 4000, "sessionGroup": 3, "trackName": " "]]]
    }

    /// A Command transport with MaxPreRollLen 4000.
    func commandTransport() -> [String: Any] {
        var options = continuous(expiryTime: 3600)
        options["triggerOptions"] = ["triggerType": 0, "maxPreRollLen": 4000]
        return options
    }

    /// FindTransport's configurations for the caller's fabric (`connectionID` nil: all).
    func find(_ connectionID: Int? = nil, fabric: Int = 1) async throws -> [[String: Any]] {
        let (code, text) = try await serve.request(.POST, "/v1/cameras/cam1/commands/findTransport",
                                                   JSON.text(["connectionID": connectionID.map { $0 as Any } ?? NSNull()]),
                                                   headers: [("X-Fabric-Index", "\(fabric)")])
        guard code == 200 else { return [] }
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return answer["transportConfigurations"] as? [[String: Any]] ?? []
    }
}

extension ServeEndToEndTests {
    /// TC-PAVST-2.1: SupportedFormats holds (CMAF, CMAFIngest); CurrentConnections entries carry a valid status.
    @Test func tcPAVST21Attributes() async throws {
        try await ConformanceRun.run { run in
            let formats = try #require(try await run.serve.json(.GET, "/v1/cameras/cam1/attributes/supportedFormats")["value"] as? [[String: Any]])
            #expect(!formats.isEmpty && formats.contains { $0["containerFormat"] as? Int == 0 && $0["ingestMethod"] as? Int == 0 })
            _ = try await run.serve.allocate(run.continuous())
            let current = try #require(try await run.serve.json(.GET, "/v1/cameras/cam1/attributes/currentConnections")["value"] as? [[String: Any]])
            #expect(current.count == 1 && current.allSatisfy { [0, 1].contains($0["transportStatus"] as? Int ?? -1) })
        }
    }

    /// TC-PAVST-2.4: ModifyPushTransport (another fabric is TH2's fabric, `X-Fabric-Index: 2`).
    @Test func tcPAVST24Modify() async throws {
        try await ConformanceRun.run { run in
            let id = try await run.serve.allocate(run.continuous())
            #expect(try await run.command("modifyPushTransport", ["connectionID": id + 1, "transportOptions": run.continuous()]) == "NOT_FOUND")
            #expect(try await run.command("modifyPushTransport", ["connectionID": id, "transportOptions": run.continuous()], fabric: 2)
                    == "NOT_FOUND")
            #expect(try await run.command("modifyPushTransport", ["connectionID": id, "transportOptions": run.continuous(expiryTime: 130)])
                    == "SUCCESS")
            let found = try #require(try await run.find(id).first)
            #expect(found["connectionID"] as? Int == id)
            #expect((found["transportOptions"] as? [String: Any])?["expiryTime"] as? Int == 130)
        }
    }

    /// TC-PAVST-2.5: DeallocatePushTransport.
    @Test func tcPAVST25Deallocate() async throws {
        try await ConformanceRun.run { run in
            let id = try await run.serve.allocate(run.continuous())
            #expect(try await run.command("deallocatePushTransport", ["connectionID": id + 1]) == "NOT_FOUND")
            #expect(try await run.command("deallocatePushTransport", ["connectionID": id], fabric: 2) == "NOT_FOUND")
            #expect(try await run.command("deallocatePushTransport", ["connectionID": id]) == "SUCCESS")
            #expect((try await run.serve.json(.GET, "/v1/cameras/cam1/attributes/currentConnections")["value"] as? [Any])?.isEmpty == true)
        }
    }

    /// TC-PAVST-2.6: SetTransportStatus, privacy, and the PushTransportBegin within 5 s of going Active.
    @Test func tcPAVST26SetTransportStatus() async throws {
        try await ConformanceRun.run { run in
            let serve = run.serve
            try await serve.waitUntilStreaming()
            let events = try await serve.subscribe()
            defer { events.stop() }
            let id = try await run.serve.allocate(run.continuous(expiryTime: 3600))
            #expect(try await run.command("setTransportStatus", ["connectionID": id + 1, "transportStatus": 0]) == "NOT_FOUND")
            #expect(try await run.command("setTransportStatus", ["connectionID": id, "transportStatus": 0], fabric: 2) == "NOT_FOUND")
            _ = try await serve.json(.PUT, "/v1/cameras/cam1/attributes/softRecordingPrivacyModeEnabled", #"{"value":true}"#)
            #expect(try await run.command("setTransportStatus", ["connectionID": id, "transportStatus": 0]) == "INVALID_IN_STATE")
            _ = try await serve.json(.PUT, "/v1/cameras/cam1/attributes/softRecordingPrivacyModeEnabled", #"{"value":false}"#)
            let activated = ContinuousClock.now
            #expect(try await run.command("setTransportStatus", ["connectionID": id, "transportStatus": 0]) == "SUCCESS")
            let begun = try await events.wait("PushTransportBegin", timeout: .seconds(5)) { $0.contains { $0.isBegin && $0.connectionID == id } }
            let begin = try #require(begun.first { $0.isBegin && $0.connectionID == id })
            #expect(begin.time - activated < .seconds(5))
            #expect(try await run.command("setTransportStatus", ["connectionID": NSNull(), "transportStatus": 1]) == "SUCCESS")
            #expect(try await run.command("modifyPushTransport", ["connectionID": id, "transportOptions": run.continuous(expiryTime: 3600)])
                    == "SUCCESS")
            #expect(try await run.find(id).first?["transportStatus"] as? Int == 1)
        }
    }

    /// TC-PAVST-2.7: ManuallyTriggerTransport's refusals and its success.
    @Test func tcPAVST27ManuallyTrigger() async throws {
        try await ConformanceRun.run { run in
            let serve = run.serve
            let timeControl: [String: Any] = ["initialDuration": 1, "augmentationDuration": 1, "maxDuration": 2, "blindDuration": 1]
            let continuous = try await run.serve.allocate(run.continuous(expiryTime: 3600))
            func trigger(_ id: Int, fabric: Int = 1, timeControl: [String: Any]? = timeControl) async throws -> String {
                var body: [String: Any] = ["connectionID": id, "activationReason": 0]
                body["timeControl"] = timeControl
                return try await run.command("manuallyTriggerTransport", body, fabric: fabric)
            }
            #expect(try await trigger(continuous + 10) == "NOT_FOUND")
            #expect(try await trigger(continuous, fabric: 2) == "NOT_FOUND")
            #expect(try await trigger(continuous) == "FAILURE/8", "Inactive: InvalidTransportStatus")
            try await serve.setActive(continuous)
            #expect(try await trigger(continuous) == "FAILURE/7", "Continuous: InvalidTriggerType")
            let command = try await run.serve.allocate(run.commandTransport())
            try await serve.setActive(command)
            #expect(try await trigger(command, timeControl: nil) == "DYNAMIC_CONSTRAINT_ERROR")
            _ = try await serve.json(.PUT, "/v1/cameras/cam1/attributes/softRecordingPrivacyModeEnabled", #"{"value":true}"#)
            #expect(try await trigger(command) == "INVALID_IN_STATE")
            _ = try await serve.json(.PUT, "/v1/cameras/cam1/attributes/softRecordingPrivacyModeEnabled", #"{"value":false}"#)
            #expect(try await trigger(command) == "SUCCESS")
        }
    }

    /// TC-PAVST-2.8: FindTransport.
    @Test func tcPAVST28FindTransport() async throws {
        try await ConformanceRun.run { run in
            let id = try await run.serve.allocate(run.continuous())
            #expect(try await run.command("findTransport", ["connectionID": id + 1]) == "NOT_FOUND")
            #expect(try await run.command("findTransport", ["connectionID": id], fabric: 2) == "NOT_FOUND")
            #expect(try await run.find(id).map { $0["connectionID"] as? Int } == [id])
            #expect(try await run.find().contains { $0["connectionID"] as? Int == id })
        }
    }

    /// TC-PAVST-2.9: a connection with ExpiryTime 5 is there, Inactive, and gone within 6 s.
    @Test func tcPAVST29ExpiryTime() async throws {
        try await ConformanceRun.run { run in
            let allocated = ContinuousClock.now
            let id = try await run.serve.allocate(run.continuous(expiryTime: 5))
            #expect(try await run.find(id).first?["transportStatus"] as? Int == 1)
            try await Fixtures.waitUntil("the connection expired", timeout: .seconds(10)) {
                (try await run.serve.json(.GET, "/v1/cameras/cam1/attributes/currentConnections")["value"] as? [Any])?.isEmpty == true
            }
            let gone = ContinuousClock.now - allocated
            #expect(gone > .seconds(4) && gone < .seconds(7), "expired after \(gone)")
        }
    }

    /// TC-PAVST-2.10: URLs the cluster refuses with InvalidURL.
    @Test func tcPAVST210URLValidation() async throws {
        try await ConformanceRun.run { run in
            let port = run.server.port
            for url in ["http://localhost:\(port)/streams/1/", "https://localhost:\(port)/streams/1/#frag",
                        "https://localhost:\(port)/streams/1/?query=1", "https://localhost:\(port)/streams/1", "https:///streams/1/"] {
                var options = run.continuous()
                options["url"] = url
                let status = try await run.command("allocatePushTransport", ["transportOptions": options])
                #expect(status == "FAILURE/4", "\(url)")
            }
        }
    }
}
