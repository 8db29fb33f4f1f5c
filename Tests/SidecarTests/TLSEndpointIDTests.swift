import Foundation
import Sidecar
import Testing
import TestSupport
import TransportModel

/// TLS endpoints created at the same time (a controller's retries, two controllers of one fabric) each get an ID of
/// their own, and every camera holds every one of them under the same ID — referring to the private key, which only
/// the owner-only credential store holds.
@Suite struct TLSEndpointIDTests {
    @Test func concurrentCreationsGetDistinctIDsOnEveryCamera() async throws {
        let directory = try TestPaths.scratchDirectory("tls-ids")
        defer { try? FileManager.default.removeItem(at: directory) }
        let media = TestPaths.media("a_720p30_h264_main.mp4").path
        let engine = try await SidecarEngine(configuration: ServeConfiguration(
            state: directory.appendingPathComponent("state").path,
            cameras: [CameraConfiguration(id: "cam1", source: media), CameraConfiguration(id: "cam2", source: media)]))
        let identity = try await SelfSignedIdentity.make(in: directory)
        let (cert, key) = (identity.certificatePEM, identity.keyPEM)

        let count = 24
        let ids = try await withThrowingTaskGroup(of: (Int, UInt16).self) { group in
            for n in 0..<count {
                group.addTask {
                    let request = TLSEndpointRequest(hostname: "ingest-\(n).example", port: 443, caCertificate: cert,
                                                     clientCertificate: cert, clientKey: key)
                    return (n, try await engine.addTLSEndpoint(request, fabric: 1))
                }
            }
            var ids: [Int: UInt16] = [:]
            for try await (n, id) in group { ids[n] = id }
            return ids
        }
        #expect(Set(ids.values).count == count, "IDs handed out twice: \(ids.sorted { $0.key < $1.key })")
        #expect(Set(ids.values) == Set((1...UInt16(count))), "the lowest free IDs")
        for camera in ["cam1", "cam2"] {
            let endpoints = try #require(await engine.transport(camera: camera)?.currentRegistries.tls.endpoints)
            for (n, id) in ids {
                #expect(endpoints[TLSEndpointKey(fabricIndex: 1, endpointID: id)]?.hostname == "ingest-\(n).example", "\(camera) endpoint \(id)")
            }
        }

        // The key is in the owner-only credential store once, and in neither camera's store (nor its WAL).
        let keyLine = Data(try #require(key.split(separator: "\n").dropFirst().first).utf8)
        let state = directory.appendingPathComponent("state")
        for camera in ["cam1", "cam2"] {
            for suffix in ["", "-wal"] {
                let file = state.appendingPathComponent("cameras/\(camera).sqlite\(suffix)")
                let bytes = (try? Data(contentsOf: file)) ?? Data()
                #expect(bytes.range(of: keyLine) == nil, "the private key in \(file.lastPathComponent)")
            }
        }
        let credentials = state.appendingPathComponent("tls/credentials.sqlite")
        #expect(try Data(contentsOf: credentials).range(of: keyLine) != nil)
        let mode = (try FileManager.default.attributesOfItem(atPath: credentials.path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
    }
}
