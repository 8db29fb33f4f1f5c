import Foundation
import HTTPTypes
import HummingbirdTesting
import Prometheus
import Sidecar
@testable import SidecarAPI
import Testing

/// `/ready` and `/metrics` over the test double: what they answer is what the control and the registry say.
@Suite struct HealthAndMetricsTests {
    struct ReadinessCase: Sendable, CustomTestStringConvertible {
        var name: String
        var readiness: SidecarReadiness
        var status: HTTPResponse.Status
        var testDescription: String { name }
    }

    static let readinessCases: [ReadinessCase] = [
        ReadinessCase(name: "every source fresh, stores open", readiness: SidecarReadiness(storeOpen: true, cameras: [
            "cam1": .init(sinceLastPacket: .milliseconds(40)), "cam2": .init(sinceLastPacket: .seconds(5)),
        ]), status: .ok),
        ReadinessCase(name: "a source stalled", readiness: SidecarReadiness(storeOpen: true, cameras: [
            "cam1": .init(sinceLastPacket: .milliseconds(40)), "cam2": .init(sinceLastPacket: .milliseconds(5001)),
        ]), status: .serviceUnavailable),
        ReadinessCase(name: "a source never read", readiness: SidecarReadiness(storeOpen: true, cameras: [
            "cam1": .init(sinceLastPacket: .milliseconds(40)), "cam2": .init(sinceLastPacket: nil),
        ]), status: .serviceUnavailable),
        ReadinessCase(name: "a store closed", readiness: SidecarReadiness(storeOpen: false, cameras: [
            "cam1": .init(sinceLastPacket: .milliseconds(40)), "cam2": .init(sinceLastPacket: .milliseconds(40)),
        ]), status: .serviceUnavailable),
    ]

    @Test(arguments: readinessCases)
    func readyAnswersWhatTheControlSays(_ check: ReadinessCase) async throws {
        try await withAPI { sidecar, client in
            sidecar.setReadiness(check.readiness)
            let response = try await client.call(.get, "/ready")
            #expect(response.status == check.status)
            #expect(response.headers[.contentType] == "application/json")
            let body = try JSONDecoder().decode(SidecarReadiness.self, from: Data(buffer: response.body))
            #expect(body == check.readiness)
            #expect(body.ready == (check.status == .ok))
        }
    }

    @Test func readyNamesTheStaleSource() async throws {
        try await withAPI { sidecar, client in
            sidecar.setReadiness(SidecarReadiness(storeOpen: true, cameras: [
                "cam1": .init(sinceLastPacket: .milliseconds(1500)), "cam2": .init(sinceLastPacket: nil),
            ]))
            let response = try await client.call(.get, "/ready")
            #expect(response.text == #"{"cameras":{"cam1":{"ready":true,"secondsSinceLastPacket":1.5},"cam2":{"ready":false}},"#
                + #""ready":false,"storeOpen":true}"#)
        }
    }

    @Test func metricsRendersTheRegistryAfterRefreshingGauges() async throws {
        // Through the swift-metrics factory, as the process's counters and gauges reach the registry.
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        factory.makeCounter(label: "pushav_clips_begun_total", dimensions: [("camera", "cam1")]).increment(by: 3)
        factory.makeRecorder(label: "pushav_upload_queue_depth", dimensions: [("connection", "cam1/1")], aggregate: false)
            .record(Int64(7))
        try await withAPI(metrics: registry) { sidecar, client in
            #expect(sidecar.gaugeRefreshes == 0)
            let response = try await client.call(.get, "/metrics")
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == SidecarRouter.prometheusContentType)
            let lines = response.text.split(separator: "\n").map(String.init)
            #expect(lines.contains(#"pushav_clips_begun_total{camera="cam1"} 3"#), "\(lines)")
            #expect(lines.contains(#"pushav_upload_queue_depth{connection="cam1/1"} 7.0"#), "\(lines)")
            #expect(sidecar.gaugeRefreshes == 1)
        }
    }

    @Test(arguments: ["/metrics", "/ready", "/health"])
    func probesRefuseOtherMethods(_ path: String) async throws {
        try await withAPI { _, client in
            let response = try await client.call(.post, path, json: "{}")
            #expect(response.status == .methodNotAllowed)
            #expect(response.headers[.allow] == "GET")
        }
    }
}
