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
