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

// Where a camera's recordings go: each connection's destination, its upload, retirement when it changes, and the
// destinations a previous run left in the spool.
extension CameraService {
    /// A time in seconds to the millisecond (the API answered `triggerOffset: 0.9199999999999999`, a difference of
    /// two media times in binary floating point).
    static func milliseconds(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

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
    func retire(_ key: String, recorderCatchesUp: Latch? = nil) async {
        do {
            try await spool.retire(destination: key)
        } catch {
            logger.error("could not mark a destination retired in the spool; it is retired in memory", metadata: [
                "destination": "\(key)", "error": "\(error)",
            ])
        }
        deliveries.retire(key, recorderCatchesUp: recorderCatchesUp)
        logger.info("destination retired: it delivers what it holds, then ends", metadata: ["destination": "\(key)"])
    }

    /// At start: destinations of this camera that the spool still holds objects for and no connection records for
    /// now (modified, deallocated, replaced TLS endpoint before the last stop) deliver them, retired, with the URL and
    /// certificates they were recorded for.
    func resumeStoredDestinations() async {
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
    func noteRefusedWithoutTLSEndpoint(_ connection: StoredConnection) {
        refusedWithoutTLSEndpoint.increment()
        logger.error("connection refused: its TLS endpoint is gone, so nothing is recorded or uploaded until it is provisioned again", metadata: [
            "connection": "\(connection.connectionID)", "tlsEndpointID": "\(connection.transportOptions.tlsEndpointID)",
            "fabric": "\(connection.fabricIndex)",
        ])
    }

    /// Connections refused for want of their TLS endpoint, in ID order.
    var connectionsWithoutTLSEndpoint: [UInt16] { running.withLock { $0.withoutTLSEndpoint.sorted() } }

    func makeUpload(_ destination: UploadDestination, tls: ClientTLSMaterial, connection: StoredConnection) throws
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
    func connectionLogger(_ connection: UInt16) -> Logger {
        var logger = self.logger
        logger[metadataKey: "connection"] = "\(connection)"
        return logger
    }

    func policy(_ connection: StoredConnection, upload: DestinationUpload, zones: [MotionZone], zoneSensitivity: UInt8)
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
        // No second copy for the status page: the spool keeps the tracks of each recording once delivered (a recent
        // recording) and the page plays them as one file (`ClipParts(playing:)`). An encrypted transport keeps none (it would play in the clear).
        format.writeClips = false
        let keepsRecent = format.encryption == nil
        let videoTrack = format.trackNames.video
        // The page plays the clip with its sound: the audio track is kept beside the video.
        let audioTrack = hasAudio ? format.trackNames.audio : nil
        let spool = self.spool
        // The picture at each trigger for the status page; none for an encrypted transport, for the same reason.
        format.thumbnails = format.encryption == nil
        // The spool is the only copy of what is uploaded (written once, durably); no working copy beside it.
        format.writesSegmentFiles = false
        policy.format = format
        let recorder = self.recorder
        let started = Mutex<[SessionNumber: Date]>([:])
        let logger = connectionLogger(id)
        let announcer = self.announcer
        policy.hooks = SessionHooks(
            begin: { request in
                // Owed from the moment it is asked for (the media thread, before the cluster answers): a Modify that
                // retires the destination meanwhile waits for this session's events.
                let ticket = upload.beginAsked()
                announcer.send(.begin(connection: id, request, refused: { upload.beginRefused(ticket) }, began: { session in
                    let now = Date()
                    started.withLock { $0[session] = now }
                    recorder.noteRecordingBegan(connection: id, session: session, thumbnail: request.thumbnail)
                    upload.beginAccepted(ticket, session: session)
                    guard keepsRecent else { return }
                    do {
                        try await spool.keepRecent(session, connection: upload.destination, track: videoTrack, audioTrack: audioTrack,
                                                   started: now)
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
                    recorder.noteRecordingGone(connection: id, session: session)
                    // Nothing was written for it: its page entry (made as it began) goes too.
                    if keepsRecent { upload.recentFinished(session: session, nil) }
                    upload.sessionWritten(session)
                }))
            },
            end: { session in announcer.send(.end(connection: id, session: session)) },
            finished: { record in
                defer { upload.sessionWritten(record.session) }
                // The bytes went to the spool with the events; the working copy is not needed (and a failed session's
                // partial files must not keep filling the disk that made it fail).
                try? FileManager.default.removeItem(at: output.appendingPathComponent("session_\(record.session)"))
                guard !record.tracks.isEmpty else {  // dropped (logged and counted by the recorder)
                    started.withLock { $0[record.session] = nil }
                    recorder.noteRecordingGone(connection: id, session: record.session)
                    if keepsRecent { upload.recentFinished(session: record.session, nil) }
                    return
                }
                upload.handle(.sessionFinished(record))
                let triggerOffset = record.trigger.map { Self.milliseconds(max(0, $0 - record.start)) }
                if keepsRecent {
                    upload.recentFinished(session: record.session, RecentSummary(
                        ended: Date(), endReason: record.endReason, triggerType: record.triggerType,
                        triggerOffset: triggerOffset))
                }
                recorder.noteClip(CameraStatus.RecentClip(
                    connectionID: id, cmafSessionNumber: record.session,
                    started: started.withLock { $0.removeValue(forKey: record.session) } ?? Date(), ended: Date(),
                    endReason: record.endReason, triggerType: record.triggerType,
                    triggerOffset: triggerOffset))
                // `written` is what the recorder handed over, per track (its header and these segments): the ground
                // truth an audit (the chaos test's checker) holds the ingest to, object by object.
                logger.info("recording finished", metadata: [
                    "session": "\(record.session)", "duration": "\(record.duration)",
                    "reason": "\(record.endReason)",
                    "written": "\(record.tracks.map { "\($0.name):" + $0.segmentDetails.map { String($0.number) }.joined(separator: ",") }.joined(separator: ";"))",
                ])
            },
            events: { event in upload.handle(event) })
        return policy
    }
}
