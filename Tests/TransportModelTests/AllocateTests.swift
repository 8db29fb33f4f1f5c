import Foundation
import Testing
import TestSupport
@testable import TransportModel

@Suite("TC-PAVST-2.1")
struct AttributesTests {
    @Test("SupportedFormats is non-empty and every entry is (CMAF, CMAFIngest)")
    func supportedFormats() throws {
        let server = try makeServer()
        #expect(!server.supportedFormats.isEmpty)
        for format in server.supportedFormats {
            #expect(format == SupportedFormatStruct(containerFormat: .cmaf, ingestMethod: .cmafIngest))
        }
    }

    @Test("CurrentConnections entries carry a valid TransportStatus")
    func currentConnectionsStatus() async throws {
        let server = try makeServer()
        #expect(await server.currentConnections(fabric: fabric1).isEmpty)
        _ = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
        _ = try await server.allocatePushTransport(motionOptions(), fabric: fabric1)
        let connections = await server.currentConnections(fabric: fabric1)
        #expect(connections.count == 2)
        for connection in connections {
            #expect(connection.transportStatus.isKnown)
        }
    }
}

@Suite("TC-PAVST-2.2")
struct CurrentConnectionsOverTransportsTests {
    @Test("TransportOptions are omitted for reads without large-message support, present otherwise")
    func transportOptionsPresence() async throws {
        let server = try makeServer()
        let allocated = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
        let small = await server.currentConnections(fabric: fabric1, includeTransportOptions: false)
        #expect(small.map(\.connectionID) == [allocated.connectionID])
        #expect(small.first?.transportOptions == nil)
        let large = await server.currentConnections(fabric: fabric1)
        #expect(large.first?.transportOptions == allocated.transportOptions)
    }
}

/// One step of TC-PAVST-2.3 / 2.11 (or an added §2.2 check): a change to a valid request and the expected answer.
struct AllocationCase: Sendable, CustomTestStringConvertible {
    var step: String
    var features: PushAVStreamTransportFeatures = []
    var base: @Sendable () -> TransportOptionsStruct = { motionOptions() }
    var change: @Sendable (inout TransportOptionsStruct) -> Void
    /// nil = SUCCESS.
    var expected: TransportStatus?
    var field: String?

    var testDescription: String { step }
}

let allocationCases: [AllocationCase] = [
    // TC-PAVST-2.3 steps
    .init(step: "11 TLSEndpointID not provisioned → InvalidTLSEndpoint", change: { $0.tlsEndpointID = 5 },
          expected: .cluster(.invalidTLSEndpoint), field: "tlsEndpointID"),
    .init(step: "12 unknown IngestMethod → CONSTRAINT_ERROR", change: { $0.ingestMethod = .init(rawValue: 3) },
          expected: .constraintError, field: "ingestMethod"),
    .init(step: "13 http URL → InvalidURL", change: { $0.url = "http://localhost:1234/streams/1/" },
          expected: .cluster(.invalidURL), field: "url"),
    .init(step: "14 unknown TriggerType → CONSTRAINT_ERROR",
          change: { $0.triggerOptions = .init(triggerType: .init(rawValue: 3)) },
          expected: .constraintError, field: "triggerType"),
    .init(step: "15 a null zone → SUCCESS", change: { $0.triggerOptions.motionZones = .value([.init(zone: .null)]) }),
    .init(step: "16 duplicate zones → ALREADY_EXISTS",
          change: { $0.triggerOptions.motionZones = .value([.init(zone: .value(1)), .init(zone: .value(1))]) },
          expected: .alreadyExists, field: "motionZones"),
    .init(step: "17 two null zones → ALREADY_EXISTS",
          change: { $0.triggerOptions.motionZones = .value([.init(zone: .null), .init(zone: .null)]) },
          expected: .alreadyExists, field: "motionZones"),
    .init(step: "18 unknown zone → InvalidZone", change: { $0.triggerOptions.motionZones = .value([.init(zone: .value(14))]) },
          expected: .cluster(.invalidZone), field: "motionZones"),
    .init(step: "19 unknown video stream → InvalidStream", change: { $0.videoStreamID = .value(99) },
          expected: .cluster(.invalidStream), field: "videoStreamID"),
    .init(step: "20 unknown audio stream → InvalidStream", change: { $0.audioStreamID = .value(99) },
          expected: .cluster(.invalidStream), field: "audioStreamID"),
    .init(step: "21 no stream fields → INVALID_COMMAND", change: { $0.videoStreamID = nil; $0.audioStreamID = nil },
          expected: .invalidCommand, field: "videoStreamID"),
    .init(step: "22 both stream IDs null with streams allocated → SUCCESS",
          change: { $0.videoStreamID = .null; $0.audioStreamID = .null }),
    .init(step: "23 MaxZones + 1 zones → DYNAMIC_CONSTRAINT_ERROR",
          change: { $0.triggerOptions.motionZones = .value([1, 2, 3].map { .init(zone: .value($0)) } + [.init(zone: .null)]) },
          expected: .dynamicConstraintError, field: "motionZones"),
    .init(step: "23 (our decision) exactly MaxZones zones → SUCCESS",
          change: { $0.triggerOptions.motionZones = .value([1, 2, 3].map { .init(zone: .value($0)) }) }),
    .init(step: "24 PERZONESENS with MotionSensitivity → INVALID_COMMAND", features: .perZoneSensitivity,
          base: { perZoneMotionOptions() }, change: { $0.triggerOptions.motionSensitivity = .value(5) },
          expected: .invalidCommand, field: "motionSensitivity"),
    .init(step: "25 MotionSensitivity 11 → CONSTRAINT_ERROR", change: { $0.triggerOptions.motionSensitivity = .value(11) },
          expected: .constraintError, field: "motionSensitivity"),
    .init(step: "26 Motion without MotionTimeControl → INVALID_COMMAND", change: { $0.triggerOptions.motionTimeControl = nil },
          expected: .invalidCommand, field: "motionTimeControl"),
    .init(step: "27 InitialDuration 0 → CONSTRAINT_ERROR", change: { $0.triggerOptions.motionTimeControl?.initialDuration = 0 },
          expected: .constraintError, field: "initialDuration"),
    .init(step: "28 MaxDuration 0 → CONSTRAINT_ERROR", change: { $0.triggerOptions.motionTimeControl?.maxDuration = 0 },
          expected: .constraintError, field: "maxDuration"),
    .init(step: "29 empty MotionZones and null MotionSensitivity → SUCCESS",
          change: { $0.triggerOptions.motionZones = .value([]); $0.triggerOptions.motionSensitivity = .null }),
    .init(step: "30 empty MotionZones → SUCCESS", change: { $0.triggerOptions.motionZones = .value([]) }),
    .init(step: "31 unknown StreamUsage → CONSTRAINT_ERROR", change: { $0.streamUsage = .init(rawValue: 9) },
          expected: .constraintError, field: "streamUsage"),
    .init(step: "32 CMAF without CMAFContainerOptions → INVALID_COMMAND",
          change: { $0.containerOptions.cmafContainerOptions = nil },
          expected: .invalidCommand, field: "cmafContainerOptions"),
    .init(step: "33 SegmentDuration 1001 not a multiple of the key-frame interval → InvalidOptions",
          change: { $0.containerOptions.cmafContainerOptions?.segmentDuration = 1001 },
          expected: .cluster(.invalidOptions), field: "segmentDuration"),
    .init(step: "34 StreamUsage Internal (unsupported) → InvalidStreamUsage", change: { $0.streamUsage = .internal },
          expected: .cluster(.invalidStreamUsage), field: "streamUsage"),
    // TC-PAVST-2.11 (revision 2) additions
    .init(step: "2.11 21a VideoStreamID and VideoStreams → INVALID_COMMAND",
          change: { $0.videoStreams = [.init(videoStreamName: "video", videoStreamID: videoStreamID)] },
          expected: .invalidCommand, field: "videoStreams"),
    .init(step: "2.11 35 MaxPreRollLen 200 < key-frame interval → InvalidPreRollLength",
          change: { $0.triggerOptions.maxPreRollLen = 200 },
          expected: .cluster(.invalidPreRollLength), field: "maxPreRollLen"),
    .init(step: "2.11 MaxPreRollLen 0 → SUCCESS", change: { $0.triggerOptions.maxPreRollLen = 0 }),
    .init(step: "2.11 duplicate VideoStreams names → DuplicateStreamValues",
          change: {
              $0.videoStreamID = nil; $0.audioStreamID = nil
              $0.videoStreams = [.init(videoStreamName: "cam", videoStreamID: videoStreamID), .init(videoStreamName: "cam", videoStreamID: 11)]
          },
          expected: .cluster(.duplicateStreamValues), field: "videoStreams"),
    .init(step: "2.11 unknown ID in VideoStreams → InvalidStream",
          change: { $0.videoStreamID = nil; $0.audioStreamID = nil; $0.videoStreams = [.init(videoStreamName: "cam", videoStreamID: 99)] },
          expected: .cluster(.invalidStream), field: "videoStreams"),
    .init(step: "2.11 audio name equal to a video name → InvalidStream",
          change: {
              $0.videoStreamID = nil; $0.audioStreamID = nil
              $0.videoStreams = [.init(videoStreamName: "cam", videoStreamID: videoStreamID)]
              $0.audioStreams = [.init(audioStreamName: "cam", audioStreamID: audioStreamID)]
          },
          expected: .cluster(.invalidStream), field: "audioStreamName"),
    .init(step: "2.11 both stream lists empty → InvalidStream",
          change: { $0.videoStreamID = nil; $0.audioStreamID = nil; $0.videoStreams = []; $0.audioStreams = [] },
          expected: .cluster(.invalidStream), field: "videoStreams"),
    .init(step: "2.11 stream name of 17 bytes → CONSTRAINT_ERROR",
          change: { $0.videoStreamID = nil; $0.audioStreamID = nil; $0.videoStreams = [.init(videoStreamName: String(repeating: "v", count: 17), videoStreamID: videoStreamID)] },
          expected: .constraintError, field: "videoStreamName"),
    // §2.2 checks the TC scripts do not reach
    .init(step: "TLSEndpointID 65535 → CONSTRAINT_ERROR", change: { $0.tlsEndpointID = 65535 },
          expected: .constraintError, field: "tlsEndpointID"),
    .init(step: "URL of 12 bytes → CONSTRAINT_ERROR", change: { $0.url = "https://a.b/" },
          expected: .constraintError, field: "url"),
    .init(step: "zone sensitivity without PERZONESENS → INVALID_COMMAND",
          change: { $0.triggerOptions.motionZones = .value([.init(zone: .value(1), sensitivity: 3)]) },
          expected: .invalidCommand, field: "sensitivity"),
    .init(step: "PERZONESENS zone without sensitivity → INVALID_COMMAND", features: .perZoneSensitivity,
          base: { perZoneMotionOptions() }, change: { $0.triggerOptions.motionZones = .value([.init(zone: .value(1))]) },
          expected: .invalidCommand, field: "sensitivity"),
    .init(step: "PERZONESENS zone sensitivity 0 → CONSTRAINT_ERROR", features: .perZoneSensitivity,
          base: { perZoneMotionOptions() }, change: { $0.triggerOptions.motionZones = .value([.init(zone: .value(1), sensitivity: 0)]) },
          expected: .constraintError, field: "sensitivity"),
    .init(step: "PERZONESENS with sensitivity per zone → SUCCESS", features: .perZoneSensitivity,
          base: { perZoneMotionOptions() }, change: { _ in }),
    .init(step: "Motion without MotionZones → INVALID_COMMAND", change: { $0.triggerOptions.motionZones = nil },
          expected: .invalidCommand, field: "motionZones"),
    .init(step: "null MotionZones → SUCCESS", change: { $0.triggerOptions.motionZones = .null }),
    .init(step: "Motion without MotionSensitivity → INVALID_COMMAND", change: { $0.triggerOptions.motionSensitivity = nil },
          expected: .invalidCommand, field: "motionSensitivity"),
    .init(step: "(our decision) MaxDuration < InitialDuration → CONSTRAINT_ERROR",
          change: { $0.triggerOptions.motionTimeControl?.maxDuration = 9 },
          expected: .constraintError, field: "maxDuration"),
    .init(step: "Motion without MaxPreRollLen → INVALID_COMMAND", change: { $0.triggerOptions.maxPreRollLen = nil },
          expected: .invalidCommand, field: "maxPreRollLen"),
    .init(step: "Command without MaxPreRollLen → INVALID_COMMAND", base: { commandOptions(maxPreRollLen: nil) }, change: { _ in },
          expected: .invalidCommand, field: "maxPreRollLen"),
    .init(step: "Continuous with MaxPreRollLen → INVALID_COMMAND", base: { continuousOptions() },
          change: { $0.triggerOptions.maxPreRollLen = 0 }, expected: .invalidCommand, field: "maxPreRollLen"),
    .init(step: "Continuous with MotionZones → INVALID_COMMAND", base: { continuousOptions() },
          change: { $0.triggerOptions.motionZones = .null }, expected: .invalidCommand, field: "motionZones"),
    .init(step: "Continuous with MotionTimeControl → INVALID_COMMAND", base: { continuousOptions() },
          change: { $0.triggerOptions.motionTimeControl = defaultTimeControl }, expected: .invalidCommand, field: "motionTimeControl"),
    .init(step: "Continuous with MotionSensitivity → INVALID_COMMAND", base: { continuousOptions() },
          change: { $0.triggerOptions.motionSensitivity = .value(5) }, expected: .invalidCommand, field: "motionSensitivity"),
    .init(step: "unknown ContainerType → CONSTRAINT_ERROR", change: { $0.containerOptions.containerType = .init(rawValue: 1) },
          expected: .constraintError, field: "containerType"),
    .init(step: "unknown CMAFInterface → CONSTRAINT_ERROR", change: { $0.containerOptions.cmafContainerOptions?.cmafInterface = .init(rawValue: 7) },
          expected: .constraintError, field: "cmafInterface"),
    .init(step: "SegmentDuration 499 → CONSTRAINT_ERROR", change: { $0.containerOptions.cmafContainerOptions?.segmentDuration = 499 },
          expected: .constraintError, field: "segmentDuration"),
    .init(step: "ChunkDuration > SegmentDuration / 2 → CONSTRAINT_ERROR", change: { $0.containerOptions.cmafContainerOptions?.chunkDuration = 2001 },
          expected: .constraintError, field: "chunkDuration"),
    .init(step: "ChunkDuration = SegmentDuration / 2 → SUCCESS", change: { $0.containerOptions.cmafContainerOptions?.chunkDuration = 2000 }),
    .init(step: "CENCKey of 15 bytes → CONSTRAINT_ERROR",
          change: { $0.containerOptions.cmafContainerOptions?.cencKey = Data(count: 15); $0.containerOptions.cmafContainerOptions?.cencKeyID = Data(count: 16) },
          expected: .constraintError, field: "cencKey"),
    .init(step: "CENCKey without CENCKeyID → INVALID_COMMAND", change: { $0.containerOptions.cmafContainerOptions?.cencKey = Data(count: 16) },
          expected: .invalidCommand, field: "cencKeyID"),
    .init(step: "CENCKeyID of 8 bytes → CONSTRAINT_ERROR",
          change: { $0.containerOptions.cmafContainerOptions?.cencKey = Data(count: 16); $0.containerOptions.cmafContainerOptions?.cencKeyID = Data(count: 8) },
          expected: .constraintError, field: "cencKeyID"),
    .init(step: "CENCKeyID without CENCKey → INVALID_COMMAND", change: { $0.containerOptions.cmafContainerOptions?.cencKeyID = Data(count: 16) },
          expected: .invalidCommand, field: "cencKeyID"),
    .init(step: "CENC key and ID of 16 bytes → SUCCESS",
          change: { $0.containerOptions.cmafContainerOptions?.cencKey = Data(count: 16); $0.containerOptions.cmafContainerOptions?.cencKeyID = Data(count: 16) }),
    .init(step: "MetadataEnabled without METADATA → INVALID_COMMAND", change: { $0.containerOptions.cmafContainerOptions?.metadataEnabled = true },
          expected: .invalidCommand, field: "metadataEnabled"),
    .init(step: "MetadataEnabled with METADATA → SUCCESS", features: .metadata,
          change: { $0.containerOptions.cmafContainerOptions?.metadataEnabled = true }),
    .init(step: "TrackName of 17 bytes → CONSTRAINT_ERROR", change: { $0.containerOptions.cmafContainerOptions?.trackName = String(repeating: "t", count: 17) },
          expected: .constraintError, field: "trackName"),
    .init(step: "VideoStreamName \"../x\" (the track's folder, not one path segment) → CONSTRAINT_ERROR",
          change: { $0.videoStreamID = nil; $0.audioStreamID = nil
                    $0.videoStreams = [VideoStreamStruct(videoStreamName: "../x", videoStreamID: videoStreamID)] },
          expected: .constraintError, field: "videoStreamName"),
    .init(step: "AudioStreamName \"..\" → CONSTRAINT_ERROR",
          change: { $0.videoStreamID = nil; $0.audioStreamID = nil
                    $0.videoStreams = [VideoStreamStruct(videoStreamName: "front", videoStreamID: videoStreamID)]
                    $0.audioStreams = [AudioStreamStruct(audioStreamName: "..", audioStreamID: audioStreamID)] },
          expected: .constraintError, field: "audioStreamName"),
    .init(step: "Interface2HLS (not implemented by the uploader) → FAILURE",
          change: { $0.containerOptions.cmafContainerOptions?.cmafInterface = .interface2HLS },
          expected: .failure, field: "cmafInterface"),
    // Reference order: the earlier failing check decides.
    .init(step: "order: unknown TLS endpoint and http URL → InvalidTLSEndpoint",
          change: { $0.tlsEndpointID = 5; $0.url = "http://localhost:1234/streams/1/" },
          expected: .cluster(.invalidTLSEndpoint), field: "tlsEndpointID"),
    .init(step: "order: shape error before the TLS lookup → INVALID_COMMAND",
          change: { $0.tlsEndpointID = 5; $0.triggerOptions.motionTimeControl = nil },
          expected: .invalidCommand, field: "motionTimeControl"),
    .init(step: "order: unsupported usage before unknown zone → InvalidStreamUsage",
          change: { $0.streamUsage = .internal; $0.triggerOptions.motionZones = .value([.init(zone: .value(14))]) },
          expected: .cluster(.invalidStreamUsage), field: "streamUsage"),
    .init(step: "order: unknown zone before unknown stream → InvalidZone",
          change: { $0.videoStreamID = .value(99); $0.triggerOptions.motionZones = .value([.init(zone: .value(14))]) },
          expected: .cluster(.invalidZone), field: "motionZones"),
]

@Suite("TC-PAVST-2.3")
struct AllocateTests {
    @Test("Steps 11–34 and the §2.2 checks", arguments: allocationCases)
    func allocationStep(_ testCase: AllocationCase) async throws {
        var capabilities = TransportCapabilities(maxZones: 3)
        capabilities.features = testCase.features
        let server = try makeServer(capabilities: capabilities)
        var options = testCase.base()
        testCase.change(&options)
        if let expected = testCase.expected {
            await expectStatus(expected, field: testCase.field) { () async throws(TransportCommandError) in
                _ = try await server.allocatePushTransport(options, fabric: fabric1)
            }
            #expect(await server.currentConnections(fabric: fabric1).isEmpty, "a refused allocation stores nothing")
        } else {
            let configuration = try await server.allocatePushTransport(options, fabric: fabric1)
            #expect(configuration.transportStatus == .inactive)
        }
    }

    @Test("Steps 1–10: clean start, refused without streams, a valid allocation starts Inactive")
    func mainFlow() async throws {
        // Step 3: null stream IDs while the camera has no streams allocated.
        let bare = try makeServer(registries: standardRegistries(withStreams: false))
        #expect(await bare.currentConnections(fabric: fabric1).isEmpty)
        var nullIDs = continuousOptions()
        nullIDs.videoStreamID = .null
        nullIDs.audioStreamID = .null
        await expectStatus(.invalidInState, field: "videoStreamID") { () async throws(TransportCommandError) in
            _ = try await bare.allocatePushTransport(nullIDs, fabric: fabric1)
        }
        // Steps 4–5: the camera allocates a video and an audio stream.
        try await bare.setAllocatedVideoStream(AllocatedVideoStream(videoStreamID: videoStreamID, keyFrameInterval: 4000, streamUsage: .recording))
        try await bare.setAllocatedAudioStream(AllocatedAudioStream(audioStreamID: audioStreamID, streamUsage: .recording))
        // Step 6–7: a valid allocation answers with its configuration; CurrentConnections holds it, Inactive.
        let configuration = try await bare.allocatePushTransport(continuousOptions(), fabric: fabric1)
        #expect(configuration.connectionID != 0)
        #expect(configuration.transportStatus == .inactive)
        #expect(configuration.fabricIndex == fabric1)
        #expect(configuration.transportOptions?.url == ingestURL)
        let current = await bare.currentConnections(fabric: fabric1)
        #expect(current == [configuration])
        // Steps 8–10: what the test reads from Zone Management and the TLS clusters.
        let registries = await bare.currentRegistries
        #expect(registries.zoneManagement.zones.count == 3)
        #expect(bare.capabilities.maxZones == 3)
        #expect(registries.tls.endpoints[TLSEndpointKey(fabricIndex: fabric1, endpointID: tlsEndpointID)] != nil)
    }

    @Test("Connection IDs start at 1, follow the last issued, wrap 65534 → 1 and skip IDs in use")
    func connectionIDs() {
        #expect(nextConnectionID(after: nil, isInUse: { _ in false }) == 1)
        #expect(nextConnectionID(after: 7, isInUse: { _ in false }) == 8)
        #expect(nextConnectionID(after: 65534, isInUse: { _ in false }) == 1)
        #expect(nextConnectionID(after: 65533, isInUse: { $0 == 65534 || $0 == 1 }) == 2)
        #expect(nextConnectionID(after: 3, isInUse: { $0 != 3 }) == 3)
        #expect(nextConnectionID(after: 3, isInUse: { _ in true }) == nil)
    }

    @Test("IDs continue after a deallocated one instead of reusing it")
    func idsAreNotReusedImmediately() async throws {
        let server = try makeServer()
        let first = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        let second = try await server.allocatePushTransport(continuousOptions(), fabric: fabric2).connectionID
        try await server.deallocatePushTransport(connectionID: second, fabric: fabric2)
        let third = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1).connectionID
        #expect([first, second, third] == [1, 2, 3])
    }

    @Test("All IDs in use → RESOURCE_EXHAUSTED")
    func exhausted() async throws {
        let taken = (1...65534).map { id in
            StoredConnection(connectionID: UInt16(id), fabricIndex: fabric2, transportStatus: .inactive,
                             transportOptions: continuousOptions(), expiryDeadline: nil)
        }
        let server = try PushAVStreamTransportServer(
            capabilities: TransportCapabilities(maxZones: 3),
            persistence: VolatileTransportPersistence(initialState: PersistentTransportState(
                connections: taken, registries: standardRegistries(), lastConnectionID: 65534)),
            clock: ManualClock())
        await expectStatus(.resourceExhausted, field: "connectionID") { () async throws(TransportCommandError) in
            _ = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
        }
    }

    @Test("Streams beyond MaxNetworkBandwidth → RESOURCE_EXHAUSTED")
    func bandwidth() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(maxZones: 3, maxNetworkBandwidth: 3_000_000))
        _ = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
        await expectStatus(.resourceExhausted, field: "MaxNetworkBandwidth") { () async throws(TransportCommandError) in
            _ = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
        }
    }

    @Test("A stream whose codec the recorder cannot package → FAILURE")
    func unsupportedCodec() async throws {
        var registries = standardRegistries()
        registries.streams.video[11] = AllocatedVideoStream(videoStreamID: 11, codec: .hevc, keyFrameInterval: 2000, streamUsage: .recording)
        let server = try makeServer(registries: registries)
        var options = continuousOptions()
        options.videoStreamID = .value(11)
        await expectStatus(.failure, field: "codec") { () async throws(TransportCommandError) in
            _ = try await server.allocatePushTransport(options, fabric: fabric1)
        }
    }

    @Test("A (container, ingest method) pair missing from SupportedFormats → InvalidCombination")
    func invalidCombination() async throws {
        let server = try makeServer(capabilities: TransportCapabilities(supportedFormats: [], maxZones: 3))
        await expectStatus(.cluster(.invalidCombination), field: "ingestMethod") { () async throws(TransportCommandError) in
            _ = try await server.allocatePushTransport(continuousOptions(), fabric: fabric1)
        }
    }

    @Test("A TLS endpoint of another fabric is not usable → InvalidTLSEndpoint")
    func otherFabricsTLSEndpoint() async throws {
        var registries = standardRegistries()
        registries.tls.endpoints[TLSEndpointKey(fabricIndex: fabric2, endpointID: 7)] = tlsEndpoint(fabric: fabric2, id: 7)
        let server = try makeServer(registries: registries)
        var options = continuousOptions()
        options.tlsEndpointID = 7
        await expectStatus(.cluster(.invalidTLSEndpoint), field: "tlsEndpointID") { () async throws(TransportCommandError) in
            _ = try await server.allocatePushTransport(options, fabric: fabric1)
        }
    }
}

@Suite("TC-PAVST-2.11")
struct AllocateRevision2Tests {
    @Test("22: null stream IDs answer with synthesised VideoStreams/AudioStreams and the IDs filled in")
    func normalisedResponse() async throws {
        let server = try makeServer()
        var options = continuousOptions()
        options.videoStreamID = .null
        options.audioStreamID = .null
        // The script's default TrackName " " (a TrackName of spaces names nothing; "media" would name the video).
        options.containerOptions.cmafContainerOptions?.trackName = " "
        let configuration = try await server.allocatePushTransport(options, fabric: fabric1)
        let stored = try #require(configuration.transportOptions)
        #expect(stored.videoStreams == [VideoStreamStruct(videoStreamName: "video", videoStreamID: videoStreamID)])
        #expect(stored.audioStreams == [AudioStreamStruct(audioStreamName: "audio", audioStreamID: audioStreamID)])
        #expect(stored.videoStreamID == .value(videoStreamID))
        #expect(stored.audioStreamID == .value(audioStreamID))
    }

    @Test("Named stream lists keep their names; the legacy IDs mirror the first entries")
    func namedStreams() async throws {
        let server = try makeServer()
        var options = continuousOptions()
        options.videoStreamID = nil
        options.audioStreamID = nil
        options.videoStreams = [VideoStreamStruct(videoStreamName: "front", videoStreamID: videoStreamID)]
        let stored = try #require(try await server.allocatePushTransport(options, fabric: fabric1).transportOptions)
        #expect(stored.videoStreams?.first?.videoStreamName == "front")
        #expect(stored.videoStreamID == .value(videoStreamID))
        #expect(stored.audioStreamID == nil, "no audio was requested")
        #expect(stored.audioStreams == nil)
    }
}

@Suite("TC-PAVST-2.10")
struct URLValidationTests {
    @Test("Each malformed publishing-point URL → InvalidURL", arguments: [
        "http://localhost:1234/streams/1/",
        "https://localhost:1234/streams/1#/frag",
        "https://localhost:1234/streams/1?bad=query",
        "https://localhost:1234/streams/1",
        "https:///streams/1/",
        "https://localhost:1234/streams/1/?",
        "ftp://localhost:1234/streams/1/",
        "https://local host:1234/streams/1/",
    ])
    func invalid(url: String) async throws {
        #expect(!isValidIngestURL(url))
        let server = try makeServer()
        var options = continuousOptions()
        options.url = url
        await expectStatus(.cluster(.invalidURL), field: "url") { () async throws(TransportCommandError) in
            _ = try await server.allocatePushTransport(options, fabric: fabric1)
        }
    }

    @Test("Well-formed URLs are accepted", arguments: [
        "https://localhost:1234/streams/1/",
        "HTTPS://Example.com/ingest/",
        "https://192.168.1.20/a/b/c/",
        "https://[::1]:8443/streams/7/",
    ])
    func valid(url: String) async throws {
        #expect(isValidIngestURL(url))
        let server = try makeServer()
        var options = continuousOptions()
        options.url = url
        _ = try await server.allocatePushTransport(options, fabric: fabric1)
    }
}
