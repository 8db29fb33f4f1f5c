import Foundation
import Sidecar
import Testing
import TestSupport
import TransportModel

/// Removing a TLS endpoint while an Allocate names it, on another camera, rounds on end (issue 47's review: the
/// removal checked every camera first and removed afterwards, so an Allocate in between kept a connection whose
/// endpoint was gone). Whichever wins, the other is refused, and every camera keeps the same endpoints.
@Suite struct TLSEndpointRemovalRaceTests {
    @Test func aRemovalAndAnAllocationNamingItNeverBothSucceed() async throws {
        let directory = try TestPaths.scratchDirectory("tls-remove-race")
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = TestPaths.media("a_720p30_h264_main.mp4").path
        let engine = try await SidecarEngine(configuration: ServeConfiguration(
            state: directory.appendingPathComponent("state").path,
            cameras: [CameraConfiguration(id: "cam1", source: media), CameraConfiguration(id: "cam2", source: media)]))
        let identity = try await SelfSignedIdentity.make(in: directory)
        let (cert, key) = (identity.certificatePEM, identity.keyPEM)
        let request = TLSEndpointRequest(hostname: "ingest.example", port: 443, caCertificate: cert, clientCertificate: cert,
                                         clientKey: key)
        let cam2 = try #require(await engine.transport(camera: "cam2"))
        var outcomes: [String: Int] = [:]
        for round in 0..<40 {
            let id = try await engine.addTLSEndpoint(request, fabric: 1)
            let options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data("""
                {"streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": \(id), "url": "https://ingest.example/", "ingestMethod": 0,
                 "triggerOptions": {"triggerType": 0, "maxPreRollLen": 2000},
                 "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000, "chunkDuration": 0}}}
                """.utf8))
            async let removal: TransportCommandError? = { () async -> TransportCommandError? in
                do throws(TransportCommandError) { try await engine.removeTLSEndpoint(id, fabric: 1); return nil } catch { return error }
            }()
            async let allocation: Result<UInt16, TransportCommandError> = { () async -> Result<UInt16, TransportCommandError> in
                // A few turns later each round, so the allocation lands at each step of the removal in turn.
                for _ in 0..<(round % 10) { await Task.yield() }
                do throws(TransportCommandError) { return .success(try await cam2.allocatePushTransport(options, fabric: 1).connectionID) }
                catch { return .failure(error) }
            }()
            let (removed, allocated) = (await removal == nil, await allocation)
            let present = try await ["cam1", "cam2"].asyncMap { camera in
                let server = try #require(engine.transport(camera: camera))
                return await server.currentRegistries.tls.endpoints[TLSEndpointKey(fabricIndex: 1, endpointID: id)] != nil
            }
            #expect(present[0] == present[1], "round \(round): the cameras' endpoints differ: \(present)")
            switch allocated {
            case .success(let connection):
                #expect(!removed && present[1], "round \(round): connection \(connection) allocated and its endpoint removed")
                try await cam2.deallocatePushTransport(connectionID: connection, fabric: 1)
                try await engine.removeTLSEndpoint(id, fabric: 1)
                outcomes["allocated first", default: 0] += 1
            case .failure:
                #expect(removed || present[1], "round \(round): both refused")
                if !removed { try await engine.removeTLSEndpoint(id, fabric: 1) }
                outcomes["removed first", default: 0] += 1
            }
        }
        print("TLS endpoint removal race: \(outcomes)")
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
