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
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve = try await Serve(directory: ingest.directory, source: TestPaths.media("a_720p30_h264_main.mp4").path,
                                    camera: perZoneSensitivity ? "perZoneSensitivity: true" : "")
        do {
            // Precondition: the FeatureMap, and two motion zones made with CreateTwoDCartesianZone.
            let featureMap = try await serve.json(.GET, "/v1/cameras/cam1/attributes/featureMap")["value"] as? Int
            #expect(featureMap == (perZoneSensitivity ? 1 : 0))
            func createZone(_ name: String, x: Int) async throws -> Int {
                let vertices = [[x, 10], [x + 10, 10], [x + 10, 20], [x, 20]].map { ["x": $0[0], "y": $0[1]] }
                let answer = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/createTwoDCartesianZone",
                                                  JSON.text(["zone": ["name": name, "use": 0, "vertices": vertices, "color": "#00FFFF"]]))
                return try #require(answer["zoneID"] as? Int)
            }
            let zone1 = try await createZone("Zone1", x: 10), zone2 = try await createZone("Zone2", x: 30)
            func zoneEntry(_ zone: Int) -> [String: Any] { perZoneSensitivity ? ["zone": zone, "sensitivity": 4] : ["zone": zone] }

            // Step 1: a Motion transport (the helper's 2.11 allocation with TriggerType Motion).
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            var options = TransportJSON.options(endpointID: endpointID, ingestPort: server.port, path: "streams/1/",
                                                trigger: .motion(initial: 5, augmentation: 2, max: 10, blind: 1, preRollMs: 4000),
                                                segmentMs: 4000, chunkMs: 4)
            var trigger = try #require(options["triggerOptions"] as? [String: Any])
            trigger["motionZones"] = [zoneEntry(zone1)]
            if perZoneSensitivity { trigger["motionSensitivity"] = nil }
            options["triggerOptions"] = trigger
            options["expiryTime"] = 3600
            let id = try await serve.allocate(options)

            // Step 2: Zones and MaxZones.
            let zoneManagement = try await serve.json(.GET, "/v1/cameras/cam1/zoneManagement/attributes")
            let maxZones = try #require(zoneManagement["maxZones"] as? Int)
            #expect((zoneManagement["zones"] as? [[String: Any]])?.compactMap { $0["zoneID"] as? Int } == [zone1, zone2])

            /// Sends UpdateMotionZoneOptions; the Matter status it answers ("SUCCESS", or the error body's status, with
            /// the cluster status after a slash).
            func update(_ body: [String: Any], fabric: Int = 1) async throws -> String {
                let (status, text) = try await serve.request(
                    .POST, "/v1/cameras/cam1/commands/updateMotionZoneOptions", JSON.text(body),
                    headers: [("X-Fabric-Index", "\(fabric)")])
                if status == 200 { return "SUCCESS" }
                let error = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
                let name = try #require(error["status"] as? String)
                return (error["clusterStatus"] as? Int).map { "\(name)/\($0)" } ?? name
            }
            func findTrigger() async throws -> [String: Any] {
                let found = try await serve.command("findTransport", ["connectionID": id])
                let configuration = try #require((found["transportConfigurations"] as? [[String: Any]])?.first)
                let options = try #require(configuration["transportOptions"] as? [String: Any])
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
            for index in 2..<maxZones { temporary.append(try await createZone("Temp\(index)", x: (index + 4) * 10)) }
            let many = ([zone1, zone2] + temporary).map(zoneEntry) + [perZoneSensitivity ? ["zone": NSNull(), "sensitivity": 4] : ["zone": NSNull()]]
            #expect(many.count == maxZones + 1)
            #expect(try await update(["connectionID": id, "motionZones": many]) == "DYNAMIC_CONSTRAINT_ERROR", "step 6")
            for zone in temporary {
                _ = try await serve.json(.POST, "/v1/cameras/cam1/zoneManagement/commands/removeZone", JSON.text(["zoneID": zone]))
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
            // Zone Management: a zone a transport names cannot go; once unnamed it can.
            let (inUse, inUseText) = try await serve.request(
                .POST, "/v1/cameras/cam1/zoneManagement/commands/removeZone", JSON.text(["zoneID": zone2]))
            #expect(inUse == 409 && inUseText.contains("INVALID_IN_STATE"), "\(inUseText)")
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }
}

extension ServeEndToEndTests {
    /// TC-PAVST-2.3 / 2.11 (AllocatePushTransport) through the real `pushav serve`, with PERZONESENS off and on: each
    /// portable step with the status the official script asserts. Not portable: steps 3–5 (the camera's streams are
    /// serve.yaml's, there is no CameraAvStreamManagement to allocate or remove them), and 2.2's MRP/TCP distinction
    /// (HTTP always carries TransportOptions).
    @Test(arguments: [false, true])
    func tcPAVST23Allocate(perZoneSensitivity: Bool) async throws {
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let serve = try await Serve(directory: ingest.directory, source: TestPaths.media("a_720p30_h264_main.mp4").path,
                                    camera: perZoneSensitivity ? "perZoneSensitivity: true" : "")
        do {
            let endpointID = try await serve.addTLSEndpoint(pki: ingest.pki, port: server.port)
            let vertices = [[10, 10], [20, 10], [20, 20], [10, 20]].map { ["x": $0[0], "y": $0[1]] }
            let zone = try #require(try await serve.json(
                .POST, "/v1/cameras/cam1/zoneManagement/commands/createTwoDCartesianZone",
                JSON.text(["zone": ["name": "Zone1", "use": 0, "vertices": vertices]]))["zoneID"] as? Int)

            /// The helper's default allocation (Continuous, Interface-1, 4 s segments, TrackName " ", ExpiryTime 10).
            func continuous() -> [String: Any] {
                ["streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": endpointID,
                 "url": "https://localhost:\(server.port)/streams/1/", "triggerOptions": ["triggerType": 2],
                 "ingestMethod": 0, "expiryTime": 10,
                 "containerOptions": ["containerType": 0, "cmafContainerOptions": [
                     "cmafInterface": 0, "chunkDuration": 4, "segmentDuration": 4000, "sessionGroup": 3, "trackName": " "]]]
            }
            func entry(_ zone: Any) -> [String: Any] { perZoneSensitivity ? ["zone": zone, "sensitivity": 4] : ["zone": zone] }
            /// A Motion transport naming `zones`, with MotionSensitivity 5 unless PERZONESENS forbids it.
            func motion(_ zones: [[String: Any]]?, timeControl: [String: Any]? = ["initialDuration": 10, "augmentationDuration": 5,
                                                                                  "maxDuration": 20, "blindDuration": 1]) -> [String: Any] {
                var options = continuous()
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
                with(continuous()) { options in
                    var container = options["containerOptions"] as? [String: Any] ?? [:]
                    var cmaf = container["cmafContainerOptions"] as? [String: Any] ?? [:]
                    cmaf[key] = value
                    container["cmafContainerOptions"] = cmaf
                    options["containerOptions"] = container
                }
            }
            /// Allocates; the Matter status ("SUCCESS", the error's status, or "FAILURE/<cluster status>").
            func allocate(_ options: [String: Any]) async throws -> String {
                let (status, text) = try await serve.request(.POST, "/v1/cameras/cam1/commands/allocatePushTransport",
                                                             JSON.text(["transportOptions": options]))
                if status == 200 { return "SUCCESS" }
                let error = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
                let name = try #require(error["status"] as? String)
                return (error["clusterStatus"] as? Int).map { "\(name)/\($0)" } ?? name
            }

            // Steps 6–7: a valid allocation answers its configuration and is Inactive in CurrentConnections.
            let allocated = try await serve.command("allocatePushTransport", ["transportOptions": continuous()])
            let configuration = try #require(allocated["transportConfiguration"] as? [String: Any])
            #expect(configuration["transportStatus"] as? Int == 1 && configuration["transportOptions"] != nil)
            let current = try await serve.json(.GET, "/v1/cameras/cam1/attributes/currentConnections")["value"] as? [[String: Any]]
            #expect(current?.count == 1 && current?.first?["transportStatus"] as? Int == 1)
            // Steps 8–9: Zones and MaxZones.
            let zoneManagement = try await serve.json(.GET, "/v1/cameras/cam1/zoneManagement/attributes")
            let maxZones = try #require(zoneManagement["maxZones"] as? Int)

            let steps: [(step: String, options: [String: Any], expected: String)] = [
                ("11 TLSEndpointID not provisioned", with(continuous()) { $0["tlsEndpointID"] = 5 }, "FAILURE/2"),
                ("12 IngestMethod unknown", with(continuous()) { $0["ingestMethod"] = 3 }, "CONSTRAINT_ERROR"),
                ("13 http:// URL", with(continuous()) { $0["url"] = "http://localhost:\(server.port)/streams/1/" }, "FAILURE/4"),
                ("14 TriggerType unknown", trigger(continuous(), "triggerType", 3), "CONSTRAINT_ERROR"),
                ("15 a null zone", motion([entry(NSNull())]), "SUCCESS"),
                ("16 a zone twice", motion([entry(zone), entry(zone)]), "ALREADY_EXISTS"),
                ("17 two null zones", motion([entry(NSNull()), entry(NSNull())]), "ALREADY_EXISTS"),
                ("18 an unknown zone", motion([entry(14)]), "FAILURE/5"),
                ("19 an unknown video stream", with(continuous()) { $0["videoStreamID"] = 9 }, "FAILURE/3"),
                ("20 an unknown audio stream", with(continuous()) { $0["audioStreamID"] = 9 }, "FAILURE/3"),
                ("21 no stream at all", with(continuous()) { $0["videoStreamID"] = nil }, "INVALID_COMMAND"),
                ("22 video stream null (automatic)", with(continuous()) { $0["videoStreamID"] = NSNull() }, "SUCCESS"),
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
                    ? ("29/30 empty MotionZones", motion([]), "SUCCESS")
                    : ("29 empty MotionZones, MotionSensitivity null", trigger(motion([]), "motionSensitivity", NSNull()), "SUCCESS"),
                ("30 empty MotionZones", motion([]), "SUCCESS"),
                ("31 StreamUsage unknown", with(continuous()) { $0["streamUsage"] = 9 }, "CONSTRAINT_ERROR"),
                ("32 CMAF without CMAFContainerOptions", with(continuous()) { $0["containerOptions"] = ["containerType": 0] }, "INVALID_COMMAND"),
                ("33 SegmentDuration not a multiple of KeyFrameInterval", cmaf("segmentDuration", 1001), "FAILURE/9"),
                ("34 StreamUsage Internal", with(continuous()) { $0["streamUsage"] = 0 }, "FAILURE/10"),
                ("35 MaxPreRollLen below KeyFrameInterval", trigger(motion([entry(zone)]), "maxPreRollLen", 200), "FAILURE/12"),
            ]
            for step in steps {
                #expect(try await allocate(step.options) == step.expected, "step \(step.step)")
            }
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }
}
