import Foundation
@testable import Sidecar
import Testing
import TransportModel

/// The camera's reconciler by table: the cluster's connections × what the camera runs → record, keep, stop, refuse,
/// and the destinations retired. No I/O.
@Suite struct ConnectionReconcilerTests {
    typealias Spec = ConnectionReconciler.Spec
    typealias Wanted = ConnectionReconciler.Wanted

    static func options(url: String = "https://a.example/", segmentMs: UInt32 = 2000, expiry: UInt32? = nil) -> TransportOptionsStruct {
        var options = try! JSONDecoder().decode(TransportOptionsStruct.self, from: Data("""
            {"streamUsage": 1, "videoStreamID": 1, "tlsEndpointID": 1, "url": "\(url)", "ingestMethod": 0,
             "triggerOptions": {"triggerType": 2},
             "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": \(segmentMs), "chunkDuration": 0}}}
            """.utf8))
        options.expiryTime = expiry
        return options
    }

    static func spec(_ destination: String, segmentMs: UInt32 = 2000, expiry: UInt32? = nil) -> Spec {
        Spec(options: options(segmentMs: segmentMs, expiry: expiry), destination: destination)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var wanted: [UInt16: Wanted]
        var running: [UInt16: Spec]
        var actions: [ConnectionReconciler.Action]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "allocated", wanted: [1: Wanted(spec: spec("cam/1@a"))], running: [:], actions: [.record(1)]),
        Case(name: "unchanged", wanted: [1: Wanted(spec: spec("cam/1@a"))], running: [1: spec("cam/1@a")], actions: [.keep(1)]),
        Case(name: "a Modify of ExpiryTime alone keeps the recording",
             wanted: [1: Wanted(spec: spec("cam/1@a", expiry: 600))], running: [1: spec("cam/1@a", expiry: 60)], actions: [.keep(1)]),
        Case(name: "a Modify of the options, same destination: made anew, nothing retired",
             wanted: [1: Wanted(spec: spec("cam/1@a", segmentMs: 4000))], running: [1: spec("cam/1@a")], actions: [.record(1)]),
        Case(name: "a Modify to another ingest: made anew, the old destination retired",
             wanted: [1: Wanted(spec: spec("cam/1@b"))], running: [1: spec("cam/1@a")], actions: [.record(1), .retire("cam/1@a")]),
        Case(name: "deallocated: stopped and its destination retired",
             wanted: [:], running: [1: spec("cam/1@a")], actions: [.stop(1), .retire("cam/1@a")]),
        Case(name: "TLS endpoint gone under a recording connection: stopped, refused, destination retired",
             wanted: [1: Wanted(spec: nil)], running: [1: spec("cam/1@a")], actions: [.stop(1), .refuse(1), .retire("cam/1@a")]),
        Case(name: "TLS endpoint still gone: refused again (the camera logs it once)",
             wanted: [1: Wanted(spec: nil)], running: [:], actions: [.refuse(1)]),
        Case(name: "TLS endpoint back", wanted: [1: Wanted(spec: spec("cam/1@a"))], running: [:], actions: [.record(1)]),
        Case(name: "several connections, in ID order, retirements last",
             wanted: [3: Wanted(spec: spec("cam/3@c")), 1: Wanted(spec: spec("cam/1@b"))],
             running: [2: spec("cam/2@x"), 1: spec("cam/1@a"), 3: spec("cam/3@c")],
             actions: [.record(1), .stop(2), .keep(3), .retire("cam/1@a"), .retire("cam/2@x")]),
    ]

    @Test(arguments: cases)
    func actions(_ check: Case) {
        #expect(ConnectionReconciler.actions(wanted: check.wanted, running: check.running) == check.actions)
    }

    /// Destinations: the same URL and material under the same owner is the same label; anything that decides where or
    /// how objects go makes another; the key is never sent to the spool, only its reference.
    @Test func destinationLabelsFollowWhereObjectsGo() throws {
        let endpoint = TLSEndpoint(fabricIndex: 1, endpointID: 1, hostname: "a.example", port: 443,
                                   caCertificate: Data("ca".utf8), clientCertificateChain: [Data("leaf".utf8)],
                                   privateKey: Data("key-1".utf8))
        let connection = StoredConnection(connectionID: 4, fabricIndex: 1, transportStatus: .active,
                                          transportOptions: Self.options(url: "https://a.example/in"), expiryDeadline: nil)
        let label = { (connection: StoredConnection, endpoint: TLSEndpoint) in
            CameraService.destination(of: connection, camera: "cam1", endpoint: endpoint).0
        }
        let base = label(connection, endpoint)
        #expect(base.key.hasPrefix("cam1/4@") && base.owner == "cam1/4" && base.url == "https://a.example/in/")
        #expect(base.privateKeyReference == TLSCredentialStore.reference(of: Data("key-1".utf8)))
        var modified = connection
        modified.transportOptions.containerOptions.cmafContainerOptions?.segmentDuration = 4000
        modified.transportStatus = .inactive
        #expect(label(modified, endpoint).key == base.key, "options other than where: the same destination")
        var moved = connection
        moved.transportOptions.url = "https://b.example/in"
        var rekeyed = endpoint
        rekeyed.privateKey = Data("key-2".utf8)
        var otherCA = endpoint
        otherCA.caCertificate = Data("ca-2".utf8)
        var otherFabric = connection
        otherFabric.fabricIndex = 2
        let others = [label(moved, endpoint), label(connection, rekeyed), label(connection, otherCA), label(otherFabric, endpoint)]
        #expect(Set(others.map(\.key)).count == 4 && !others.contains { $0.key == base.key })
    }
}
