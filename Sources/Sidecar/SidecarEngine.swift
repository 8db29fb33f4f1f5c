import ConcurrencyPrimitives
import Delivery
import Domain
import Foundation
import Ingest
import Logging
import Metrics
import Recorder
import ServiceLifecycle
import Synchronization
import Timeline
import TransportModel
import TransportStore

/// `pushav serve` without its HTTP layer: per configured camera a Push AV Stream Transport cluster instance (its
/// state in SQLite), a ``CameraRecorder``, and per destination a ``DestinationUpload`` through one durable
/// spool. Commands arrive through ``transport(camera:)``; what they change reaches the recorders and uploaders from
/// the cluster's change stream, so the HTTP API and the tests drive exactly the same path.
public final class SidecarEngine: SidecarControl, Service {
    public let configuration: ServeConfiguration
    public let spool: SegmentSpool
    /// Root certificates and client identities provisioned through the TLS commands (private keys stay here).
    let credentials: TLSCredentialStore
    /// Undelivered objects in the spool, by spool connection name, of connections that no longer exist (found at
    /// start): they have no URL or certificates left to go to, so they stay in the spool and are reported.
    public let unreachableSpool: [String: Int]
    let cameras: [CameraService]
    /// TLS endpoint commands, one at a time: each changes every camera's copy, and two interleaved would leave the
    /// copies different.
    let tlsCommands = SerialGate()
    /// Drops private keys nothing refers to any more.
    let keyPruning: EndpointKeyPruning
    let logger: Logger
    /// Opens (or creates) the state under `configuration.state`: one SQLite store per camera, the spool, the
    /// camera attributes. Registers each camera's allocated streams and zones from the configuration.
    public init(configuration: ServeConfiguration, uploadPolicy: UploadPolicy? = nil,
                logger: Logger = Logger(label: "pushav.serve")) async throws {
        self.configuration = configuration
        self.logger = logger
        // A policy passed in (tests) wins; otherwise the configuration's backoff bound applies.
        let uploadPolicy = uploadPolicy ?? {
            var policy = UploadPolicy(segmentDuration: .seconds(4))
            policy.maximumBackoff = .milliseconds(configuration.uploadMaxBackoffMs)
            policy.initialBackoff = min(policy.initialBackoff, policy.maximumBackoff)
            return policy
        }()
        let state = URL(fileURLWithPath: configuration.state)
        let camerasDirectory = state.appendingPathComponent("cameras")
        // Opening the stores reads, migrates and fsyncs SQLite files: off Swift's cooperative pool, like every later
        // call into them.
        (credentials, spool) = try await offPool {
            try Self.claimStateFolder(state)
            try FileManager.default.createDirectory(at: camerasDirectory, withIntermediateDirectories: true)
            return (try TLSCredentialStore(directory: state.appendingPathComponent("tls")),
                    try SegmentSpool(directory: state.appendingPathComponent("spool"),
                                     capacity: configuration.spoolCapacityMiB << 20,
                                     recentBytes: configuration.recentRecordingsMiB << 20,
                                     recentSessions: CameraRecorder.recentClipsKept, logger: logger))
        }
        let credentials = self.credentials
        var cameras: [CameraService] = []
        let keyPruning = EndpointKeyPruning(credentials: credentials, spool: spool)
        self.keyPruning = keyPruning
        for camera in configuration.cameras {
            let store: TransportStore
            do {
                // Private keys stay in the one owner-only credential store; the camera's store refers to them.
                store = try await offPool {
                    try TransportStore(path: camerasDirectory.appendingPathComponent("\(camera.id).sqlite").path,
                                       privateKeys: credentials)
                }
            } catch {
                throw ServeError("cannot open the state of camera \(camera.id): \(error)")
            }
            // An event-log write that fails (disk full) is logged and counted; the event still goes out.
            let logFailures = Counter(label: "pushav_event_log_write_failures_total", dimensions: [("camera", camera.id)])
            // Its init loads the store (SQLite reads): off the pool too.
            let server = try await offPool { [logger, id = camera.id, capabilities = Self.capabilities(of: camera)] in
                try PushAVStreamTransportServer(
                    capabilities: capabilities, persistence: store, eventLog: store,
                    reportEventLogFailure: { error in
                        logger.error("event log write failed; the event is still delivered live",
                                     metadata: ["camera": "\(id)", "error": "\(error)"])
                        logFailures.increment()
                    })
            }
            try await Self.register(camera, on: server, logger: logger)
            // A Begin the previous process sent and never ended (kill -9, power loss) gets its End now, in the log.
            for (connection, recording) in await server.endRecordingsInterruptedByTheLastStop() {
                logger.warning("recording interrupted by the last stop (the process was killed); its End is sent now", metadata: [
                    "camera": "\(camera.id)", "connection": "\(connection)", "session": "\(recording.sessionNumber)",
                ])
            }
            let attributesFile = camerasDirectory.appendingPathComponent("\(camera.id).attributes.json")
            let attributes = (try? await offPool { try JSONDecoder().decode(CameraAttributes.self, from: Data(contentsOf: attributesFile)) })
                ?? CameraAttributes()
            let recorder = CameraRecorder(configuration: camera,
                                          output: state.appendingPathComponent("recording").appendingPathComponent(camera.id),
                                          zones: await server.currentRegistries.zoneManagement.sortedZones, logger: logger)
            cameras.append(CameraService(
                configuration: camera, server: server, store: store, recorder: recorder, attributes: attributes,
                attributesFile: attributesFile, spool: spool, uploadPolicy: uploadPolicy,
                retiredPatience: .seconds(configuration.retiredDeliveryPatienceSeconds), logger: logger,
                privateKey: { reference in try? await offPool { try credentials.key(for: reference) } ?? nil },
                destinationForgotten: { [keyPruning, logger] _ in
                    do { try await keyPruning.prune() } catch {
                        logger.warning("a forgotten destination's key could not be pruned yet", metadata: ["error": "\(error)"])
                    }
                }))
            keyPruning.add(server)
        }
        self.cameras = cameras
        unreachableSpool = await Self.adoptSpool(spool: spool, cameras: cameras, logger: logger)
        try await pruneEndpointKeys()
        // No BUSY from this sidecar (README "BUSY and give-ups"): what a connection recorded before a Modify,
        // Deallocate or Inactive stays with its own destination's delivery, so the cluster's uploads-pending query keeps its
        // default (nothing pending) and a controller is never locked out.
    }

    /// What the spool holds that has no destination: labels written before destinations existed (`camera/connection`).
    /// One of a connection that still exists is adopted — recorded as a retired destination with that connection's
    /// current URL and certificates, which is where the version that wrote it would have sent it. Any other (its
    /// connection deallocated, its camera gone from the configuration) has nowhere it may go: it stays in the spool and
    /// is reported, never silently: an error per label at start, `pushav_spool_unreachable_objects{connection}`, and
    /// ``unreachableSpool``.
    static func adoptSpool(spool: SegmentSpool, cameras: [CameraService], logger: Logger) async -> [String: Int] {
        let pending: [String: Int]
        let described: Set<String>
        do {
            pending = try await spool.pendingObjects()
            described = Set(try await spool.storedDestinations().map(\.destination.key))
        } catch {
            logger.error("cannot read the spool's pending objects", metadata: ["error": "\(error)"])
            return [:]
        }
        var unreachable: [String: Int] = [:]
        for (label, objects) in pending.sorted(by: { $0.key < $1.key }) where !described.contains(label) {
            var adopted = false
            for camera in cameras {
                let state = await camera.server.desiredState()
                guard let connection = state.connections.first(where: {
                    spoolOwner(camera: camera.configuration.id, connection: $0.connectionID) == label
                }), let endpoint = state.registries.tls.endpoint(for: connection) else { continue }
                let (current, _) = CameraService.destination(of: connection, camera: camera.configuration.id, endpoint: endpoint)
                let legacy = UploadDestination(
                    owner: current.owner, url: current.url, fabric: current.fabric, trustedCertificates: current.trustedCertificates,
                    certificateChain: current.certificateChain, privateKeyReference: current.privateKeyReference, key: label)
                do {
                    try await spool.register(legacy)
                    try await spool.retire(destination: label)
                    adopted = true
                    logger.notice("spooled objects from before destinations go to their connection's current URL", metadata: [
                        "connection": "\(label)", "objects": "\(objects)",
                    ])
                } catch {
                    logger.error("cannot adopt spooled objects", metadata: ["connection": "\(label)", "error": "\(error)"])
                }
            }
            guard !adopted else { continue }
            unreachable[label] = objects
            logger.error("spooled objects of a connection that no longer exists cannot be uploaded; they stay in the spool",
                         metadata: ["connection": "\(label)", "objects": "\(objects)", "spool": "\(spool.directory.path)"])
            Gauge(label: "pushav_spool_unreachable_objects", dimensions: [("connection", label)]).record(objects)
        }
        return unreachable
    }

    /// What this recorder implements (CMAF Interface-1 and Interface-2 DASH; H.264 and HEVC packaged without
    /// transcoding, AAC and Opus audio), and the features the camera's configuration turns on: PERZONESENS only
    /// when asked for, because with it a transport may not carry `motionSensitivity`, which the Google Home client
    /// sets (its wake-up sensitivity).
    static func capabilities(of camera: CameraConfiguration) -> TransportCapabilities {
        TransportCapabilities(
            features: camera.perZoneSensitivity ? [.perZoneSensitivity] : [],
            supportedCMAFInterfaces: [.interface1, .interface2DASH],
            supportedVideoCodecs: [.h264, .hevc], supportedAudioCodecs: [.aacLC, .opus])
    }

    /// The configuration's streams and zones, as the camera's CameraAvStreamManagement and Zone Management would
    /// hold them: what AllocatePushTransport validates against.
    static func register(_ camera: CameraConfiguration, on server: PushAVStreamTransportServer, logger: Logger) async throws {
        do {
            try await server.setAllocatedVideoStream(AllocatedVideoStream(
                videoStreamID: camera.videoStreamID, codec: .h264, keyFrameInterval: UInt16(camera.keyFrameInterval), streamUsage: .recording,
                maxBitRate: 20_000_000))
            if let audio = camera.audioStreamID {
                try await server.setAllocatedAudioStream(AllocatedAudioStream(
                    audioStreamID: audio, codec: .aacLC, streamUsage: .recording, bitRate: 128_000))
            }
            // serve.yaml's zones are the manufacturer zones; zones controllers created persist beside them.
            for replaced in try await server.setManufacturerZones(camera.zones) {
                logger.warning("a user zone gives way to the configured zone with its ID", metadata: [
                    "camera": "\(camera.id)", "zone": "\(replaced.id)", "name": "\(replaced.name)"])
            }
        } catch {
            throw ServeError("cannot register the streams of camera \(camera.id): \(error)")
        }
    }

    // MARK: - Running (Service)

    /// Runs every camera's ``CameraService`` until graceful shutdown (each then ends its recordings, delivers the
    /// Ends, gives its uploads a few seconds and closes its store) or until they all stop.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for camera in cameras {
                group.addTask {
                    do {
                        try await camera.run()
                    } catch {
                        self.logger.error("camera stopped", metadata: ["camera": "\(camera.configuration.id)", "error": "\(error)"])
                    }
                }
            }
        }
        // What stays in the spool is made durable before the process ends (objects wait up to its syncDelay for it).
        let synced = (try? await BlockingIO.run { [spool] in spool.syncPending() }) ?? 0
        logger.notice("stopped", metadata: ["objectsSyncedAtStop": "\(synced)"])
    }

    /// Whether recording `session` of `connection` on `camera` has ended and all of it reached the ingest (for the
    /// demo and tests; a controller learns the same from the End event and BUSY).
    public func isDelivered(camera: String, connection: UInt16, session: SessionNumber) -> Bool {
        (try? spool.sessionDelivery(session, owner: Self.spoolOwner(camera: camera, connection: connection))) == .delivered
    }

    /// What a connection's destinations are owned by in the spool (their labels are `owner@digest`).
    static func spoolOwner(camera: String, connection: UInt16) -> String { "\(camera)/\(connection)" }

}

/// A start-up or state error of `pushav serve`.
extension SidecarEngine {
    /// Makes the state folder the service's own: a missing or empty one is created (or set) owner-only, 0700. One
    /// that already holds state and that other users may enter is refused, with the fix: it holds the TLS client
    /// keys and the recordings, and what others could read there may already be copied. Tightening it quietly would
    /// hide that; the operator decides (`chmod 700`, and new keys if others really had access).
    static func claimStateFolder(_ state: URL) throws {
        let files = FileManager.default
        if let entries = try? files.contentsOfDirectory(atPath: state.path), !entries.isEmpty {
            let attributes = try files.attributesOfItem(atPath: state.path)
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0
            if mode & 0o077 != 0 {
                throw ServeError("""
                    the state folder \(state.path) is open to other users (mode \(String(mode, radix: 8))); it holds TLS \
                    client keys and recordings. Fix: chmod 700 \(state.path) (and renew the keys if others had access)
                    """)
            }
            return
        }
        try files.createDirectory(at: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try files.setAttributes([.posixPermissions: 0o700], ofItemAtPath: state.path)
    }
}

public struct ServeError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Blocking file work, off Swift's cooperative pool.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}

/// Prunes the owner-only credential store: a TLS endpoint's private key stays while a camera's registry refers to it
/// *or* a destination in the spool does (objects recorded with it wait there: they are delivered with the credentials
/// they were recorded with, even after the endpoint was replaced or removed).
final class EndpointKeyPruning: Sendable {
    let credentials: TLSCredentialStore
    let spool: SegmentSpool
    let servers = Mutex<[PushAVStreamTransportServer]>([])

    init(credentials: TLSCredentialStore, spool: SegmentSpool) {
        self.credentials = credentials
        self.spool = spool
    }

    func add(_ server: PushAVStreamTransportServer) { servers.withLock { $0.append(server) } }

    func prune() async throws {
        var kept = Set<String>()
        for server in servers.withLock({ $0 }) {
            for endpoint in await server.currentRegistries.tls.endpoints.values {
                kept.insert(TLSCredentialStore.reference(of: endpoint.privateKey))
            }
        }
        for stored in try await spool.storedDestinations() {
            if let reference = stored.destination.privateKeyReference { kept.insert(reference) }
        }
        let credentials = self.credentials
        try await offPool { [kept] in try credentials.pruneEndpointKeys(keeping: kept) }
    }
}
