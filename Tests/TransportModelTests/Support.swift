import Domain
import Foundation
import Synchronization
import TestSupport
import Testing
@testable import TransportModel

// Fixtures shaped after the certification harness (TC_PAVSTTestBase): a TLS endpoint per fabric, a 4000 ms
// key-frame-interval video stream and an audio stream for Recording, three zones.

let fabric1: FabricIndex = 1
let fabric2: FabricIndex = 2
let tlsEndpointID: UInt16 = 1
let videoStreamID: UInt16 = 10
let audioStreamID: UInt16 = 20
let ingestURL = "https://localhost:1234/streams/1/"

/// The uploader's answer to "segments waiting?", switchable per test.
final class UploadQueueProbe: Sendable {
    private let pending = Mutex<Set<UInt16>>([])

    func setPending(_ connectionID: UInt16, _ isPending: Bool) {
        pending.withLock { if isPending { $0.insert(connectionID) } else { $0.remove(connectionID) } }
    }

    var query: @Sendable (UInt16) async -> Bool { { [self] id in pending.withLock { $0.contains(id) } } }
}

func tlsEndpoint(fabric: FabricIndex, id: UInt16 = tlsEndpointID) -> TLSEndpoint {
    TLSEndpoint(
        fabricIndex: fabric, endpointID: id, hostname: "localhost", port: 1234, caCertificate: Data([0x30, 0x82, 1]),
        clientCertificateChain: [Data([0x30, 0x82, 2]), Data([0x30, 0x82, 3])], privateKey: Data([0x04, 0x01]))
}

func standardRegistries(withStreams: Bool = true) -> TransportRegistries {
    TransportRegistries(
        tlsEndpoints: [tlsEndpoint(fabric: fabric1), tlsEndpoint(fabric: fabric2)],
        zones: [1, 2, 3].map { MotionZone(id: $0, name: "Zone\($0)", polygon: [.init(x: 10, y: 10), .init(x: 20, y: 10), .init(x: 20, y: 20)]) },
        videoStreams: withStreams ? [AllocatedVideoStream(videoStreamID: videoStreamID, keyFrameInterval: 4000, streamUsage: .recording, maxBitRate: 2_000_000)] : [],
        audioStreams: withStreams ? [AllocatedAudioStream(audioStreamID: audioStreamID, streamUsage: .recording, bitRate: 64_000)] : [])
}

func makeServer(
    capabilities: TransportCapabilities = TransportCapabilities(maxZones: 3),
    registries: TransportRegistries = standardRegistries(),
    clock: ManualClock = ManualClock(),
    uploads: UploadQueueProbe = UploadQueueProbe()
) throws -> PushAVStreamTransportServer {
    try PushAVStreamTransportServer(
        capabilities: capabilities,
        persistence: VolatileTransportPersistence(initialState: PersistentTransportState(registries: registries)),
        clock: clock, uploadsPending: uploads.query)
}

let cmafOptions = CMAFContainerOptionsStruct(
    cmafInterface: .interface1, segmentDuration: 4000, chunkDuration: 0, sessionGroup: 3, trackName: "media")

/// The harness's default allocation: Continuous, both legacy stream IDs, CMAF Interface-1, 4 s segments.
func continuousOptions(expiryTime: UInt32? = nil) -> TransportOptionsStruct {
    TransportOptionsStruct(
        streamUsage: .recording, videoStreamID: .value(videoStreamID), audioStreamID: .value(audioStreamID),
        tlsEndpointID: tlsEndpointID, url: ingestURL, triggerOptions: TransportTriggerOptionsStruct(triggerType: .continuous),
        containerOptions: ContainerOptionsStruct(cmafContainerOptions: cmafOptions), expiryTime: expiryTime)
}

let defaultTimeControl = TransportMotionTriggerTimeControlStruct(
    initialDuration: 10, augmentationDuration: 5, maxDuration: 20, blindDuration: 1)

func motionOptions(
    zones: Nullable<[TransportZoneOptionsStruct]>? = .value([.init(zone: .value(1))]),
    sensitivity: Nullable<UInt8>? = .value(5),
    timeControl: TransportMotionTriggerTimeControlStruct? = defaultTimeControl,
    maxPreRollLen: UInt16? = 4000
) -> TransportOptionsStruct {
    var options = continuousOptions()
    options.triggerOptions = TransportTriggerOptionsStruct(
        triggerType: .motion, motionZones: zones, motionSensitivity: sensitivity, motionTimeControl: timeControl,
        maxPreRollLen: maxPreRollLen)
    return options
}

/// A Motion transport for a PERZONESENS camera: sensitivity per zone, no MotionSensitivity.
func perZoneMotionOptions() -> TransportOptionsStruct {
    motionOptions(zones: .value([.init(zone: .value(1), sensitivity: 4)]), sensitivity: nil)
}

func commandOptions(maxPreRollLen: UInt16? = 4000) -> TransportOptionsStruct {
    var options = continuousOptions()
    options.triggerOptions = TransportTriggerOptionsStruct(triggerType: .command, maxPreRollLen: maxPreRollLen)
    return options
}

/// Runs `body` and checks it fails with `expected`, and that the message names `field` when given.
func expectStatus(
    _ expected: TransportStatus, field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws(TransportCommandError) -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(expected), the command succeeded", sourceLocation: sourceLocation)
    } catch {
        #expect(error.status == expected, "\(error)", sourceLocation: sourceLocation)
        if let field {
            #expect(error.message.contains(field), "message \"\(error.message)\" should name \(field)", sourceLocation: sourceLocation)
        }
    }
}

extension TransportStatus {
    static let constraintError = TransportStatus.interactionModel(.constraintError)
    static let invalidCommand = TransportStatus.interactionModel(.invalidCommand)
    static let notFound = TransportStatus.interactionModel(.notFound)
    static let alreadyExists = TransportStatus.interactionModel(.alreadyExists)
    static let dynamicConstraintError = TransportStatus.interactionModel(.dynamicConstraintError)
    static let invalidInState = TransportStatus.interactionModel(.invalidInState)
    static let resourceExhausted = TransportStatus.interactionModel(.resourceExhausted)
    static let busy = TransportStatus.interactionModel(.busy)
    static let failure = TransportStatus.interactionModel(.failure)
}

/// Everything a subscription received until the server finished its subscriptions.
func collect<Element: Sendable>(_ stream: AsyncStream<Element>) async -> [Element] {
    var all: [Element] = []
    for await element in stream { all.append(element) }
    return all
}

/// The events of `server` produced by `body`, in order.
func events(
    of server: PushAVStreamTransportServer, during body: () async throws -> Void
) async rethrows -> [CameraEvent] {
    let stream = await server.events()
    try await body()
    await server.finishSubscriptions()
    return await collect(stream).map(\.event)
}

extension CameraEvent {
    var begin: PushTransportBegin? { if case .pushTransportBegin(let begin) = self { begin } else { nil } }
    var end: PushTransportEnd? { if case .pushTransportEnd(let end) = self { end } else { nil } }
}
