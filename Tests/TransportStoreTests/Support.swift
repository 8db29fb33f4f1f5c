import Domain
import Foundation
import Synchronization
import TestSupport
import Testing
import TransportModel
import TransportStore

let fabric1: FabricIndex = 1
let fabric2: FabricIndex = 2

/// A fresh directory under the system temp dir, removed when the test's closure returns.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async rethrows -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("transport-store-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

let testRegistries = TransportRegistries(
    tlsEndpoints: [
        TLSEndpoint(fabricIndex: fabric1, endpointID: 1, hostname: "localhost", port: 1234, caCertificate: Data([0x30, 0x82, 0x01, 0x0A]),
                    clientCertificateChain: [Data([0x30, 1]), Data([0x30, 2]), Data([0x30, 3])], privateKey: Data([0x04] + Array(repeating: 0xAB, count: 64))),
        TLSEndpoint(fabricIndex: fabric2, endpointID: 1, hostname: "ingest.example", port: 443, caCertificate: Data([0x30]),
                    clientCertificateChain: [], privateKey: Data([0x05])),
    ],
    zones: [MotionZone(id: 1, name: "Zone1", polygon: [.init(x: 10, y: 10), .init(x: 20, y: 10), .init(x: 20, y: 20), .init(x: 10, y: 20)], sensitivity: 4),
            // A controller's zone (Zone Management): its source and colour persist too.
            MotionZone(id: 4, name: "porch", polygon: [.init(x: 30, y: 10), .init(x: 40, y: 10), .init(x: 40, y: 20)],
                       source: .user, color: "#FF00FF")],
    videoStreams: [AllocatedVideoStream(videoStreamID: 10, keyFrameInterval: 4000, streamUsage: .recording, maxBitRate: 2_000_000)],
    audioStreams: [AllocatedAudioStream(audioStreamID: 20, codec: .aacLC, streamUsage: .recording, bitRate: 64_000)])

func openServer(_ store: TransportStore, clock: ManualClock, logsEvents: Bool = false) throws -> PushAVStreamTransportServer {
    try PushAVStreamTransportServer(
        capabilities: TransportCapabilities(maxZones: 3), persistence: store, clock: clock,
        eventLog: logsEvents ? store : VolatileTransportEventLog())
}

/// A camera's store (`t.sqlite` in a test's directory) and the cluster over it, which a test stops and starts again as
/// the process would: the steps every restart test repeated, in one place.
final class StoredCamera {
    let path: String
    let clock = ManualClock()
    private(set) var store: TransportStore
    private(set) var server: PushAVStreamTransportServer
    private let logsEvents: Bool

    /// A new store, the test registries set; `logsEvents`: the store is the cluster's event log too.
    init(in directory: URL, logsEvents: Bool = false) async throws {
        path = directory.appendingPathComponent("t.sqlite").path
        self.logsEvents = logsEvents
        store = try TransportStore(path: path)
        server = try openServer(store, clock: clock, logsEvents: logsEvents)
        try await server.setRegistries(testRegistries)
    }

    /// Closes the store, as a process that stops leaves it.
    func stop() throws {
        try store.close()
    }

    /// Opens the store again and a new cluster instance over it; `beforeServer` sees the store before the cluster
    /// reads it.
    func start(beforeServer: (TransportStore) throws -> Void = { _ in }) throws {
        store = try TransportStore(path: path)
        try beforeServer(store)
        server = try openServer(store, clock: clock, logsEvents: logsEvents)
    }

    func restart() throws {
        try stop()
        try start()
    }
}

/// TC_PAVST_2_14's allocation: Continuous, CMAF Interface-1, ExpiryTime 3600.
func continuousOptions(expiryTime: UInt32? = 3600) -> TransportOptionsStruct {
    TransportOptionsStruct(
        streamUsage: .recording, videoStreamID: .value(10), audioStreamID: .value(20), tlsEndpointID: 1,
        url: "https://localhost:1234/streams/1/", triggerOptions: TransportTriggerOptionsStruct(triggerType: .continuous),
        containerOptions: ContainerOptionsStruct(cmafContainerOptions: CMAFContainerOptionsStruct(
            segmentDuration: 4000, chunkDuration: 0, sessionGroup: 3, trackName: " ")),
        expiryTime: expiryTime)
}

func motionOptions() -> TransportOptionsStruct {
    var options = continuousOptions(expiryTime: nil)
    options.triggerOptions = TransportTriggerOptionsStruct(
        triggerType: .motion, motionZones: .value([.init(zone: .null), .init(zone: .value(1))]), motionSensitivity: .null,
        motionTimeControl: .init(initialDuration: 5, augmentationDuration: 2, maxDuration: 15, blindDuration: 3), maxPreRollLen: 4000)
    options.videoStreamID = nil
    options.audioStreamID = nil
    options.videoStreams = [VideoStreamStruct(videoStreamName: "front", videoStreamID: 10)]
    return options
}

func sortedJSON<T: Encodable>(_ value: T) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return try encoder.encode(value)
}

/// Runs the sqlite3 CLI on `path` (off the cooperative pool).
func sqlite(_ path: String, _ sql: String) async throws {
    let result = try await ProcessRun.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [path, sql])
    #expect(result.status == 0, "sqlite3 \(sql): \(result.stderr)")
}
