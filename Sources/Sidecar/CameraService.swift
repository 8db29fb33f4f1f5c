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
    private let spool: SegmentSpool
    private let uploadPolicy: UploadPolicy
    /// The private key a stored destination refers to (the owner-only credential store); nil when it is gone.
    private let privateKey: @Sendable (String) async -> Data?
    /// Carries `camera` on every line.
    private let logger: Logger
    /// What the camera runs, as the last reconcile left it.
    private let running = Mutex(Running())
    /// Reconciles (and the start's resumption of stored destinations) run one at a time.
    private let reconciling = SerialGate()
    /// `pushav_connections_refused_without_tls_endpoint_total{camera}`.
    private let refusedWithoutTLSEndpoint: Counter

    /// What the camera runs.
    private struct Running {
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

    private struct RunningConnection {
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

    /// Reconciles after each change; passes each manual trigger on once the changes before it are applied.
    private func follow(_ changes: AsyncStream<TransportChange>) async {
        for await change in changes {
            switch change {
            case .manuallyTriggered(let trigger):
                recorder.trigger(trigger.connectionID, reason: trigger.activationReason,
                                 timeControl: ClipTimeControl(trigger.timeControl))
            case .registriesChanged:
                running.withLock { $0.retryEpoch += 1 }
                await reconcile()
            case .allocated, .modified, .statusChanged, .deallocated:
                await reconcile()
            }
        }
    }

    /// Brings the recorder and the deliveries to the cluster's desired state and the camera's attributes (see
    /// ``ConnectionReconciler`` and `RecordingReconciler`). Safe to call at any time, from any task: reconciles run
    /// one at a time. A new destination is in the spool before the recorder can write for it, and a retired one is
    /// marked retired after the recorder stopped writing for it.
    func reconcile() async {
        await reconciling.run { await self.reconcileNow() }
    }

    private func reconcileNow() async {
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
                        logger.info("connection recording", metadata: [
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
        recorder.setDesired(desired)
        for key in retired { await retire(key) }
        for id in restored {
            logger.notice("connection's TLS endpoint is back; recording again", metadata: ["connection": "\(id)"])
        }
    }

    /// Where `connection`'s recordings go now: its URL, its fabric and its TLS endpoint's material.
    static func destination(of connection: StoredConnection, camera: String, endpoint: TLSEndpoint)
        -> (UploadDestination, ClientTLSMaterial)
    {
        let tls = ClientTLSMaterial(endpoint)
        let destination = UploadDestination(
            owner: SidecarEngine.spoolOwner(camera: camera, connection: connection.connectionID),
            url: connection.transportOptions.url, fabric: connection.fabricIndex, trustedCertificates: tls.trustedCertificates,
            certificateChain: tls.certificateChain,
            privateKeyReference: endpoint.privateKey.isEmpty ? nil : TLSCredentialStore.reference(of: endpoint.privateKey))
        return (destination, tls)
    }

    /// The destination is no longer any connection's: it finishes what it holds at its own URL (marked in the spool,
    /// so a restart goes on with it).
    private func retire(_ key: String) async {
        do {
            try await spool.retire(destination: key)
        } catch {
            logger.error("could not mark a destination retired in the spool; it is retired in memory", metadata: [
                "destination": "\(key)", "error": "\(error)",
            ])
        }
        deliveries.retire(key)
        logger.info("destination retired: it delivers what it holds, then ends", metadata: ["destination": "\(key)"])
    }

    /// At start: destinations of this camera that the spool still holds objects for and no connection records for
    /// now (modified, deallocated, replaced TLS endpoint before the last stop) deliver them, retired, with the URL and
    /// certificates they were recorded for.
    private func resumeStoredDestinations() async {
        let stored: [StoredDestination]
        do {
            stored = try await spool.storedDestinations()
        } catch {
            logger.error("cannot read the spool's destinations; objects of earlier destinations wait for the next start",
                         metadata: ["error": "\(error)"])
            return
        }
        let prefix = configuration.id + "/"
        let current = deliveries.runningKeys
        for entry in stored where entry.destination.owner.hasPrefix(prefix) && !current.contains(entry.destination.key) {
            let destination = entry.destination
            guard entry.pending > 0 else {
                try? await spool.retire(destination: destination.key)
                try? await spool.forgetDestinationIfDone(destination.key)
                continue
            }
            var key: Data?
            if let reference = destination.privateKeyReference { key = await privateKey(reference) }
            if destination.privateKeyReference != nil && key == nil {
                logger.error("a stored destination's private key is gone; its objects cannot be delivered and stay in the spool", metadata: [
                    "destination": "\(destination.key)", "objects": "\(entry.pending)",
                ])
                continue
            }
            let endpoint = destination.endpoint(privateKey: Array(key ?? Data()))
            do {
                _ = try deliveries.delivery(for: destination) {
                    DestinationUpload(uploader: try SegmentUploader(
                        spool: spool, endpoint: endpoint, policy: uploadPolicy, segmentDuration: .seconds(4),
                        logger: logger))
                }
                try? await spool.retire(destination: destination.key)
                deliveries.retire(destination.key, retiredAt: entry.retiredAt ?? Date())
                logger.notice("delivering what an earlier destination still holds", metadata: [
                    "destination": "\(destination.key)", "url": "\(CredentialRedaction.redact(destination.url))",
                    "objects": "\(entry.pending)",
                ])
            } catch {
                logger.error("a stored destination's TLS material does not load; its objects stay in the spool", metadata: [
                    "destination": "\(destination.key)", "error": "\(error)",
                ])
            }
        }
    }

    /// The connection's TLS endpoint is gone (removed under it, or lost from the store): it records nothing until
    /// the endpoint is back (logged, counted, and listed in `GET /v1/cameras` as `connectionsWithoutTLSEndpoint`);
    /// what it spooled before stays with its destination.
    private func noteRefusedWithoutTLSEndpoint(_ connection: StoredConnection) {
        refusedWithoutTLSEndpoint.increment()
        logger.error("connection refused: its TLS endpoint is gone, so nothing is recorded or uploaded until it is provisioned again", metadata: [
            "connection": "\(connection.connectionID)", "tlsEndpointID": "\(connection.transportOptions.tlsEndpointID)",
            "fabric": "\(connection.fabricIndex)",
        ])
    }

    /// Connections refused for want of their TLS endpoint, in ID order.
    var connectionsWithoutTLSEndpoint: [UInt16] { running.withLock { $0.withoutTLSEndpoint.sorted() } }

    private func makeUpload(_ destination: UploadDestination, tls: ClientTLSMaterial, connection: StoredConnection) throws
        -> DestinationUpload
    {
        let options = connection.transportOptions
        let segment = Duration.milliseconds(Int64(options.containerOptions.cmafContainerOptions?.segmentDuration ?? 4000))
        let endpoint = UploadEndpoint(url: destination.url, connection: destination.key, tls: tls)
        let recorder = self.recorder
        let connectionID = connection.connectionID
        return DestinationUpload(uploader: try SegmentUploader(
            spool: spool, endpoint: endpoint, policy: uploadPolicy, segmentDuration: segment,
            logger: connectionLogger(connectionID)),
            spoolFailed: { session, error in recorder.sessionFailed(connectionID, session: session, reason: "\(error)") })
    }

    /// The camera's logger with the connection ID every line about one connection carries.
    private func connectionLogger(_ connection: UInt16) -> Logger {
        var logger = self.logger
        logger[metadataKey: "connection"] = "\(connection)"
        return logger
    }

    private func policy(_ connection: StoredConnection, upload: DestinationUpload, zones: [MotionZone], zoneSensitivity: UInt8)
        throws -> ClipPolicy
    {
        let id = connection.connectionID
        let output = recorder.output.appendingPathComponent("connection-\(id)")
        let options = try RecordingOptions(transport: connection.transportOptions, zones: zones,
                                           zoneManagementSensitivity: zoneSensitivity, output: output)
        var policy = options.policies[0]
        let hasAudio = connection.transportOptions.audioStreamID?.value != nil
        var format = options.sessionFormat
        format.includeAudio = hasAudio
        // No second copy for the status page: the spool keeps the video track of each recording once delivered (a
        // recent recording) and the page plays that. An encrypted transport keeps none (it would play in the clear).
        format.writeClips = false
        let keepsRecent = format.encryption == nil
        let videoTrack = format.videoTrackName
        let spool = self.spool
        // The picture at each trigger for the status page; none for an encrypted transport, for the same reason.
        format.thumbnails = format.encryption == nil
        // The spool is the only copy of what is uploaded (written once, durably); no working copy beside it.
        format.writesSegmentFiles = false
        policy.format = format
        let recorder = self.recorder
        let started = Mutex<[Int: Date]>([:])
        let logger = connectionLogger(id)
        let announcer = self.announcer
        policy.hooks = SessionHooks(
            begin: { request in
                announcer.send(.begin(connection: id, request, began: { session in
                    let now = Date()
                    started.withLock { $0[session] = now }
                    recorder.noteRecordingBegan(connection: id, session: UInt64(session), thumbnail: request.thumbnail)
                    upload.sessionBegan()
                    guard keepsRecent else { return }
                    do {
                        try await spool.keepRecent(session, connection: upload.destination, track: videoTrack, started: now,
                                                   thumbnail: request.thumbnail?.bytes)
                    } catch {
                        // The recording goes on and is delivered; the page will not have it.
                        logger.warning("could not keep the recording for the status page", metadata: [
                            "session": "\(session)", "error": "\(error)",
                        ])
                    }
                }))
            },
            withdraw: { request in
                announcer.send(.withdraw(connection: id, request, ended: { session in
                    started.withLock { $0[session] = nil }
                    recorder.noteRecordingGone(connection: id, session: UInt64(session))
                    upload.sessionWritten()
                }))
            },
            end: { session in announcer.send(.end(connection: id, session: session)) },
            finished: { record in
                defer { upload.sessionWritten() }
                // The bytes went to the spool with the events; the working copy is not needed (and a failed session's
                // partial files must not keep filling the disk that made it fail).
                try? FileManager.default.removeItem(at: output.appendingPathComponent("session_\(record.session)"))
                guard !record.tracks.isEmpty else {  // dropped (logged and counted by the recorder)
                    recorder.noteRecordingGone(connection: id, session: UInt64(record.session))
                    if keepsRecent { upload.recentFinished(session: record.session, nil) }
                    return
                }
                upload.handle(.sessionFinished(record))
                if keepsRecent {
                    upload.recentFinished(session: record.session, RecentSummary(
                        ended: Date(), endReason: record.endReason, triggerType: record.triggerType,
                        triggerOffset: record.trigger.map { max(0, $0 - record.start) }))
                }
                recorder.noteClip(CameraStatus.RecentClip(
                    connectionID: id, cmafSessionNumber: UInt64(record.session),
                    started: started.withLock { $0.removeValue(forKey: record.session) } ?? Date(), ended: Date(),
                    endReason: record.endReason, triggerType: record.triggerType,
                    triggerOffset: record.trigger.map { max(0, $0 - record.start) }))
                logger.info("recording finished", metadata: [
                    "session": "\(record.session)", "duration": "\(record.duration)",
                    "reason": "\(record.endReason)",
                ])
            },
            events: { event in upload.handle(event) })
        return policy
    }
}
