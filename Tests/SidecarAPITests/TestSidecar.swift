import Domain
import Foundation
import Motion
import Sidecar
import Synchronization
import TestSupport
import TransportModel

/// A ``SidecarControl`` over real ``PushAVStreamTransportServer``s (volatile persistence) for two cameras, with the
/// registries the engine would configure: an H.264 stream (4 s key-frame interval) and an Opus stream for Recording,
/// three zones. `cam2` has a 3 Mbit/s MaxNetworkBandwidth, so a second 2 Mbit/s transport is RESOURCE_EXHAUSTED.
/// TLS endpoints come in through the API, as in the product.
final class TestSidecar: SidecarControl {
    static let videoStreamID: UInt16 = 10
    static let audioStreamID: UInt16 = 20

    let cameraIDs = ["cam1", "cam2"]
    let servers: [String: PushAVStreamTransportServer]
    private let state = Mutex(State())

    private struct State {
        var attributes: [String: CameraAttributes] = ["cam1": CameraAttributes(), "cam2": CameraAttributes()]
        var endpoints: [FabricIndex: [UInt16: TLSEndpointSummary]] = [:]
        var readiness = SidecarReadiness(storeOpen: true, cameras: [
            "cam1": .init(sinceLastPacket: .milliseconds(40)), "cam2": .init(sinceLastPacket: .milliseconds(250)),
        ])
        var gaugeRefreshes = 0
        var clientCertificates: [ProvisionClientCertificateRequest] = []
    }

    /// `eventLog` makes each camera's server log its events there (a failing log tests the API's answer to it).
    init(eventLog: @autoclosure () -> any TransportEventLog = VolatileTransportEventLog()) throws {
        let registries = TransportRegistries(
            zones: [1, 2, 3].map {
                MotionZone(id: $0, name: "Zone\($0)", polygon: [.init(x: 10, y: 10), .init(x: 20, y: 10), .init(x: 20, y: 20)])
            },
            videoStreams: [AllocatedVideoStream(
                videoStreamID: Self.videoStreamID, keyFrameInterval: 4000, streamUsage: .recording, maxBitRate: 2_000_000)],
            audioStreams: [AllocatedAudioStream(audioStreamID: Self.audioStreamID, streamUsage: .recording, bitRate: 64_000)])
        func server(_ capabilities: TransportCapabilities) throws -> PushAVStreamTransportServer {
            try PushAVStreamTransportServer(
                capabilities: capabilities,
                persistence: VolatileTransportPersistence(initialState: PersistentTransportState(registries: registries)),
                clock: ManualClock(), eventLog: eventLog())
        }
        servers = [
            "cam1": try server(TransportCapabilities(maxZones: 3)),
            "cam2": try server(TransportCapabilities(maxZones: 3, maxNetworkBandwidth: 3_000_000)),
        ]
    }

    func transport(camera: String) -> PushAVStreamTransportServer? { servers[camera] }

    func cameraStatuses() async -> [CameraStatus] {
        [
            CameraStatus(
                id: "cam1", source: "rtsp://192.0.2.10/main", state: .streaming, framesAnalysed: 1500,
                lastMotion: Date(timeIntervalSince1970: 1_750_000_000), connections: await servers["cam1"]!.allConnections().count,
                recentClips: [CameraStatus.RecentClip(
                    connectionID: 1, cmafSessionNumber: 3, started: Date(timeIntervalSince1970: 1_750_000_000),
                    ended: Date(timeIntervalSince1970: 1_750_000_012), endReason: "initialDuration")]),
            CameraStatus(id: "cam2", source: "file:///media/loop.mp4", state: .reconnecting, lastError: "connection refused"),
        ]
    }

    func attributes(camera: String) async -> CameraAttributes? { state.withLock { $0.attributes[camera] } }

    func updateAttributes(camera: String, _ change: CameraAttributesChange) async throws(TransportCommandError) -> CameraAttributes {
        guard let server = servers[camera], let current = state.withLock({ $0.attributes[camera] }) else {
            throw .im(.notFound, "camera: no camera \(camera)")
        }
        let updated = change.applied(to: current)
        try await server.setPrivacyModes(PrivacyModes(
            softRecordingPrivacyModeEnabled: updated.softRecordingPrivacyModeEnabled,
            softLivestreamPrivacyModeEnabled: updated.softLivestreamPrivacyModeEnabled))
        state.withLock { $0.attributes[camera] = updated }
        return updated
    }

    func addTLSEndpoint(_ request: TLSEndpointRequest, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        guard let ca = PEM.blocks(request.caCertificate, label: "CERTIFICATE").first else {
            throw .im(.constraintError, "caCertificate: no PEM certificate")
        }
        let chain = PEM.blocks(request.clientCertificate, label: "CERTIFICATE")
        guard !chain.isEmpty else { throw .im(.constraintError, "clientCertificate: no PEM certificate") }
        guard let key = PEM.blocks(request.clientKey, label: "PRIVATE KEY").first else {
            throw .im(.constraintError, "clientKey: no PEM private key")
        }
        // As the engine does: the first camera's cluster hands out the lowest free ID, the others store it too.
        var endpoint = TLSEndpoint(fabricIndex: fabric, endpointID: 0, hostname: request.hostname, port: request.port,
                                   caCertificate: ca, clientCertificateChain: chain, privateKey: key)
        let ordered = cameraIDs.compactMap { servers[$0] }
        endpoint.endpointID = try await ordered[0].addTLSEndpointUnderFreeID(endpoint)
        for server in ordered.dropFirst() { try await server.setTLSEndpoint(endpoint) }
        let endpointID = endpoint.endpointID
        state.withLock {
            $0.endpoints[fabric, default: [:]][endpointID] = TLSEndpointSummary(
                endpointID: endpointID, hostname: request.hostname, port: request.port,
                caCertificate: request.caCertificate, clientCertificate: request.clientCertificate)
        }
        return endpointID
    }

    func tlsEndpoints(fabric: FabricIndex) async -> [TLSEndpointSummary] {
        state.withLock { ($0.endpoints[fabric] ?? [:]).values.sorted { $0.endpointID < $1.endpointID } }
    }

    func removeTLSEndpoint(_ endpointID: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        guard state.withLock({ $0.endpoints[fabric]?[endpointID] }) != nil else {
            throw .im(.notFound, "endpointID: no TLS endpoint \(endpointID) in this fabric")
        }
        for server in servers.values {
            let users = await server.allConnections().filter {
                $0.fabricIndex == fabric && $0.transportOptions.tlsEndpointID == endpointID
            }
            if let user = users.first {
                throw .im(.invalidInState, "endpointID: connection \(user.connectionID) uses TLS endpoint \(endpointID)")
            }
        }
        for server in servers.values { try await server.removeTLSEndpoint(fabricIndex: fabric, endpointID: endpointID) }
        _ = state.withLock { $0.endpoints[fabric]?.removeValue(forKey: endpointID) }
    }

    /// cam1's connection 1 session 3 has a recent clip: ``clipBytes`` laid out as a playable clip is (see
    /// `ClipParts`): 100 bytes made for it, then two files (a 200-byte header and a 700-byte segment) whose bytes
    /// differ from the clip's at two places that patches set right.
    func clip(camera: String, connection: UInt16, session: SessionNumber) async -> ClipParts? {
        camera == "cam1" && connection == 1 && session == 3 ? Self.clip : nil
    }

    /// 1000 bytes, each its offset modulo 251 (any range of them is recognisable).
    static let clipBytes = (0..<1000).map { UInt8($0 % 251) }
    static let clip: ClipParts = {
        let directory = FileManager.default.temporaryDirectory
        let header = directory.appendingPathComponent("pushav-test-clip-\(getpid()).init")
        let segment = directory.appendingPathComponent("pushav-test-clip-\(getpid())-1001.m4s")
        FileManager.default.createFile(atPath: header.path, contents: Data(clipBytes[100..<300]))
        // On disk the segment's bytes 0–3 and 400–403 are zeros: the patches put the clip's there.
        var onDisk = Array(clipBytes[300...])
        onDisk.replaceSubrange(0..<4, with: [0, 0, 0, 0])
        onDisk.replaceSubrange(400..<404, with: [0, 0, 0, 0])
        FileManager.default.createFile(atPath: segment.path, contents: Data(onDisk))
        return ClipParts(parts: [
            .init(made: Array(clipBytes[0..<100])), .init(file: header, bytes: 200),
            .init(file: segment, bytes: 700, patches: [.init(offset: 0, bytes: Array(clipBytes[300..<304])),
                                                       .init(offset: 400, bytes: Array(clipBytes[700..<704]))]),
        ])
    }()

    /// The bytes the image routes answer with (a JPEG's start and end markers around a comment: the API passes them on).
    static let jpeg = Data([0xFF, 0xD8, 0xFF, 0xFE, 0x00, 0x06, 0x74, 0x65, 0x73, 0x74, 0xFF, 0xD9])

    /// cam1's connection 1 session 3 (its recent clip) has a thumbnail; nothing else has.
    func thumbnail(camera: String, connection: UInt16, session: SessionNumber) async -> Data? {
        camera == "cam1" && connection == 1 && session == 3 ? Self.jpeg : nil
    }

    /// cam1 streams and has a picture; cam2 (reconnecting) never had one.
    func snapshot(camera: String) async -> CameraSnapshot? {
        camera == "cam1" ? CameraSnapshot(jpeg: Self.jpeg, taken: Date(timeIntervalSince1970: 1_750_000_000)) : nil
    }

    // The provisioning commands run in the real engine (ServeProvisioningTests); this double answers as a node without
    // them, except ProvisionClientCertificate, which it keeps (to see what the API read from the body).
    func provisionRootCertificate(_ request: ProvisionRootCertificateRequest, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func removeRootCertificate(_ caid: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func findRootCertificates(_ caid: UInt16?, fabric: FabricIndex) async throws(TransportCommandError) -> [RootCertificateDetails] {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func lookupRootCertificate(fingerprint: Data, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func clientCSR(_ request: ClientCSRRequest, fabric: FabricIndex) async throws(TransportCommandError) -> ClientCSRResponse {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func findClientCertificates(_ ccdid: UInt16?, fabric: FabricIndex) async throws(TransportCommandError) -> [ClientCertificateDetails] {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func lookupClientCertificate(fingerprint: Data, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func removeClientCertificate(_ ccdid: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func tlsCertificateAttributes(fabric: FabricIndex) async throws(TransportCommandError) -> TLSCertificateAttributes {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    /// Kept as given (what the API read from the body), for ProvisionClientCertificateAPITests.
    func provisionClientCertificate(_ request: ProvisionClientCertificateRequest, fabric: FabricIndex) async throws(TransportCommandError) {
        state.withLock { $0.clientCertificates.append(request) }
    }

    /// The ProvisionClientCertificate requests the API passed on, in order.
    var clientCertificates: [ProvisionClientCertificateRequest] { state.withLock { $0.clientCertificates } }

    func provisionEndpoint(_ request: ProvisionEndpointRequest, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        throw .im(.unsupportedCommand, "not in the test double")
    }

    func health() async -> SidecarHealth {
        SidecarHealth(status: "degraded", cameras: ["cam1": .streaming, "cam2": .reconnecting], pendingUploads: 2)
    }

    func readiness() async -> SidecarReadiness { state.withLock { $0.readiness } }

    func refreshGauges() async { state.withLock { $0.gaugeRefreshes += 1 } }

    /// What `/ready` answers from now on.
    func setReadiness(_ readiness: SidecarReadiness) { state.withLock { $0.readiness = readiness } }

    /// How often `/metrics` asked for the gauges to be brought up to date.
    var gaugeRefreshes: Int { state.withLock { $0.gaugeRefreshes } }
}

/// PEM blocks as DER: what the double checks a certificate or key parses as.
enum PEM {
    static func blocks(_ text: String, label: String) -> [Data] {
        var blocks: [Data] = []
        var body: String?
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("-----BEGIN "), line.hasSuffix(label + "-----") {
                body = ""
            } else if line.hasPrefix("-----END "), let collected = body {
                guard let der = Data(base64Encoded: collected), !der.isEmpty else { return [] }
                blocks.append(der)
                body = nil
            } else if body != nil {
                body! += line
            }
        }
        return blocks
    }
}

/// A throwaway CA and client certificate made with the openssl CLI, once per test process.
enum TestCertificates {
    struct Material: Sendable {
        var caCertificate: String
        var clientCertificate: String
        var clientKey: String
    }

    /// Made once, by the first caller; concurrent tests await the same material.
    private static let made = Task { try await make() }

    static func material() async throws -> Material { try await made.value }

    private static func make() async throws -> Material {
        let directory = try TestPaths.scratchDirectory("sidecar-api-pki")
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        _ = try await ChildProcess.output("/usr/bin/openssl", ["req", "-x509"] + ec + [
            "-keyout", path("ca.key"), "-out", path("ca.pem"), "-subj", "/CN=sidecar test CA", "-days", "2"])
        _ = try await ChildProcess.output("/usr/bin/openssl", ["req"] + ec + [
            "-keyout", path("client.key"), "-out", path("client.csr"), "-subj", "/CN=camera"])
        _ = try await ChildProcess.output("/usr/bin/openssl", [
            "x509", "-req", "-in", path("client.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("client.pem"), "-days", "2"])
        let material = Material(
            caCertificate: try String(contentsOfFile: path("ca.pem"), encoding: .utf8),
            clientCertificate: try String(contentsOfFile: path("client.pem"), encoding: .utf8),
            clientKey: try String(contentsOfFile: path("client.key"), encoding: .utf8))
        guard !PEM.blocks(material.clientCertificate, label: "CERTIFICATE").isEmpty,
              !PEM.blocks(material.clientKey, label: "PRIVATE KEY").isEmpty else {
            throw TestCertificateError(message: "openssl made no usable PEM in \(directory.path)")
        }
        return material
    }
}

struct TestCertificateError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
