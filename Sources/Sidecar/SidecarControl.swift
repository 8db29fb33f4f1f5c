import Domain
import Foundation
import Recorder
import TransportModel

/// What `pushav serve`'s HTTP API drives: the sidecar engine, or a test double. Per camera, the cluster itself is the
/// camera's ``PushAVStreamTransportServer`` (commands, attributes, events); the rest is what the node around it holds:
/// TLS endpoints (TLS Certificate Management, node-wide), the camera attributes a controller sets
/// (CameraAvStreamManagement), and what the engine observes.
public protocol SidecarControl: Sendable {
    /// Camera IDs in configuration order.
    var cameraIDs: [String] { get }
    /// The Push AV Stream Transport cluster instance of `camera`; nil for an unknown camera.
    func transport(camera: String) -> PushAVStreamTransportServer?
    /// What each camera is doing now, in configuration order.
    func cameraStatuses() async -> [CameraStatus]
    /// nil for an unknown camera.
    func attributes(camera: String) async -> CameraAttributes?
    /// Applies the fields `change` sets (nil fields stay as they are); returns the attributes after the change.
    func updateAttributes(camera: String, _ change: CameraAttributesChange) async throws(TransportCommandError) -> CameraAttributes
    /// Provisions a TLS endpoint for `fabric` on every camera; returns its new endpoint ID (what AllocatePushTransport's
    /// `TLSEndpointID` names). Throws CONSTRAINT_ERROR for PEM that does not parse.
    func addTLSEndpoint(_ request: TLSEndpointRequest, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16
    /// The fabric's TLS endpoints (no private keys).
    func tlsEndpoints(fabric: FabricIndex) async -> [TLSEndpointSummary]
    /// NOT_FOUND when the fabric has no such endpoint; INVALID_IN_STATE while a connection uses it.
    func removeTLSEndpoint(_ endpointID: UInt16, fabric: FabricIndex) async throws(TransportCommandError)
    /// `GET /health`: the process answers; what each camera does.
    func health() async -> SidecarHealth
    /// The files of a recent clip of `camera` (see ``CameraStatus/RecentClip/clip``) that together are one fragmented
    /// MP4; nil when there is none.
    func clip(camera: String, connection: UInt16, session: SessionNumber) async -> ClipParts?
    /// The JPEG of the picture at the trigger of a recent (or running) recording of `camera` (see
    /// ``CameraStatus/RecentClip/thumbnail``); nil when there is none (an encrypted transport has none).
    func thumbnail(camera: String, connection: UInt16, session: SessionNumber) async -> Data?
    /// A JPEG of the camera's latest analysed picture: a fresh one while the source streams (it waits for the next
    /// picture, a few seconds at most), the last one made while it does not; nil for an unknown camera or before any.
    func snapshot(camera: String) async -> CameraSnapshot?

    // TLS Certificate Management and TLS Client Management, as a controller provisions a camera (TC-PAVSTI); the key
    // pair is made in this process and its private key never leaves it.

    /// Installs the ingest's root CA certificate (DER), or replaces the one of `caid`; returns its CAID.
    /// CONSTRAINT_ERROR for bytes that are not one, NOT_FOUND for an unknown CAID, RESOURCE_EXHAUSTED past the maximum.
    func provisionRootCertificate(_ request: ProvisionRootCertificateRequest, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16
    /// NOT_FOUND when the fabric has no such CAID.
    func removeRootCertificate(_ caid: UInt16, fabric: FabricIndex) async throws(TransportCommandError)
    /// One root certificate, or (nil) all of the fabric's; NOT_FOUND when there is none to answer.
    func findRootCertificates(_ caid: UInt16?, fabric: FabricIndex) async throws(TransportCommandError) -> [RootCertificateDetails]
    /// The CAID of the root certificate whose DER has this SHA-256.
    func lookupRootCertificate(fingerprint: Data, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16
    /// Makes a P-256 key pair (new, or replacing the key of `ccdid`) and answers its CSR and the signature over the
    /// nonce. CONSTRAINT_ERROR unless the nonce is 32 bytes.
    func clientCSR(_ request: ClientCSRRequest, fabric: FabricIndex) async throws(TransportCommandError) -> ClientCSRResponse
    /// Installs the certificate signed from a CCDID's CSR. NOT_FOUND for an unknown CCDID, DYNAMIC_CONSTRAINT_ERROR
    /// for a certificate of another key.
    func provisionClientCertificate(_ request: ProvisionClientCertificateRequest, fabric: FabricIndex) async throws(TransportCommandError)
    /// One client identity's certificates, or (nil) all of the fabric's; NOT_FOUND when there is none to answer.
    func findClientCertificates(_ ccdid: UInt16?, fabric: FabricIndex) async throws(TransportCommandError) -> [ClientCertificateDetails]
    /// The CCDID whose provisioned certificate's DER has this SHA-256.
    func lookupClientCertificate(fingerprint: Data, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16
    /// Deletes a client identity (key pair and certificates). NOT_FOUND when the fabric has no such CCDID.
    func removeClientCertificate(_ ccdid: UInt16, fabric: FabricIndex) async throws(TransportCommandError)
    /// The TLS Certificate Management attributes, as `fabric` reads them.
    func tlsCertificateAttributes(fabric: FabricIndex) async throws(TransportCommandError) -> TLSCertificateAttributes
    /// A TLS endpoint from a CAID and a CCDID; returns the endpoint ID AllocatePushTransport takes.
    func provisionEndpoint(_ request: ProvisionEndpointRequest, fabric: FabricIndex) async throws(TransportCommandError) -> UInt16
    /// `GET /ready`: whether the stores are open and every camera's source is being read.
    func readiness() async -> SidecarReadiness
    /// Brings gauges that change with time alone (the upload queue's oldest age) up to date before a scrape.
    func refreshGauges() async
}

/// A recent recording as the page plays it: one fragmented MP4 of its video and audio (see `PlayableClip`), laid out
/// as parts — bytes made for it (its `moov`) and the spool's own files, with the few bytes that differ patched in as
/// they are read. The route serves them without copying a file.
public struct ClipParts: Sendable, Hashable {
    /// Bytes served in place of a file's own, `offset` from the file's start.
    public struct Patch: Sendable, Hashable {
        public var offset: Int
        public var bytes: [UInt8]

        public init(offset: Int, bytes: [UInt8]) {
            self.offset = offset
            self.bytes = bytes
        }
    }

    public struct Part: Sendable, Hashable {
        /// A file of the spool, nil for bytes made for the clip (then `made` holds them).
        public var file: URL?
        public var made: [UInt8]
        public var bytes: Int
        public var patches: [Patch]

        public init(file: URL, bytes: Int, patches: [Patch] = []) {
            self.file = file
            self.made = []
            self.bytes = bytes
            self.patches = patches
        }

        public init(made: [UInt8]) {
            self.file = nil
            self.made = made
            self.bytes = made.count
            self.patches = []
        }
    }

    public var parts: [Part]
    /// It has an audio track (played with sound).
    public var hasAudio: Bool
    public init(parts: [Part], hasAudio: Bool = false) {
        self.parts = parts
        self.hasAudio = hasAudio
    }
    public var size: Int { parts.reduce(0) { $0 + $1.bytes } }
}

/// `POST /v1/tls/endpoints`: where an ingest server is and the certificates for mutual TLS, in PEM.
public struct TLSEndpointRequest: Codable, Sendable, Hashable {
    public var hostname: String
    public var port: UInt16
    /// The CA that signs the ingest server's certificate.
    public var caCertificate: String
    /// The client certificate (chain: leaf first) this camera presents.
    public var clientCertificate: String
    /// The client certificate's private key.
    public var clientKey: String

    public init(hostname: String, port: UInt16, caCertificate: String, clientCertificate: String, clientKey: String) {
        self.hostname = hostname
        self.port = port
        self.caCertificate = caCertificate
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }
}

/// A provisioned TLS endpoint as the API lists it (certificates, never the key).
public struct TLSEndpointSummary: Codable, Sendable, Hashable {
    public var endpointID: UInt16
    public var hostname: String
    public var port: UInt16
    public var caCertificate: String
    public var clientCertificate: String

    public init(endpointID: UInt16, hostname: String, port: UInt16, caCertificate: String, clientCertificate: String) {
        self.endpointID = endpointID
        self.hostname = hostname
        self.port = port
        self.caCertificate = caCertificate
        self.clientCertificate = clientCertificate
    }
}

/// The CameraAvStreamManagement attributes a controller sets that change what is recorded. Persisted.
public struct CameraAttributes: Codable, Sendable, Hashable {
    /// Recordings carry no audio track, from the next recording on.
    public var recordingMicrophoneMuted: Bool = false
    /// No recording uploads: Active is refused and turning it on ends running recordings.
    public var softRecordingPrivacyModeEnabled: Bool = false
    /// No live-view uploads.
    public var softLivestreamPrivacyModeEnabled: Bool = false

    public init(
        recordingMicrophoneMuted: Bool = false, softRecordingPrivacyModeEnabled: Bool = false,
        softLivestreamPrivacyModeEnabled: Bool = false
    ) {
        self.recordingMicrophoneMuted = recordingMicrophoneMuted
        self.softRecordingPrivacyModeEnabled = softRecordingPrivacyModeEnabled
        self.softLivestreamPrivacyModeEnabled = softLivestreamPrivacyModeEnabled
    }
}

/// A partial update of ``CameraAttributes``: nil leaves a field as it is.
public struct CameraAttributesChange: Codable, Sendable, Hashable {
    public var recordingMicrophoneMuted: Bool?
    public var softRecordingPrivacyModeEnabled: Bool?
    public var softLivestreamPrivacyModeEnabled: Bool?

    public init(
        recordingMicrophoneMuted: Bool? = nil, softRecordingPrivacyModeEnabled: Bool? = nil,
        softLivestreamPrivacyModeEnabled: Bool? = nil
    ) {
        self.recordingMicrophoneMuted = recordingMicrophoneMuted
        self.softRecordingPrivacyModeEnabled = softRecordingPrivacyModeEnabled
        self.softLivestreamPrivacyModeEnabled = softLivestreamPrivacyModeEnabled
    }

    public func applied(to attributes: CameraAttributes) -> CameraAttributes {
        var result = attributes
        if let recordingMicrophoneMuted { result.recordingMicrophoneMuted = recordingMicrophoneMuted }
        if let softRecordingPrivacyModeEnabled { result.softRecordingPrivacyModeEnabled = softRecordingPrivacyModeEnabled }
        if let softLivestreamPrivacyModeEnabled { result.softLivestreamPrivacyModeEnabled = softLivestreamPrivacyModeEnabled }
        return result
    }
}

/// `GET /v1/cameras/{camera}/snapshot.jpg`: a JPEG of the camera's analysed picture and when it was made.
public struct CameraSnapshot: Sendable, Hashable {
    public var jpeg: Data
    public var taken: Date

    public init(jpeg: Data, taken: Date) {
        self.jpeg = jpeg
        self.taken = taken
    }
}

/// One transport connection of a camera as the status page shows it: what it records on, where it uploads, how its
/// queue stands. Never the ingest URL's credentials or path: the ingest's host and port only.
public struct ConnectionStatus: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    public var fabricIndex: UInt8
    /// `command`, `motion` or `continuous`.
    public var triggerType: String
    /// `active` or `inactive` (TransportStatus).
    public var transportStatus: String
    /// `host:port` of the ingest URL (no user information, no path).
    public var ingest: String
    /// The CMAF session number used last (the connection's session counter); nil before its first recording.
    public var sessionNumber: SessionNumber?
    /// The session recording now, and since when; nil while none records.
    public var recordingSession: SessionNumber?
    public var recordingSince: Date?
    /// Objects waiting in the spool for this connection, and when the oldest of them was spooled.
    public var queueDepth: Int = 0
    public var oldestWaiting: Date?
    /// When the latest object reached the ingest (this process's life).
    public var lastDelivery: Date?
    /// The latest upload problem (a retry, a refusal, a give-up) and when it happened.
    public var lastError: String?
    public var lastErrorAt: Date?
    /// The transport encrypts (CENC): no clip or thumbnail is kept in the clear.
    public var encrypted: Bool = false

    public init(
        connectionID: UInt16, fabricIndex: UInt8, triggerType: String, transportStatus: String, ingest: String,
        sessionNumber: SessionNumber? = nil, recordingSession: SessionNumber? = nil, recordingSince: Date? = nil,
        queueDepth: Int = 0, oldestWaiting: Date? = nil, lastDelivery: Date? = nil, lastError: String? = nil,
        lastErrorAt: Date? = nil, encrypted: Bool = false
    ) {
        self.connectionID = connectionID
        self.fabricIndex = fabricIndex
        self.triggerType = triggerType
        self.transportStatus = transportStatus
        self.ingest = ingest
        self.sessionNumber = sessionNumber
        self.recordingSession = recordingSession
        self.recordingSince = recordingSince
        self.queueDepth = queueDepth
        self.oldestWaiting = oldestWaiting
        self.lastDelivery = lastDelivery
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.encrypted = encrypted
    }
}

/// `GET /v1/cameras`: one camera's source and what it recorded lately.
public struct CameraStatus: Codable, Sendable, Hashable {
    public enum SourceState: String, Codable, Sendable, Hashable {
        /// Opening the source (first time or after a loss).
        case connecting
        /// Reading frames.
        case streaming
        /// Lost; the next attempt comes after a backoff.
        case reconnecting
        /// Shut down.
        case stopped
    }

    public struct RecentClip: Codable, Sendable, Hashable {
        public var connectionID: UInt16
        public var cmafSessionNumber: SessionNumber
        /// Wall-clock start and end (ISO 8601); end nil while it records.
        public var started: Date
        public var ended: Date?
        public var endReason: String?
        /// Every object of the session reached the ingest (nil: not known).
        public var delivered: Bool?
        /// Where the clip's MP4 is served (`/v1/cameras/{camera}/clips/{connectionID}/{session}`); nil without one.
        public var clip: String?
        /// Settled with objects the ingest refused for good (given up); nil while not known.
        public var givenUp: Bool?
        /// `motion`, `command` or `continuous`.
        public var triggerType: String?
        /// Seconds from the clip's first picture to its trigger: the pre-roll before it.
        public var triggerOffset: Double?
        /// Where the JPEG of the picture at the trigger is served (`…/{session}/thumbnail.jpg`); nil without one.
        public var thumbnail: String?

        public init(
            connectionID: UInt16, cmafSessionNumber: SessionNumber, started: Date, ended: Date? = nil,
            endReason: String? = nil, delivered: Bool? = nil, clip: String? = nil, givenUp: Bool? = nil,
            triggerType: String? = nil, triggerOffset: Double? = nil, thumbnail: String? = nil
        ) {
            self.connectionID = connectionID
            self.cmafSessionNumber = cmafSessionNumber
            self.started = started
            self.ended = ended
            self.endReason = endReason
            self.delivered = delivered
            self.clip = clip
            self.givenUp = givenUp
            self.triggerType = triggerType
            self.triggerOffset = triggerOffset
            self.thumbnail = thumbnail
        }
    }

    public var id: String
    /// The configured source with any user information (`user:password@`) removed.
    public var source: String
    public var state: SourceState
    /// Why the source was last lost, if it was (user information in URLs removed).
    public var lastError: String?
    public var framesAnalysed: Int = 0
    /// Pictures analysed per second lately (between status reads at most 10 s apart); nil until two reads a second
    /// apart.
    public var analysisRate: Double?
    public var lastMotion: Date?
    /// Connections allocated on this camera.
    public var connections: Int = 0
    /// Newest first, at most 20.
    public var recentClips: [RecentClip] = []
    /// When motion was seen in the last 10 minutes, oldest first.
    public var recentMotion: [MotionPeriod] = []
    /// `MotionPeriod` as the generated API names it (its `typeOverrides`): a qualified `Recorder.MotionPeriod` would
    /// find the module's `Recorder` type, not the module.
    public typealias Period = MotionPeriod
    /// Connections that record and upload nothing because their TLS endpoint is gone (until it is provisioned again).
    public var connectionsWithoutTLSEndpoint: [UInt16] = []
    /// Times the source was lost and opened again since the start.
    public var reconnects: Int = 0
    /// The recorded video's picture size, in which zones' vertices are given; nil before the source first opened.
    public var videoWidth: Int?
    public var videoHeight: Int?
    /// Privacy modes and the microphone (CameraAvStreamManagement).
    public var attributes: CameraAttributes?
    /// Each connection allocated on this camera, by ID.
    public var transports: [ConnectionStatus] = []

    public init(
        id: String, source: String, state: SourceState, lastError: String? = nil, framesAnalysed: Int = 0,
        analysisRate: Double? = nil, lastMotion: Date? = nil, connections: Int = 0, recentClips: [RecentClip] = [],
        recentMotion: [MotionPeriod] = [], connectionsWithoutTLSEndpoint: [UInt16] = [], reconnects: Int = 0,
        videoWidth: Int? = nil, videoHeight: Int? = nil, attributes: CameraAttributes? = nil,
        transports: [ConnectionStatus] = []
    ) {
        self.id = id
        self.source = source
        self.state = state
        self.lastError = lastError
        self.framesAnalysed = framesAnalysed
        self.analysisRate = analysisRate
        self.lastMotion = lastMotion
        self.connections = connections
        self.recentClips = recentClips
        self.recentMotion = recentMotion
        self.connectionsWithoutTLSEndpoint = connectionsWithoutTLSEndpoint
        self.reconnects = reconnects
        self.videoWidth = videoWidth
        self.videoHeight = videoHeight
        self.attributes = attributes
        self.transports = transports
    }
}

/// `GET /health`.
public struct SidecarHealth: Codable, Sendable, Hashable {
    /// "ok" when every camera streams and the spool can be read, "degraded" otherwise.
    public var status: String
    public var cameras: [String: CameraStatus.SourceState]
    /// Objects waiting in the spool; nil when the spool cannot be read (a 0 there would say "all delivered" while
    /// nothing is known).
    public var pendingUploads: Int?
    /// Why the spool could not be read; nil when it could.
    public var spoolError: String? = nil

    public init(
        status: String, cameras: [String: CameraStatus.SourceState], pendingUploads: Int? = nil,
        spoolError: String? = nil
    ) {
        self.status = status
        self.cameras = cameras
        self.pendingUploads = pendingUploads
        self.spoolError = spoolError
    }
}

/// `GET /ready` (answered 200 when ``ready``, 503 otherwise, with this body either way).
public struct SidecarReadiness: Codable, Sendable, Hashable {
    /// How recently a camera's source must have delivered a packet to count as read. A file source loops and an RTSP
    /// read times out after 5 s, so a working source never goes this long without one.
    public static let sourceWindow = Duration.seconds(5)

    /// One camera's source.
    public struct Source: Codable, Sendable, Hashable {
        /// Seconds since its latest packet; nil before the first.
        public var secondsSinceLastPacket: Double?
        /// A packet within ``SidecarReadiness/sourceWindow``.
        public var ready: Bool

        public init(sinceLastPacket: Duration?) {
            secondsSinceLastPacket = sinceLastPacket.map { Double($0.components.seconds) + Double($0.components.attoseconds) * 1e-18 }
            ready = sinceLastPacket.map { $0 <= SidecarReadiness.sourceWindow } ?? false
        }
    }

    /// Everything below holds.
    public var ready: Bool
    /// The spool and the cameras' transport stores answer a read.
    public var storeOpen: Bool
    public var cameras: [String: Source]

    public init(storeOpen: Bool, cameras: [String: Source]) {
        self.storeOpen = storeOpen
        self.cameras = cameras
        ready = storeOpen && cameras.values.allSatisfy(\.ready)
    }
}
