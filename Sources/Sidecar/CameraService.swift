import ConcurrencyPrimitives
import Delivery
import Domain
import Foundation
import Ingest
import Logging
import Metrics
import Motion
import Recorder
import ServiceLifecycle
import Synchronization
import Timeline
import TransportModel
import TransportRecording
import TransportStore

/// One camera of `pushav serve`, run as a `Service`: its Push AV Stream Transport cluster (`server`, state in
/// `store`), its ``CameraRecorder``, the ``RecordingAnnouncer`` that carries Begin and End from the media thread to the
/// cluster, and its ``CameraDeliveries`` (a ``DestinationUpload`` per destination).
///
/// Reconciliation, not commands: on every change of the cluster (and of the camera's own attributes) it reads the
/// whole desired state and brings the recorder and the deliveries to it (``reconcile()``): level-triggered and
/// idempotent, so a change seen late or twice costs nothing and nothing can be dropped or reordered. Only a manual
/// trigger is an event; it follows the reconcile of the changes before it, so it reaches the recording those made.
///
/// Cameras share nothing but the spool and the TLS registry: a camera whose recorder, store or uploads fail leaves the
/// others recording.
final class CameraService: Service, Sendable {
    let configuration: CameraConfiguration
    let server: PushAVStreamTransportServer
    let store: TransportStore
    let recorder: CameraRecorder
    let attributes: Mutex<CameraAttributes>
    let attributesFile: URL
    /// Begin and End from the media thread to `server`, in order.
    let announcer: RecordingAnnouncer
    let deliveries: CameraDeliveries
    let spool: SegmentSpool
    let uploadPolicy: UploadPolicy
    /// The private key a stored destination refers to (the owner-only credential store); nil when it is gone.
    let privateKey: @Sendable (String) async -> Data?
    /// Carries `camera` on every line.
    let logger: Logger
    /// What the camera runs, as the last reconcile left it.
    let running = Mutex(Running())
    /// Reconciles (and the start's resumption of stored destinations) run one at a time.
    let reconciling = SerialGate()
    /// Changes of the cluster not reconciled yet (see ``follow(_:)``).
    let changesPending = Atomic<Bool>(false)
    /// Counts, for tests and the logs: changes the follower took from the cluster, and reconciles run.
    let changesFollowed = Atomic<Int>(0)
    let reconcileRuns = Atomic<Int>(0)
    /// `pushav_connections_refused_without_tls_endpoint_total{camera}`.
    let refusedWithoutTLSEndpoint: Counter

    /// What the camera runs.
    struct Running {
        /// Each recorded connection: what its recording is made from, and the recording itself.
        var connections: [UInt16: RunningConnection] = [:]
        /// Connections refused for want of their TLS endpoint.
        var withoutTLSEndpoint: Set<UInt16> = []
        /// The highest cluster version applied: an older state read late is not applied over a newer one.
        var version: UInt64 = 0
        /// Raised on every registry change (privacy off, a TLS endpoint back, …): recordings backing off after a
        /// failure try again at once.
        var retryEpoch = 0
        var nextGeneration = 1
    }

    struct RunningConnection {
        var spec: ConnectionReconciler.Spec
        var generation: Int
        var policy: ClipPolicy
        var upload: DestinationUpload
    }

    init(configuration: CameraConfiguration, server: PushAVStreamTransportServer, store: TransportStore,
         recorder: CameraRecorder, attributes: CameraAttributes, attributesFile: URL, spool: SegmentSpool,
         uploadPolicy: UploadPolicy, retiredPatience: Duration, logger: Logger,
         privateKey: @escaping @Sendable (String) async -> Data? = { _ in nil },
         destinationForgotten: @escaping @Sendable (String) async -> Void = { _ in }) {
        self.configuration = configuration
        self.server = server
        self.store = store
        self.recorder = recorder
        self.attributes = Mutex(attributes)
        self.attributesFile = attributesFile
        self.spool = spool
        self.uploadPolicy = uploadPolicy
        self.privateKey = privateKey
        var logger = logger
        logger[metadataKey: "camera"] = "\(configuration.id)"
        self.logger = logger
        announcer = RecordingAnnouncer(server: server, logger: logger)
        deliveries = CameraDeliveries(spool: spool, retiredPatience: retiredPatience, logger: logger,
                                      destinationForgotten: destinationForgotten)
        refusedWithoutTLSEndpoint = Counter(label: "pushav_connections_refused_without_tls_endpoint_total",
                                            dimensions: [("camera", configuration.id)])
        recorder.reportZoneEvents { [announcer] event in announcer.send(.zone(event)) }
    }

    /// Records and uploads until graceful shutdown (or cancellation): then the recorder stops reading and ends its
    /// open recordings at the last frame read (End events, which the announcer delivers before the event streams
    /// close), the deliveries spool what was cut and get `uploadGrace` to deliver it, and the store closes.
    func run() async throws {
        let changes = await server.changes()
        await withDiscardingTaskGroup { group in
            group.addTask { await self.deliveries.run() }
            await reconcile()
            await reconciling.run { await self.resumeStoredDestinations() }
            group.addTask { await self.follow(changes) }
            group.addTask {
                await self.server.runExpiryTimer { error in
                    self.logger.error("expiring connections failed", metadata: ["error": "\(error)"])
                }
            }
            await withDiscardingTaskGroup { announcing in
                announcing.addTask { await self.announcer.run() }
                await withGracefulShutdownHandler {
                    await withTaskCancellationHandler {
                        await self.recorder.run()
                    } onCancel: {
                        self.recorder.requestStop()
                    }
                } onGracefulShutdown: {
                    self.recorder.requestStop()
                }
                announcer.finish()
            }
            logger.notice("recorder stopped; delivering what was cut")
            // The event streams end (the API's subscribers see them close), and with them the change follower.
            await server.finishSubscriptions()
            await deliveries.shutdown(grace: Self.uploadGrace)
            group.cancelAll()  // the expiry timer
        }
        try? await BlockingIO.run { [store] in try store.close() }
    }

    /// How `connection`'s uploads went lately (last delivery, last problem); nil when it records nothing.
    func uploadActivity(_ connection: UInt16) -> UploadActivity? {
        running.withLock { $0.connections[connection]?.upload.uploader.activity }
    }

    /// How long the deliveries may go on after the recorder stopped; what is left stays in the spool.
    static let uploadGrace: Duration = .seconds(3)

    /// Reconciles after changes, a burst of them at once: a reconcile reads the cluster's whole current state, so one
    /// run after N changes applies all N (one full reconcile per change let a burst of commands queue that many). The
    /// bound: the stream holds what the follower has not taken yet, one entry per command the cluster accepted, and
    /// the follower takes each at once (it never waits for a reconcile, except before a manual trigger); the changes
    /// it took are one flag and one pending wake-up. A manual trigger is passed on once the changes before it are
    /// applied: it runs any reconcile still owed, in the same gate as the others, before the trigger.
    func follow(_ changes: AsyncStream<TransportChange>) async {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await _ in wakes { await self.reconcileIfChanged() }
            }
            for await change in changes {
                changesFollowed.add(1, ordering: .relaxed)
                switch change {
                case .manuallyTriggered(let trigger):
                    await reconcileIfChanged()
                    recorder.trigger(trigger.connectionID, reason: trigger.activationReason,
                                     timeControl: ClipTimeControl(trigger.timeControl))
                case .registriesChanged:
                    running.withLock { $0.retryEpoch += 1 }
                    changesPending.store(true, ordering: .sequentiallyConsistent)
                    wake.yield()
                case .allocated, .modified, .statusChanged, .deallocated:
                    changesPending.store(true, ordering: .sequentiallyConsistent)
                    wake.yield()
                }
            }
            wake.finish()
        }
    }

    /// Reconciles if a change came since the last one: the flag is taken inside the gate, so whoever finds it set
    /// (the follower's reconciler or a manual trigger) applies the changes before anything else passes the gate.
    private func reconcileIfChanged() async {
        await reconciling.run {
            guard self.changesPending.exchange(false, ordering: .sequentiallyConsistent) else { return }
            await self.reconcileNow()
        }
    }

    /// Brings the recorder and the deliveries to the cluster's desired state and the camera's attributes (see
    /// ``ConnectionReconciler`` and `RecordingReconciler`). Safe to call at any time, from any task: reconciles run
    /// one at a time. A new destination is in the spool before the recorder can write for it, and a retired one is
    /// marked retired after the recorder stopped writing for it.
    func reconcile() async {
        await reconciling.run { await self.reconcileNow() }
    }

    func reconcileNow() async {
        reconcileRuns.add(1, ordering: .relaxed)
        let state = await server.desiredState()
        let muted = attributes.withLock { $0.recordingMicrophoneMuted }
        let registries = state.registries
        var wanted: [UInt16: ConnectionReconciler.Wanted] = [:]
        var destinations: [UInt16: (UploadDestination, ClientTLSMaterial)] = [:]
        for connection in state.connections {
            let id = connection.connectionID
            guard let endpoint = registries.tls.endpoint(for: connection) else {
                wanted[id] = .init(spec: nil)
                continue
            }
            let destination = Self.destination(of: connection, camera: configuration.id, endpoint: endpoint)
            destinations[id] = destination
            wanted[id] = .init(spec: .init(options: connection.transportOptions, destination: destination.0.key))
        }
        let connections = Dictionary(uniqueKeysWithValues: state.connections.map { ($0.connectionID, $0) })
        // One step under the lock: what runs, what is desired, what the recorder is told.
        let (desired, registered, retired, restored) = running.withLock { running
            -> (DesiredRecordings?, [UploadDestination], [String], [UInt16]) in
            guard state.version >= running.version else { return (nil, [], [], []) }
            running.version = state.version
            var registered: [UploadDestination] = []
            var retired: [String] = []
            var restored: [UInt16] = []
            for action in ConnectionReconciler.actions(wanted: wanted, running: running.connections.mapValues(\.spec)) {
                switch action {
                case .record(let id):
                    let connection = connections[id]!
                    let (destination, tls) = destinations[id]!
                    do {
                        let upload = try deliveries.delivery(for: destination) { try makeUpload(destination, tls: tls, connection: connection) }
                        guard let upload else { continue }  // shutting down
                        let policy = try self.policy(connection, upload: upload, zones: registries.zoneManagement.sortedZones,
                                                     zoneSensitivity: registries.zoneManagement.sensitivity)
                        running.connections[id] = RunningConnection(spec: wanted[id]!.spec!, generation: running.nextGeneration,
                                                                    policy: policy, upload: upload)
                        running.nextGeneration += 1
                        registered.append(destination)
                        if running.withoutTLSEndpoint.remove(id) != nil { restored.append(id) }
                        // "recording" only when it records: a new connection is Inactive until SetTransportStatus.
                        logger.info(connection.transportStatus == .active ? "connection attached: recording"
                                        : "connection attached: Inactive, records once SetTransportStatus makes it Active", metadata: [
                            "connection": "\(id)", "url": "\(CredentialRedaction.redact(connection.transportOptions.url))",
                            "destination": "\(destination.key)",
                            "trigger": "\(connection.transportOptions.triggerOptions.triggerType)",
                            "status": "\(connection.transportStatus)",
                        ])
                    } catch {
                        // Allocation validated these options; what is left is the recorder's own refusal (e.g. CENC).
                        logger.error("connection cannot be recorded", metadata: ["connection": "\(id)", "error": "\(error)"])
                        running.connections[id] = nil
                    }
                case .keep:
                    break
                case .stop(let id):
                    running.connections[id] = nil
                case .refuse(let id):
                    // Logged as it is listed: whoever reads the list finds the line too.
                    if running.withoutTLSEndpoint.insert(id).inserted { noteRefusedWithoutTLSEndpoint(connections[id]!) }
                case .retire(let key):
                    retired.append(key)
                }
            }
            running.withoutTLSEndpoint.formIntersection(connections.keys)
            var recordings: [UInt16: DesiredRecording] = [:]
            for (id, recording) in running.connections {
                let connection = connections[id]!
                let options = connection.transportOptions
                var desired = DesiredRecording(
                    policy: recording.policy, generation: recording.generation,
                    active: connection.transportStatus == .active && !registries.streams.privacy.forbids(options.streamUsage),
                    includeAudio: options.audioStreamID?.value != nil && !muted, retryEpoch: running.retryEpoch)
                if options.triggerOptions.triggerType == .motion {
                    // A transport without a sensitivity of its own follows the Zone Management Sensitivity at once.
                    desired.motionFilter = MotionTriggerFilter(triggers: options.triggerOptions, zones: registries.zoneManagement.sortedZones,
                                                               zoneManagementSensitivity: registries.zoneManagement.sensitivity)
                }
                recordings[id] = desired
            }
            return (DesiredRecordings(connections: recordings, zones: registries.zoneManagement.sortedZones, zoneTriggers: state.zoneTriggers),
                    registered, retired, restored)
        }
        guard let desired else { return }
        for destination in registered {
            do {
                try await spool.register(destination)
            } catch {
                // Its objects are still spooled and delivered by this process; a restart would not know where they go
                // (reported then as unreachable, never sent elsewhere).
                logger.error("could not record a destination in the spool", metadata: [
                    "destination": "\(destination.key)", "error": "\(error)",
                ])
            }
        }
        let applied = recorder.setDesired(desired)
        for key in retired { await retire(key, recorderCatchesUp: applied) }
        for id in restored {
            logger.notice("connection's TLS endpoint is back; recording again", metadata: ["connection": "\(id)"])
        }
    }

}
