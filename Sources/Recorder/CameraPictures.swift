import Foundation
import Logging
import MediaIO
import Synchronization

/// A JPEG of a camera's latest analysed picture, and when it was made.
public struct Snapshot: Sendable, Hashable {
    public var picture: JPEGPicture
    public var taken: Date

    public init(picture: JPEGPicture, taken: Date) {
        self.picture = picture
        self.taken = taken
    }
}

/// Snapshots of what a live recording analyses, asked for from any task and made on the media thread (`pushav
/// serve`'s `GET …/snapshot.jpg`). Lives as long as the camera, across the recording's passes.
///
/// Why on request: a JPEG costs a scale and an encode (a few milliseconds on 1080p), which a camera nobody watches
/// should not pay for every picture. A request waits for the next analysed picture (one frame interval on a live
/// source), or takes the latest snapshot if it is recent enough; at most ``maxWaiting`` requests wait (more get the
/// latest snapshot at once), each at most its timeout.
public final class SnapshotRequests: Sendable {
    /// Requests waiting at once; beyond it a request is answered with the latest snapshot (possibly none).
    public static let maxWaiting = 32

    private struct State {
        var latest: Snapshot?
        var waiting: [UInt64: CheckedContinuation<Snapshot?, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Read by the media thread at every packet: a lock per packet only while someone waits.
    private let wanted = Atomic<Bool>(false)

    public init() {}

    /// The latest snapshot, however old; nil before the first.
    public var latest: Snapshot? { state.withLock { $0.latest } }

    /// The latest snapshot when it is at most `maxAge` old, else the next one made; after `timeout` without one
    /// (the source stalled) the latest, however old, or nil.
    public func snapshot(maxAge: TimeInterval = 1, timeout: Duration = .seconds(3)) async -> Snapshot? {
        if let latest, -latest.taken.timeIntervalSinceNow <= maxAge { return latest }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Snapshot?, Never>) in
            let id = state.withLock { state -> UInt64? in
                guard state.waiting.count < Self.maxWaiting else { return nil }
                state.nextID += 1
                state.waiting[state.nextID] = continuation
                return state.nextID
            }
            guard let id else {
                continuation.resume(returning: latest)
                return
            }
            wanted.store(true, ordering: .relaxed)
            Task {
                try? await Task.sleep(for: timeout)
                self.expire(id)
            }
        }
    }

    private func expire(_ id: UInt64) {
        let (continuation, latest) = state.withLock { state in
            let continuation = state.waiting.removeValue(forKey: id)
            if state.waiting.isEmpty { wanted.store(false, ordering: .relaxed) }
            return (continuation, state.latest)
        }
        continuation?.resume(returning: latest)
    }

    /// Whether a request waits for a picture (the media thread asks at every packet).
    var isWanted: Bool { wanted.load(ordering: .relaxed) }

    /// From the media thread: the snapshot the waiting requests get.
    func deliver(_ picture: JPEGPicture) {
        let snapshot = Snapshot(picture: picture, taken: Date())
        let waiting = state.withLock { state in
            state.latest = snapshot
            wanted.store(false, ordering: .relaxed)
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume(returning: snapshot) }
    }
}

/// The media thread's side of a recording's pictures: the latest analysed picture (by reference, no copy) and the
/// JPEG encoders for trigger thumbnails (at most ``thumbnailWidth`` wide) and snapshots (``snapshotWidth``).
///
/// A failure to make a JPEG never fails the recording: it is logged (once as a warning, then at debug level) and the
/// clip goes on without its thumbnail.
public final class TriggerPictures {
    /// Thumbnails are what the status page lists; 320 px is sharp at its 2× pixel density and about 10 KB.
    public static let thumbnailWidth = 320
    /// Snapshots are drawn larger, with the zones over them.
    static let snapshotWidth = 640

    /// The latest analysed picture (the analysis stream's when motion is analysed on a substream).
    let held: HeldPicture
    private let thumbnails: JPEGEncoder
    private let snapshots: JPEGEncoder
    private let requests: SnapshotRequests
    private let logger: Logger
    private var warned = false

    init(requests: SnapshotRequests, logger: Logger) throws {
        held = try HeldPicture()
        thumbnails = try JPEGEncoder(maxWidth: Self.thumbnailWidth)
        snapshots = try JPEGEncoder(maxWidth: Self.snapshotWidth)
        self.requests = requests
        self.logger = logger
    }

    /// Keeps `picture` as the latest (the previous one is released).
    func keep(_ picture: DecodedPicture) {
        do { try picture.keep(in: held) } catch { failed("keeping the analysed picture", error) }
    }

    /// A thumbnail of the latest analysed picture: at a trigger, the picture that triggered. nil before the first
    /// picture or when encoding failed.
    func thumbnail() -> JPEGPicture? {
        do { return try thumbnails.encode(held) } catch {
            failed("a thumbnail", error)
            return nil
        }
    }

    /// Makes a snapshot when one is asked for (called between packets).
    func answerSnapshotRequests() {
        guard requests.isWanted else { return }
        do {
            if let picture = try snapshots.encode(held) { requests.deliver(picture) }
        } catch {
            failed("a snapshot", error)
        }
    }

    private func failed(_ what: String, _ error: any Error) {
        logger.log(level: warned ? .debug : .warning, "\(what) could not be made; recording goes on", metadata: ["error": "\(error)"])
        warned = true
    }
}
