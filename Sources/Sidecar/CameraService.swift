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
/// cluster, and per attached connection a ``ConnectionUpload``. It follows the cluster's change stream: what a command
/// changes reaches the recorder and the uploads from there, so the HTTP API and the tests drive the same path.
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
    private let spool: SegmentSpool
    private let uploadPolicy: UploadPolicy
    /// Carries `camera` on every line.
    private let logger: Logger
    /// What each attached connection records with and uploads through.
    private let attached = Mutex<[UInt16: AttachedConnection]>([:])
    /// Uploads of connections that were modified or deallocated, finishing what they hold.
    private let retiring = Mutex<[Task<Void, Never>]>([])
    /// Connections that record nothing because their TLS endpoint is gone (see ``refuseWithoutTLSEndpoint(_:)``).
    private let withoutTLSEndpoint = Mutex<Set<UInt16>>([])
    /// `pushav_connections_refused_without_tls_endpoint_total{camera}`.
    private let refusedWithoutTLSEndpoint: Counter

    private struct AttachedConnection: Sendable {
        let upload: ConnectionUpload
        /// The options it records with: a Modify that changes nothing of them but ExpiryTime does not re-attach.
        let options: TransportOptionsStruct
        /// The TLS endpoint its upload was made with: when the registry's changes, the connection is attached again.
        let tlsEndpoint: TLSEndpoint
    }

    init(configuration: CameraConfiguration, server: PushAVStreamTransportServer, store: TransportStore,
         recorder: CameraRecorder, attributes: CameraAttributes, attributesFile: URL, spool: SegmentSpool,
         uploadPolicy: UploadPolicy, logger: Logger) {
        self.configuration = configuration
        self.server = server
        self.store = store
        self.recorder = recorder
        self.attributes = Mutex(attributes)
        self.attributesFile = attributesFile
        self.spool = spool
        self.uploadPolicy = uploadPolicy
        var logger = logger
        logger[metadataKey: "camera"] = "\(configuration.id)"
        self.logger = logger
        announcer = RecordingAnnouncer(server: server, logger: logger)
        refusedWithoutTLSEndpoint = Counter(label: "pushav_connections_refused_without_tls_endpoint_total",
                                            dimensions: [("camera", configuration.id)])
        recorder.reportZoneEvents { [announcer] event in announcer.send(.zone(event)) }
    }

    /// Records and uploads until graceful shutdown (or cancellation): then the recorder stops reading and ends its
    /// open recordings at the last frame read (End events, which the announcer delivers before the event streams
    /// close), the uploads spool what was cut and get `uploadGrace` to deliver it, and the store closes.
    func run() async throws {
        let changes = await server.changes()
        recorder.setZoneTriggers(await server.resolvedZoneTriggers)
        for connection in await server.allConnections() { await attach(connection) }
        await withDiscardingTaskGroup { group in
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
            group.cancelAll()  // the expiry timer
        }
        await finishUploads(within: Self.uploadGrace)
        try? store.close()
    }

    /// How `connection`'s uploads went lately (last delivery, last problem); nil when it is not attached.
    func uploadActivity(_ connection: UInt16) -> UploadActivity? {
        attached.withLock { $0[connection]?.upload.uploader.activity }
    }

    /// How long the uploads may go on delivering after the recorder stopped; what is left stays in the spool.
    static let uploadGrace: Duration = .seconds(3)

    private func finishUploads(within grace: Duration) async {
        let uploads = attached.withLock { attached in
            defer { attached.removeAll() }
            return attached.values.map(\.upload)
        }
        await withTaskGroup(of: Void.self) { group in
            for upload in uploads { group.addTask { _ = await upload.finish(grace: grace) } }
        }
        for task in retiring.withLock({ $0 }) { task.cancel() }
    }

    private func follow(_ changes: AsyncStream<TransportChange>) async {
        for await change in changes {
            switch change {
            case .allocated(let connection):
                await attach(connection)
            case .modified(let connection):
                // A Modify that only renews ExpiryTime (how a controller keeps a transport alive) leaves the running
                // recording and its upload alone; the cluster did not cut it either.
                let recorded = attached.withLock { $0[connection.connectionID]?.options }
                if let recorded, recorded.ignoringExpiry == connection.transportOptions.ignoringExpiry { continue }
                await attach(connection)
            case .statusChanged(let id, let status):
                recorder.setActive(id, status == .active)
            case .deallocated(let id, let reason):
                withoutTLSEndpoint.withLock { _ = $0.remove(id) }
                recorder.detach(id)
                if let connection = attached.withLock({ $0.removeValue(forKey: id) }) {
                    retire(connection.upload, reason: "\(reason)")
                }
            case .manuallyTriggered(let trigger):
                recorder.trigger(trigger.connectionID, reason: trigger.activationReason,
                                 timeControl: ClipTimeControl(trigger.timeControl))
            case .recordingCut(let id, _, let reason):
                switch reason {
                case .privacy:
                    recorder.cut(id)  // stays attached and Active; the cluster refuses new recordings while private
                default:
                    // Deallocate, expiry, fabric removal, Modify and Inactive: the connection stops recording here;
                    // the change that follows (detach, a new attachment, the status) says what comes next. Cutting
                    // and re-activating would let a Continuous timeline begin again and be refused.
                    recorder.setActive(id, false)
                }
            case .registriesChanged:
                // A zone created, changed or removed (Zone Management): the analysis follows at once.
                let registries = await server.currentRegistries
                let connections = await server.allConnections()
                recorder.setZones(registries.sortedZones)
                // A trigger set or removed, the Sensitivity attribute written: zone events follow at once.
                recorder.setZoneTriggers(await server.resolvedZoneTriggers)
                followZoneSensitivity(registries, connections)
                await followTLSEndpoints(registries, connections)
                // Privacy turned off, a TLS endpoint replaced, …: recordings backing off after a refusal try again now.
                for connection in connections { recorder.retry(connection.connectionID) }
            }
        }
    }

    /// The Zone Management Sensitivity may have changed: every attached Motion transport that falls back on it
    /// matches motion with the new value from now on (its running clip goes on).
    private func followZoneSensitivity(_ registries: TransportRegistries, _ connections: [StoredConnection]) {
        for connection in connections where connection.transportOptions.triggerOptions.triggerType == .motion {
            recorder.setMotionFilter(connection.connectionID, MotionTriggerFilter(
                triggers: connection.transportOptions.triggerOptions, zones: registries.sortedZones,
                zoneManagementSensitivity: registries.zoneSensitivity))
        }
    }

    /// A TLS endpoint was added, replaced or removed: a connection whose endpoint changed is attached again with the
    /// new one (its running recording ends, as after a Modify); one whose endpoint is gone is refused; one refused
    /// before whose endpoint is back records again.
    private func followTLSEndpoints(_ registries: TransportRegistries, _ connections: [StoredConnection]) async {
        for connection in connections {
            let id = connection.connectionID
            let current = registries.tlsEndpoint(for: connection)
            let (used, refused) = (attached.withLock { $0[id]?.tlsEndpoint }, withoutTLSEndpoint.withLock { $0.contains(id) })
            if refused ? current != nil : used != current { await attach(connection) }
        }
    }

    /// The connection's TLS endpoint is gone (removed under it, or lost from the store): uploading anyway would send
    /// the recordings with the system's trust roots and no client certificate, to a server nobody authorised. It
    /// records nothing until the endpoint is back (logged, counted, and listed in `GET /v1/cameras` as
    /// `connectionsWithoutTLSEndpoint`); what it spooled before stays with its earlier upload.
    private func refuseWithoutTLSEndpoint(_ connection: StoredConnection) {
        let id = connection.connectionID
        recorder.detach(id)
        if let previous = attached.withLock({ $0.removeValue(forKey: id) }) { retire(previous.upload, reason: "TLS endpoint gone") }
        let isNew = withoutTLSEndpoint.withLock { $0.insert(id).inserted }
        guard isNew else { return }
        refusedWithoutTLSEndpoint.increment()
        logger.error("connection refused: its TLS endpoint is gone, so nothing is recorded or uploaded until it is provisioned again", metadata: [
            "connection": "\(id)", "tlsEndpointID": "\(connection.transportOptions.tlsEndpointID)",
            "fabric": "\(connection.fabricIndex)",
        ])
    }

    /// Connections refused for want of their TLS endpoint, in ID order.
    var connectionsWithoutTLSEndpoint: [UInt16] { withoutTLSEndpoint.withLock { $0.sorted() } }

    /// Records `connection` from its camera's pipeline and uploads to its URL (replacing an earlier attachment).
    private func attach(_ connection: StoredConnection) async {
        let id = connection.connectionID
        guard let endpoint = await server.tlsEndpoint(forConnection: id) else {
            refuseWithoutTLSEndpoint(connection)
            return
        }
        if withoutTLSEndpoint.withLock({ $0.remove(id) }) != nil {
            logger.notice("connection's TLS endpoint is back; recording again", metadata: ["connection": "\(id)"])
        }
        let tls = ClientTLSMaterial(endpoint)
        do {
            let upload = try makeUpload(connection, tls: tls)
            let attachment = AttachedConnection(upload: upload, options: connection.transportOptions, tlsEndpoint: endpoint)
            if let previous = attached.withLock({ $0.updateValue(attachment, forKey: id) }) {
                retire(previous.upload, reason: "modified")
            }
            let muted = attributes.withLock { $0.recordingMicrophoneMuted }
            let registries = await server.currentRegistries
            let policy = try self.policy(connection, upload: upload, zones: registries.sortedZones,
                                         zoneSensitivity: registries.zoneSensitivity, includeAudio: !muted)
            recorder.attach(id, policy: policy, active: connection.transportStatus == .active)
            logger.info("connection recording", metadata: [
                "connection": "\(id)", "url": "\(connection.transportOptions.url)",
                "trigger": "\(connection.transportOptions.triggerOptions.triggerType)",
                "status": "\(connection.transportStatus)",
            ])
        } catch {
            // Allocation validated these options; what is left is the recorder's own refusal (e.g. CENC).
            logger.error("connection cannot be recorded", metadata: ["connection": "\(id)", "error": "\(error)"])
        }
    }

    private func makeUpload(_ connection: StoredConnection, tls: ClientTLSMaterial) throws -> ConnectionUpload {
        let options = connection.transportOptions
        let url = options.url.hasSuffix("/") ? options.url : options.url + "/"
        let segment = Duration.milliseconds(Int64(options.containerOptions.cmafContainerOptions?.segmentDuration ?? 4000))
        let policy = uploadPolicy
        let endpoint = UploadEndpoint(url: url, connection: SidecarEngine.spoolKey(camera: configuration.id, connection: connection.connectionID),
                                      tls: tls)
        let recorder = self.recorder
        let connectionID = connection.connectionID
        return ConnectionUpload(uploader: try SegmentUploader(
            spool: spool, endpoint: endpoint, policy: policy, segmentDuration: segment,
            logger: connectionLogger(connectionID)),
            spoolFailed: { session, error in recorder.sessionFailed(connectionID, session: session, reason: "\(error)") })
    }

    /// The camera's logger with the connection ID every line about one connection carries.
    private func connectionLogger(_ connection: UInt16) -> Logger {
        var logger = self.logger
        logger[metadataKey: "connection"] = "\(connection)"
        return logger
    }

    private func policy(_ connection: StoredConnection, upload: ConnectionUpload, zones: [MotionZone], zoneSensitivity: UInt8,
                        includeAudio: Bool) throws -> ClipPolicy {
        let id = connection.connectionID
        let output = recorder.output.appendingPathComponent("connection-\(id)")
        let options = try RecordingOptions(transport: connection.transportOptions, zones: zones,
                                           zoneManagementSensitivity: zoneSensitivity, output: output)
        var policy = options.policies[0]
        let hasAudio = connection.transportOptions.audioStreamID?.value != nil
        var format = options.sessionFormat
        format.includeAudio = includeAudio && hasAudio
        // An MP4 of each event clip for the status page (the newest 20 per camera are kept); a Continuous session can
        // last for days, so it gets none, and an encrypted transport none either (the clip would be clear).
        format.writeClips = connection.transportOptions.triggerOptions.triggerType != .continuous && format.encryption == nil
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
                    started.withLock { $0[session] = Date() }
                    recorder.noteRecordingBegan(connection: id, session: UInt64(session), thumbnail: request.thumbnail)
                    upload.sessionBegan()
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
                    return
                }
                upload.handle(.sessionFinished(record))
                recorder.noteClip(CameraStatus.RecentClip(
                    connectionID: id, cmafSessionNumber: UInt64(record.session),
                    started: started.withLock { $0.removeValue(forKey: record.session) } ?? Date(), ended: Date(),
                    endReason: record.endReason, triggerType: record.triggerType,
                    triggerOffset: record.trigger.map { max(0, $0 - record.start) }),
                    file: record.clip.map { output.appendingPathComponent($0) })
                logger.info("recording finished", metadata: [
                    "session": "\(record.session)", "duration": "\(record.duration)",
                    "reason": "\(record.endReason)",
                ])
            },
            events: { event in upload.handle(event) })
        return policy
    }

    /// A modified or deallocated connection's pending objects are still delivered (a detached delivery, with the URL
    /// and certificates they were recorded for): its uploader runs until the spool holds nothing of it (or its retry
    /// budget gives up), then stops.
    private func retire(_ upload: ConnectionUpload, reason: String) {
        let logger = self.logger
        let task = Task {
            let summary = await upload.finish()
            logger.info("connection upload finished", metadata: [
                "connection": "\(upload.uploader.endpoint.connection)", "reason": "\(reason)",
                "delivered": "\(summary.delivered)", "complete": "\(summary.complete)", "givenUp": "\(summary.givenUp)",
                "unconfirmed": "\(summary.unconfirmed)",
            ])
        }
        retiring.withLock { $0.append(task) }
    }
}
