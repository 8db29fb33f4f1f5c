// swift-tools-version: 6.0
// PushAV Recorder: records camera events as CMAF and pushes them to a Matter Push AV ingest endpoint.
import PackageDescription

let package = Package(
    name: "PushAVRecorder",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "pushav", targets: ["pushav"]),
        .library(name: "PushAVRecorder", targets: ["Domain", "Recorder", "TransportRecording", "CMAF", "Timeline", "Motion", "TransportModel", "TransportStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        // Ingest (issue 5): HTTPS PUT uploader with mutual TLS, and the reference ingest server.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // `pushav serve`'s configuration file.
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // `pushav serve --demo`'s throwaway certificates, made in process (already resolved for AsyncHTTPClient).
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        // Whole writes to a file descriptor, retried on EINTR (already resolved for SwiftNIO): segment files, the
        // spool's durable files, the certificates command and standard output.
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // `pushav serve`'s /metrics: the swift-metrics backend that renders the Prometheus text format.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Request and response types of the HTTP API and the ingest server (what Hummingbird's own are built on).
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // The HTTP API's types and server protocol, generated from its OpenAPI document (`Scripts/generate-api`), and
        // the transport that registers them on Hummingbird's router.
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird", from: "2.1.0"),
    ],
    targets: [
        // FFmpeg 5.1 from Debian (libavformat-dev, libavcodec-dev, libavutil-dev, libswscale-dev; libswresample-dev
        // comes with libavcodec-dev). shim.h re-exports the macros Swift cannot import.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libavutil libswscale libswresample",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev"])]
        ),
        // The vocabulary every other module speaks: media time, clip durations, zones and zone triggers. Pure values,
        // no dependencies: policy (the cluster model) and mechanism (timeline, detector) meet here, not in each other.
        .target(name: "Domain"),
        // Pure Swift: segment/chunk planning, clip timeline, zone triggers (no FFmpeg, no I/O).
        .target(name: "Timeline", dependencies: ["Domain"]),
        // Motion detection over a downscaled luma plane: pure logic, no I/O; one AVX2 kernel in C beside it.
        .target(name: "CLumaKernels"),
        .target(name: "Motion", dependencies: ["Domain", "CLumaKernels"]),
        // Pure Swift: ISO-BMFF / CMAF box reader, codec strings and conformance checks (no FFmpeg).
        .target(
            name: "CMAF",
            dependencies: [
                // AES-CTR for Common Encryption (`cenc`).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]),
        // The Swift owners of FFmpeg objects: input, decoder, scaler, encoders, CMAF track muxer.
        .target(
            name: "MediaIO",
            dependencies: ["CFFmpeg", "Domain", "Timeline", "CMAF", "Motion", .product(name: "Logging", package: "swift-log")]
        ),
        // Demux once, cut sessions, write the upload layout and the report.
        .target(
            name: "Recorder",
            dependencies: [
                "Domain", "MediaIO", "Timeline", "Motion", "CMAF",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The one path from a transport connection's TransportOptions to a recording, for `record` and `serve`: the
        // adapter between the cluster model (policy) and the recorder (mechanism), so neither knows the other.
        .target(name: "TransportRecording", dependencies: ["Domain", "Recorder", "TransportModel", "Timeline", "Motion", "CMAF"]),
        // Matter Push AV Stream Transport cluster model: types, validation, commands, events. Knows the domain's
        // values, not the detector or the timeline that act on them.
        .target(name: "TransportModel", dependencies: ["Domain"]),
        // SQLite persistence of transport connections (GRDB).
        .target(
            name: "TransportStore",
            dependencies: ["Domain", "TransportModel", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // Durable spool (GRDB journal) and the HTTPS PUT uploader (AsyncHTTPClient, mutual TLS). No server code.
        .target(
            name: "Ingest",
            dependencies: [
                // SessionNumber: the number a spooled object's session is filed under.
                "Domain",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // Destination keys: a SHA-256 of where and how a recording's objects go.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // `pushav receive`: the reference CMAF ingest endpoint (Hummingbird, HTTPS with client certificates).
        .target(
            name: "IngestServer",
            dependencies: [
                "CMAF", "Domain", "Ingest",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `pushav serve`: the recording sidecar (configuration so far; the engine composes the modules above).
        // Latch and SerialGate: the two small concurrency primitives the delivery pipeline and the sidecar share.
        .target(name: "ConcurrencyPrimitives"),
        // The delivery pipeline `pushav record --push` and `pushav serve` share: a destination's uploads fed from a
        // recording (DestinationUpload), its lifecycle and a camera's roster of destinations (pure state machines).
        .target(
            name: "Delivery",
            dependencies: [
                "Domain", "Ingest", "Recorder", "ConcurrencyPrimitives",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "Sidecar",
            dependencies: [
                // MediaIO for the JPEG thumbnails and snapshots the recorder hands over.
                "Domain", "Motion", "TransportModel", "TransportStore", "Recorder", "TransportRecording", "MediaIO", "Ingest",
                "Timeline", "Delivery", "ConcurrencyPrimitives", "CMAF",
                .product(name: "Yams", package: "Yams"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // `pushav serve`'s HTTP API (Hummingbird): the cluster's commands, attributes and events per camera, TLS
        // endpoints, camera status; described by openapi.json, which it also serves.
        .target(
            name: "SidecarAPI",
            dependencies: [
                "Domain", "Ingest", "Sidecar", "TransportModel",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                // The bundled page and document are read once on NIO's blocking-I/O pool (into NIOCore buffers).
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                // Bearer tokens compared as SHA-256 digests, whose equality is constant-time.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("openapi.json"), .copy("page.html")]
        ),
        // `pushav serve --demo`: the sidecar with a looped file as its camera, the ingest server in process with
        // throwaway certificates, and a transport allocated through its own HTTP API.
        .target(
            name: "SidecarDemo",
            dependencies: [
                "Domain", "Sidecar", "SidecarAPI", "IngestServer",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "pushav",
            dependencies: [
                "Domain", "Recorder", "TransportRecording", "CMAF", "MediaIO", "Motion", "Timeline", "TransportModel", "Ingest",
                "IngestServer", "Sidecar", "Delivery",
                "SidecarAPI", "SidecarDemo", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                // `pushav serve`'s control API with mutual TLS.
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What several test targets share: paths, free ports, the built pushav, child processes, a live RTSP camera,
        // a hand-moved clock.
        .target(name: "TestSupport", dependencies: ["TransportModel", "Ingest", .product(name: "Logging", package: "swift-log"),
                                                  .product(name: "AsyncHTTPClient", package: "async-http-client")],
                path: "Tests/TestSupport"),
        .testTarget(name: "DomainTests", dependencies: ["Domain"]),
        .testTarget(name: "TimelineTests", dependencies: ["Domain", "Timeline", "TestSupport"]),
        .testTarget(
            name: "SidecarTests",
            dependencies: [
                "Domain", "Sidecar", "Delivery", "ConcurrencyPrimitives", "Motion", "TransportModel", "Ingest", "TestSupport",
                "CMAF", "Recorder",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The throwaway PKI, and `pushav serve --demo` run as a process.
        .testTarget(
            name: "SidecarDemoTests",
            dependencies: [
                "SidecarDemo", "TestSupport",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "SidecarAPITests",
            dependencies: [
                "Domain", "SidecarAPI", "Sidecar", "TransportModel", "Motion", "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // The SHA-256 of openapi.json, against the one the generated code was made from.
                .product(name: "Crypto", package: "swift-crypto"),
                // Reads the event stream as it arrives (the test clients collect whole bodies).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "MotionTests", dependencies: ["Domain", "Motion", "TestSupport"]),
        .testTarget(name: "CMAFTests", dependencies: ["CMAF", "TestSupport"]),
        .testTarget(name: "MediaIOTests", dependencies: ["MediaIO", "CFFmpeg", "CMAF", "TestSupport"]),
        .testTarget(
            name: "RecorderTests",
            dependencies: ["Domain", "Recorder", "TransportRecording", "TransportModel", "CMAF", "MediaIO", "Motion", "Timeline", "TestSupport",
                           .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "TransportModelTests", dependencies: ["Domain", "TransportModel", "TestSupport"]),
        .testTarget(
            name: "TransportStoreTests",
            dependencies: ["Domain", "TransportStore", "TransportModel", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "Domain", "Ingest", "IngestServer", "CMAF", "Recorder", "MediaIO", "Motion", "Timeline", "TestSupport",
                // The engine in process, where a test changes what the API cannot (a TLS endpoint replaced).
                "Sidecar", "TransportModel", "ConcurrencyPrimitives",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                // The reference ingest runs in the tests as the service it is in `pushav receive`.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // To write a spool journal as an older version left it (schema migration tests).
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
)
