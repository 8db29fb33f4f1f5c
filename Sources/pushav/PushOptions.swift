import ArgumentParser
import Delivery
import Foundation
import Ingest
import Logging
import Recorder
import Sidecar

/// `--push URL [--ca PEM --cert PEM --key PEM] [--spool DIR]`: upload what is recorded (durably spooled first).
struct PushOptions: ParsableArguments {
    @Option(name: .long, help: "Ingest URL (CMAF publishing point, ends with /) to PUT sessions to.")
    var push: String?

    @Option(name: .long, help: "PEM file with the CA certificate(s) the server must chain to (default: system roots).")
    var ca: String?

    @Option(name: .long, help: "PEM file with the client certificate chain (mutual TLS).")
    var cert: String?

    @Option(name: .long, help: "PEM file with the client private key.")
    var key: String?

    @Option(name: .long, help: "Spool directory (default: <out>/.spool).")
    var spool: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Spool capacity, ≥ 1 MiB; whole oldest finished sessions are evicted beyond it.", valueName: "MiB"))
    var spoolCapacity: Int = 1024

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Failed attempts in a row for one object before giving up (exit non-zero, spool kept), ≥ 1.", valueName: "attempts"))
    var retryBudget: Int = 12

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Largest retry delay, ≥ 1 ms (backoff starts at 1 s, or this if smaller).", valueName: "ms"))
    var maxBackoff: Int = 60_000

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "After Ctrl-C or SIGTERM: how long the uploads may go on before the rest is left in the spool, ≥ 0 ms "
            + "(default: two segment durations, 2000…10000).",
        discussion: "What is left is not lost: `pushav upload` or the next `record --push` delivers it. A second signal "
            + "exits at once, whatever the grace.", valueName: "ms"))
    var uploadGrace: Int?

    func validate() throws {
        if push == nil, ca != nil || cert != nil || key != nil {
            throw ValidationError("--ca, --cert and --key need --push")
        }
        if (cert == nil) != (key == nil) { throw ValidationError("--cert and --key go together") }
        if let push, !(push.hasPrefix("https://") || push.hasPrefix("http://")) {
            throw ValidationError("--push must be an http(s) URL, got \(push)")
        }
        if spoolCapacity < 1 { throw ValidationError("--spool-capacity must be ≥ 1 MiB, got \(spoolCapacity)") }
        if retryBudget < 1 { throw ValidationError("--retry-budget must be ≥ 1 attempt, got \(retryBudget)") }
        if maxBackoff < 1 { throw ValidationError("--max-backoff must be ≥ 1 ms, got \(maxBackoff)") }
        if let uploadGrace, uploadGrace < 0 { throw ValidationError("--upload-grace must be ≥ 0 ms, got \(uploadGrace)") }
    }

    /// Opens the spool and the uploader; nil without `--push`. Key material is read into memory only.
    func makeUploader(defaultSpool: URL, segmentDuration: Duration, logger: Logger) throws -> SegmentUploader? {
        guard let push else { return nil }
        // Certificates and key are read into memory and handed to NIOSSL from there.
        let trusted = try ca.map { try Self.read($0) }
        let tls: ClientTLSMaterial? = if let cert, let key {
            ClientTLSMaterial(trustedCertificates: trusted, certificateChain: try Self.read(cert), privateKey: try Self.read(key))
        } else if let trusted {
            ClientTLSMaterial(trustedCertificates: trusted, certificateChain: [], privateKey: [])
        } else {
            nil
        }
        let spoolDirectory = spool.map { URL(fileURLWithPath: $0) } ?? defaultSpool
        let spool = try SegmentSpool(directory: spoolDirectory, capacity: spoolCapacity << 20, logger: logger)
        var policy = UploadPolicy(segmentDuration: segmentDuration)
        policy.maximumBackoff = .milliseconds(maxBackoff)
        policy.initialBackoff = min(policy.initialBackoff, policy.maximumBackoff)
        policy.retryBudget = retryBudget
        let endpoint = UploadEndpoint(url: push, connection: push.hasSuffix("/") ? push : push + "/", tls: tls)
        return try SegmentUploader(spool: spool, endpoint: endpoint, policy: policy, segmentDuration: segmentDuration, logger: logger)
    }

    private static func read(_ path: String) throws -> [UInt8] {
        do {
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw CLIError("cannot read \(path): \(error.localizedDescription)")
        }
    }
}

/// `--push`: the recording's events go through a ``DestinationUpload`` (durable spool, then HTTPS PUT).
///
/// The delivery runs from creation to ``finish(stop:)`` in a task of its own: a CLI run has no service group, and the
/// command's own flow (record, report, then finish) owns it, awaiting it in `finish`.
final class RecordingUpload: Sendable {
    let delivery: DestinationUpload
    /// How long uploads may go on after a stop (`--upload-grace`, else two segment durations, 2…10 s).
    let grace: Duration
    private let running: Task<UploadSummary, Never>
    var uploader: SegmentUploader { delivery.uploader }

    init(uploader: SegmentUploader, grace: Duration?) {
        let delivery = DestinationUpload(uploader: uploader)
        self.delivery = delivery
        self.grace = grace ?? min(max(uploader.segmentDuration * 2, .seconds(2)), .seconds(10))
        running = Task { await delivery.run() }
    }

    static func start(_ push: PushOptions, options: inout RecordingOptions, logger: Logger) throws -> RecordingUpload? {
        let segment = Duration.milliseconds(Int64((options.segmentDuration.seconds * 1000).rounded()))
        guard let uploader = try push.makeUploader(defaultSpool: options.output.appendingPathComponent(".spool"),
                                                   segmentDuration: segment, logger: logger)
        else { return nil }
        // Session numbers only ever increase per connection, across runs: continue after what the spool has seen.
        let next = try uploader.spool.nextSessionNumber(connection: uploader.endpoint.connection)
        for index in options.policies.indices {
            options.policies[index].firstSession = max(options.policies[index].firstSession, next)
        }
        let upload = RecordingUpload(uploader: uploader, grace: push.uploadGrace.map { .milliseconds($0) })
        let delivery = upload.delivery
        options.events = { event in delivery.handle(event) }
        return upload
    }

    /// "a, b, c and N more": the objects a summary names, out of `count`.
    private static func list(_ named: [UploadObject], of count: Int) -> String {
        named.map(\.description).joined(separator: ", ") + (count > named.count ? " and \(count - named.count) more" : "")
    }

    /// Waits until everything is delivered; throws (spool kept) if the budget ran out, or when objects were lost or given up.
    ///
    /// After a stop (Ctrl-C, SIGTERM) every spool write still completes, but uploads get only a short ``grace``;
    /// what is left stays in the spool, where `pushav upload` or the next `pushav record --push` delivers it. That is
    /// not a failure: nothing is lost.
    func finish(stop: RecordingStop? = nil) async throws {
        // Without a stop: until the spool is empty (or the retry budget gives up). After a stop: the grace.
        delivery.close()
        if let stop {
            stop.whenRequested { [delivery, grace] in
                Task {
                    try? await Task.sleep(for: grace)
                    delivery.stop()  // no effect once everything was delivered
                }
            }
        }
        let summary = await running.value
        // What stays in the spool is made durable before the process ends (objects wait up to its syncDelay for it).
        _ = try? await BlockingIO.run { [spool = uploader.spool] in spool.syncPending() }
        let where_ = uploader.spool.directory.path
        if summary.unconfirmed > 0 {
            // Not an error: the ingest most likely holds them (it refused copies of an attempt that got no answer).
            let named = Self.list(summary.unconfirmedObjects, of: summary.unconfirmed)
            FileHandle.standardError.write(Data(("warning: \(summary.unconfirmed) object(s) unconfirmed: an attempt got no answer "
                + "and the ingest refused the copies, so it most likely took that attempt: \(named)\n").utf8))
        }
        if summary.lost > 0 {
            let named = Self.list(summary.lostObjects, of: summary.lost)
            let upload = summary.failure.map { "; upload incomplete (\($0)), the spool at \(where_) is kept" } ?? ""
            throw CLIError("\(summary.lost) object(s) lost: could not be written to the spool at \(where_), never uploaded: "
                           + "\(named)\(upload); \(summary.delivered) delivered, \(summary.retries) retries")
        }
        let damaged = uploader.spool.damagedAtOpen(connection: uploader.endpoint.connection)
        if !damaged.isEmpty {
            throw CLIError("\(damaged.count) object(s) lost to a power failure: their files in the spool at \(where_) were "
                           + "missing or cut short when it was opened: \(Self.list(damaged, of: damaged.count)); "
                           + "\(summary.delivered) delivered")
        }
        if summary.givenUp > 0 {
            // Refused for good by the ingest and dropped from the spool: a run that lost them must not exit 0.
            let named = Self.list(summary.givenUpObjects, of: summary.givenUp)
            let upload = summary.failure.map { "; upload incomplete (\($0)), the spool at \(where_) is kept" } ?? ""
            throw CLIError("\(summary.givenUp) object(s) given up: the ingest refused them for good: \(named)\(upload); "
                           + "\(summary.delivered) delivered, \(summary.retries) retries")
        }
        if stop?.isRequested == true, summary.failure == nil, !summary.complete {
            FileHandle.standardError.write(Data(("interrupted: \(summary.delivered) objects uploaded; the rest stays in the spool "
                + "at \(where_) for `pushav upload` or the next run\n").utf8))
            return
        }
        guard summary.failure == nil, summary.complete else {
            throw CLIError("upload incomplete (\(summary.failure ?? "objects left")); \(summary.delivered) delivered, "
                           + "\(summary.retries) retries; the spool at \(where_) is kept and is replayed by the next run")
        }
        FileHandle.standardError.write(Data("uploaded \(summary.delivered) objects (\(summary.retries) retries)\n".utf8))
    }
}
