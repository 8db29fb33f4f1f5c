import Domain
import Foundation
import Ingest
import Logging
import MediaIO
import Metrics
import Recorder
import ServiceLifecycle
import Synchronization
import Timeline
import TransportModel
import TransportStore

// SidecarControl: what the HTTP API drives — the cameras' clusters, status, recent clips and thumbnails, TLS endpoints,
// readiness and health.
extension SidecarEngine {
    public var cameraIDs: [String] { cameras.map(\.configuration.id) }

    /// Drops the keys neither a camera's TLS endpoint nor a destination in the spool refers to any more.
    func pruneEndpointKeys() async throws {
        try await keyPruning.prune()
    }

    func camera(_ id: String) -> CameraService? { cameras.first { $0.configuration.id == id } }

    public func transport(camera id: String) -> PushAVStreamTransportServer? { camera(id)?.server }

    public func cameraStatuses() async -> [CameraStatus] {
        var statuses: [CameraStatus] = []
        let queues = Self.byOwner((try? await spool.connectionQueueStates()) ?? [:])
        let kept = (try? await spool.recentRecordings()) ?? []
        for camera in cameras {
            var status = camera.recorder.status
            status.recentClips = Self.recentClips(status.recentClips, kept: kept, camera: camera.configuration.id)
            status.connectionsWithoutTLSEndpoint = camera.connectionsWithoutTLSEndpoint
            for index in status.recentClips.indices {
                let clip = status.recentClips[index]
                let owner = Self.spoolOwner(camera: camera.configuration.id, connection: clip.connectionID)
                guard let delivery = try? await spool.sessionDelivery(clip.cmafSessionNumber, owner: owner) else { continue }
                status.recentClips[index].delivered = delivery == .delivered
                if case .givenUp = delivery { status.recentClips[index].givenUp = true }
            }
            status.attributes = await attributes(camera: camera.configuration.id)
            status.transports = await camera.server.allConnections().map { connection in
                Self.connectionStatus(connection, camera: camera,
                                      queue: queues[Self.spoolOwner(camera: camera.configuration.id, connection: connection.connectionID)])
            }
            for index in status.transports.indices {
                status.transports[index].sessionNumber = await camera.server.lastSessionNumber(
                    connectionID: status.transports[index].connectionID)
            }
            statuses.append(status)
        }
        return statuses
    }

    /// Each owner's queue over all its destinations (a connection modified while its ingest was down has objects
    /// waiting under more than one): the deepest together, the oldest of them.
    static func byOwner(_ queues: [String: ConnectionQueue]) -> [String: ConnectionQueue] {
        var owners: [String: ConnectionQueue] = [:]
        for (label, queue) in queues {
            let owner = UploadDestination.owner(ofKey: label)
            var total = owners[owner] ?? ConnectionQueue(depth: 0, oldestWaiting: nil)
            total.depth += queue.depth
            total.oldestWaiting = [total.oldestWaiting, queue.oldestWaiting].compactMap { $0 }.min()
            owners[owner] = total
        }
        return owners
    }

    /// What the status page shows of one connection: its options without URL credentials or path, its recording,
    /// its queue and its uploads.
    static func connectionStatus(_ connection: StoredConnection, camera: CameraService, queue: ConnectionQueue?) -> ConnectionStatus {
        let options = connection.transportOptions
        let wireTrigger = options.triggerOptions.triggerType
        let triggerType = wireTrigger.type?.rawValue ?? "unknown (\(wireTrigger.rawValue))"
        let running = camera.recorder.runningRecording(connection: connection.connectionID)
        let activity = camera.uploadActivity(connection.connectionID)
        return ConnectionStatus(
            connectionID: connection.connectionID, fabricIndex: connection.fabricIndex, triggerType: triggerType,
            transportStatus: connection.transportStatus == .active ? "active" : "inactive",
            ingest: Self.ingestAuthority(options.url), recordingSession: running?.session, recordingSince: running?.since,
            queueDepth: queue?.depth ?? 0, oldestWaiting: queue?.oldestWaiting, lastDelivery: activity?.lastDelivery,
            lastError: activity?.lastProblem.map(CredentialRedaction.redact), lastErrorAt: activity?.lastProblemAt,
            encrypted: options.containerOptions.cmafContainerOptions?.cencKey != nil)
    }

    /// `host[:port]` of an ingest URL: what tells ingests apart, without user information or a path (which may carry
    /// a token).
    static func ingestAuthority(_ url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else { return "?" }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let bracketed = bare.contains(":") ? "[\(bare)]" : bare
        return components.port.map { "\(bracketed):\($0)" } ?? bracketed
    }

    public func clip(camera id: String, connection: UInt16, session: SessionNumber) async -> ClipParts? {
        guard camera(id) != nil,
              let tracks = try? await spool.recentFiles(session, owner: Self.spoolOwner(camera: id, connection: connection))
        else { return nil }
        do {
            return try await BlockingIO.run { try ClipParts(playing: tracks) }
        } catch {
            // A file the journal lists but that cannot be read or parsed (evicted under the reader, damaged): no clip.
            logger.warning("could not lay out a recent clip", metadata: [
                "camera": "\(id)", "connection": "\(connection)", "session": "\(session)", "error": "\(error)",
            ])
            return nil
        }
    }

    /// The recorder's (made at the trigger: a recording running now, or one of this run) else one made from the
    /// spool's kept recording at its trigger (after a restart, or once the recorder's bound let it go), then held.
    public func thumbnail(camera id: String, connection: UInt16, session: SessionNumber) async -> Data? {
        guard let camera = camera(id) else { return nil }
        if let held = camera.recorder.thumbnail(connection: connection, session: session) { return Data(held.bytes) }
        let owner = Self.spoolOwner(camera: id, connection: connection)
        do {
            guard let recording = try await spool.recentRecording(session, owner: owner), recording.finished,
                  let files = try await spool.recentFiles(session, owner: owner) else { return nil }
            let picture = try await BlockingIO.run {
                try RecordedPicture.jpeg(of: files.video.map(\.file), at: recording.triggerOffset ?? 0,
                                         maxWidth: TriggerPictures.thumbnailWidth)
            }
            camera.recorder.keepThumbnail(picture, connection: connection, session: session)
            return Data(picture.bytes)
        } catch {
            logger.warning("could not make the thumbnail of a kept recording", metadata: [
                "camera": "\(id)", "connection": "\(connection)", "session": "\(session)", "error": "\(error)",
            ])
            return nil
        }
    }

    /// The camera's recent clips: the recorder's list of this run joined with the recordings the spool keeps (which
    /// survive a restart and are what the page plays), newest first, at most ``CameraRecorder/recentClipsKept``.
    static func recentClips(_ fromRecorder: [CameraStatus.RecentClip], kept: [RecentRecording], camera: String)
        -> [CameraStatus.RecentClip]
    {
        struct Key: Hashable {
            var connection: UInt16
            var session: SessionNumber
        }
        var clips = Dictionary(fromRecorder.map { (Key(connection: $0.connectionID, session: $0.cmafSessionNumber), $0) },
                               uniquingKeysWith: { first, _ in first })
        for recording in kept where recording.finished {
            let owner = recording.owner
            guard owner.hasPrefix(camera + "/"), let connection = UInt16(owner.dropFirst(camera.count + 1)) else { continue }
            let key = Key(connection: connection, session: recording.session)
            var clip = clips[key] ?? CameraStatus.RecentClip(
                connectionID: connection, cmafSessionNumber: recording.session, started: recording.started,
                ended: recording.ended, endReason: recording.endReason, triggerType: recording.triggerType,
                triggerOffset: recording.triggerOffset)
            let path = "/v1/cameras/\(camera)/clips/\(connection)/\(recording.session)"
            clip.clip = path
            // Made from the kept track when first asked for (``thumbnail(camera:connection:session:)``).
            clip.thumbnail = path + "/thumbnail.jpg"
            clips[key] = clip
        }
        return Array(clips.values.sorted { $0.started > $1.started }.prefix(CameraRecorder.recentClipsKept))
    }

    public func snapshot(camera id: String) async -> CameraSnapshot? {
        guard let snapshot = await camera(id)?.recorder.snapshot() else { return nil }
        return CameraSnapshot(jpeg: Data(snapshot.picture.bytes), taken: snapshot.taken)
    }

    public func attributes(camera id: String) async -> CameraAttributes? {
        guard let camera = camera(id) else { return nil }
        var attributes = camera.attributes.withLock { $0 }
        let privacy = await camera.server.currentRegistries.streams.privacy
        attributes.softRecordingPrivacyModeEnabled = privacy.softRecordingPrivacyModeEnabled
        attributes.softLivestreamPrivacyModeEnabled = privacy.softLivestreamPrivacyModeEnabled
        return attributes
    }

    public func updateAttributes(camera id: String, _ change: CameraAttributesChange) async throws(TransportCommandError)
        -> CameraAttributes
    {
        guard let camera = camera(id), let current = await attributes(camera: id) else {
            throw .im(.notFound, "camera \(id): no such camera")
        }
        let updated = change.applied(to: current)
        if updated.softRecordingPrivacyModeEnabled != current.softRecordingPrivacyModeEnabled
            || updated.softLivestreamPrivacyModeEnabled != current.softLivestreamPrivacyModeEnabled
        {
            var modes = await camera.server.currentRegistries.streams.privacy
            modes.softRecordingPrivacyModeEnabled = updated.softRecordingPrivacyModeEnabled
            modes.softLivestreamPrivacyModeEnabled = updated.softLivestreamPrivacyModeEnabled
            try await camera.server.setPrivacyModes(modes)  // persisted; ends recordings privacy now forbids
        }
        if updated.recordingMicrophoneMuted != current.recordingMicrophoneMuted {
            do {
                try await offPool {
                    try JSONEncoder().encode(updated).write(to: camera.attributesFile, options: .atomic)
                }
            } catch {
                throw .im(.failure, "cannot persist the attributes of camera \(id): \(error)")
            }
            camera.attributes.withLock { $0.recordingMicrophoneMuted = updated.recordingMicrophoneMuted }
            await camera.reconcile()
        }
        return updated
    }

    public func addTLSEndpoint(_ request: TLSEndpointRequest, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16 {
        let material = ClientTLSMaterial(trustedCertificates: Array(request.caCertificate.utf8),
                                         certificateChain: Array(request.clientCertificate.utf8),
                                         privateKey: Array(request.clientKey.utf8))
        do {
            _ = try material.makeTLSConfiguration()
        } catch {
            throw .im(.constraintError, "caCertificate, clientCertificate, clientKey: not usable PEM (\(error))")
        }
        guard !request.hostname.isEmpty, request.port > 0 else {
            throw .im(.constraintError, "hostname, port: required")
        }
        var endpoint = TLSEndpoint(fabricIndex: fabric, endpointID: 0, hostname: request.hostname,
                                   port: request.port, caCertificate: Data(request.caCertificate.utf8),
                                   clientCertificateChain: [Data(request.clientCertificate.utf8)],
                                   privateKey: Data(request.clientKey.utf8))
        // The first camera's cluster hands out the ID (choosing and storing in one step: concurrent creations get
        // different IDs); every other camera stores the endpoint under it. One TLS command at a time, so the cameras'
        // copies never diverge.
        guard let first = cameras.first else { throw .im(.failure, "no camera configured") }
        let cameras = self.cameras
        let endpointToAdd = endpoint
        return try await tlsCommands.run { () async -> Result<UInt16, TransportCommandError> in
            var endpoint = endpointToAdd
            do throws(TransportCommandError) {
                endpoint.endpointID = try await first.server.addTLSEndpointUnderFreeID(endpoint)
                for camera in cameras.dropFirst() { try await camera.server.setTLSEndpoint(endpoint) }
                return .success(endpoint.endpointID)
            } catch {
                return .failure(error)
            }
        }.get()
    }

    public func tlsEndpoints(fabric: FabricIndex) async -> [TLSEndpointSummary] {
        guard let first = cameras.first else { return [] }
        return await first.server.currentRegistries.tls.endpoints.values
            .filter { $0.fabricIndex == fabric }
            .sorted { $0.endpointID < $1.endpointID }
            .map {
                TLSEndpointSummary(endpointID: $0.endpointID, hostname: $0.hostname, port: $0.port,
                                   caCertificate: String(decoding: $0.caCertificate, as: UTF8.self),
                                   clientCertificate: $0.clientCertificateChain.map { String(decoding: $0, as: UTF8.self) }
                                       .joined())
            }
    }

    public func removeTLSEndpoint(_ endpointID: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        guard await tlsEndpoints(fabric: fabric).contains(where: { $0.endpointID == endpointID }) else {
            throw .im(.notFound, "endpointID: fabric \(fabric) has no TLS endpoint \(endpointID)")
        }
        // Camera by camera, each removal refused in the camera's own step if a connection uses the endpoint; a
        // refusal puts it back where it was removed already, so every camera keeps the same endpoints.
        let cameras = self.cameras
        try await tlsCommands.run { () async -> Result<Void, TransportCommandError> in
            var removedFrom: [(CameraService, TLSEndpoint)] = []
            for camera in cameras {
                let key = TLSEndpointKey(fabricIndex: fabric, endpointID: endpointID)
                guard let endpoint = await camera.server.currentRegistries.tls.endpoints[key] else { continue }
                do throws(TransportCommandError) {
                    try await camera.server.removeUnusedTLSEndpoint(fabricIndex: fabric, endpointID: endpointID)
                    removedFrom.append((camera, endpoint))
                } catch {
                    for (camera, endpoint) in removedFrom { try? await camera.server.setTLSEndpoint(endpoint) }
                    return .failure(error)
                }
            }
            return .success(())
        }.get()
        do {
            try await pruneEndpointKeys()
        } catch {
            // The endpoint is gone; its key stays in the owner-only store until the next start prunes it.
            logger.warning("the removed endpoint's key could not be pruned yet", metadata: ["error": "\(error)"])
        }
    }

    /// Ready when the spool and every camera's store answer a read and every camera's source delivered a packet
    /// within ``SidecarReadiness/sourceWindow``.
    public func readiness() async -> SidecarReadiness {
        let stores = cameras.map(\.store)
        let spool = self.spool
        let storesOpen = (try? await BlockingIO.run {
            _ = try spool.statistics()
            for store in stores { _ = try store.journalMode() }
            return true
        }) ?? false
        let now = ContinuousClock.now
        return SidecarReadiness(storeOpen: storesOpen, cameras: Dictionary(cameras.map { camera in
            (camera.configuration.id, SidecarReadiness.Source(sinceLastPacket: camera.recorder.lastPacketRead.map { now - $0 }))
        }, uniquingKeysWith: { a, _ in a }))
    }

    /// The spool's per-connection gauges (the oldest object's age grows with no event to update it).
    public func refreshGauges() async {
        await spool.refreshMetrics()
    }

    public func health() async -> SidecarHealth {
        let statuses = await cameraStatuses()
        var pending: Int?
        var spoolError: String?
        do { pending = try await spool.statistics().queueDepth } catch { spoolError = "\(error)" }
        let healthy = statuses.allSatisfy { $0.state == .streaming } && spoolError == nil
        return SidecarHealth(status: healthy ? "ok" : "degraded",
                             cameras: Dictionary(statuses.map { ($0.id, $0.state) }, uniquingKeysWith: { a, _ in a }),
                             pendingUploads: pending, spoolError: spoolError)
    }
}
