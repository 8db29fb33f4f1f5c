import Domain
import Foundation
import Logging
import MediaIO
import Timeline

/// A second, low-resolution stream of the same camera that motion is analysed on while the main stream is only copied
/// (an IP camera's substream, e.g. 640×360): the decode that analysis needs then costs a fraction of the main
/// stream's. Zones stay in the main video's pixel coordinates; the substream is assumed to show the same field of view.
public struct AnalysisSource: Sendable, Equatable {
    public var url: String
    /// Demuxer/protocol options for this stream (e.g. RTSP's `timeout`).
    public var inputOptions: [String: String] = [:]
    /// Both streams are files read as fast as they decode: the recording waits for the analysis to reach each main
    /// picture's time, so a run gives the same clips every time. Otherwise (a live camera, a paced file) pictures are
    /// applied as they arrive and the recording never waits for them.
    public var synchronous: Bool

    public init(url: String, inputOptions: [String: String] = [:], synchronous: Bool) {
        self.url = url
        self.inputOptions = inputOptions
        self.synchronous = synchronous
    }

    /// The analysis stream for recording `input`: synchronous exactly when both are local files read unpaced.
    public init(url: String, recording input: String, pacedRealTime: Bool, inputOptions: [String: String] = [:]) {
        self.init(url: url, inputOptions: inputOptions,
                  synchronous: !pacedRealTime && Self.isLocalFile(url) && Self.isLocalFile(input))
    }

    /// A path or a `file:` URL (a network stream has a scheme such as `rtsp://`).
    public static func isLocalFile(_ url: String) -> Bool { !url.contains("://") || url.hasPrefix("file:") }
}

/// Reads and decodes an ``AnalysisSource`` on its own thread and queues its pictures as small luma planes.
///
/// The two streams are put on one timeline by their first pictures: a picture `d` seconds after the analysis stream's
/// first one stands for main-stream time `origin + d`. On a live camera both streams are opened together, so the
/// error is the difference in their start (typically below a frame); a substream that starts later is simply applied
/// as it arrives. The queue holds ``capacity`` pictures: in synchronous mode the reader waits for room, otherwise the
/// oldest picture is dropped and counted (the recording's reader stalled — the main stream stopped sending).
final class AnalysisStreamReader: @unchecked Sendable {
    struct Picture {
        /// Seconds since the analysis stream's first picture.
        let offset: MediaTime
        let isKeyframe: Bool
        let luma: LumaImage
    }

    enum Outcome: Equatable {
        case running, ended
        case failed(String)
    }

    static let capacity = 64

    let source: AnalysisSource
    // Used by the reader thread only (after init).
    private let input: MediaInput
    private let sampler: LumaSampler
    private let pace: Bool
    private let keyframesOnly: Bool
    private let interrupt: InterruptFlag
    private let logger: Logger
    private let done = DispatchSemaphore(value: 0)
    /// Where each decoded picture is kept for thumbnails and snapshots (the recording's ``HeldPicture``).
    private let held: HeldPicture?

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [Picture] = []
    private var newest: MediaTime?
    private var outcome = Outcome.running
    private var stopping = false
    private var droppedCount = 0
    private var decodedCount = 0

    /// Opens the stream (a clear error if it cannot be read or has no video) and starts reading it.
    /// `keeping`: each picture is also kept there, whole (the substream's picture is the thumbnail).
    init(source: AnalysisSource, width: Int, height: Int, keyframesOnly: Bool, paceRealTime: Bool,
         interrupt: InterruptFlag, logger: Logger, keeping held: HeldPicture? = nil) throws {
        self.source = source
        self.held = held
        self.interrupt = interrupt
        self.logger = logger
        self.keyframesOnly = keyframesOnly
        pace = paceRealTime
        do {
            input = try MediaInput(url: source.url, interrupt: interrupt, options: source.inputOptions)
            guard input.video != nil else { throw MediaError("it has no video stream (\(input.formatName))") }
            sampler = try LumaSampler(input: input, width: width, height: height, keyframesOnly: keyframesOnly)
        } catch {
            throw MediaError("analysis source \(source.url): \(error)")
        }
        let thread = Thread { [self] in
            read()
            done.signal()
        }
        thread.name = "pushav-analysis"
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Pictures analysed so far, and those dropped at the queue's bound.
    var counts: (decoded: Int, dropped: Int) {
        condition.withLock { (decodedCount, droppedCount) }
    }

    /// Removes and returns the queued pictures up to `offset` (seconds since the main stream's first picture). With
    /// `wait` (synchronous mode) it first waits until the reader has passed `offset` or stopped.
    func take(upTo offset: MediaTime, wait: Bool) -> (pictures: [Picture], outcome: Outcome) {
        condition.withLock {
            var taken: [Picture] = []
            while true {
                let ready = queue.prefix { $0.offset <= offset }
                if !ready.isEmpty {
                    taken += ready
                    queue.removeFirst(ready.count)
                    condition.broadcast()  // room for a reader waiting on a full queue
                }
                guard wait, outcome == .running, newest.map({ $0 <= offset }) ?? true else { break }
                condition.wait()
            }
            return (taken, outcome)
        }
    }

    /// Stops the reader and waits for its thread to finish.
    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
        interrupt.set()
        done.wait()
    }

    private var isStopping: Bool { condition.withLock { stopping } }

    private func read() {
        var result = Outcome.ended
        do {
            let packet = try Packet()
            let videoIndex = input.video!.index
            var first: MediaTime?
            var pacer = RealTimePacer()
            func queued(_ picture: DecodedPicture) throws {
                if first == nil { first = picture.time }
                guard picture.time >= first! else { return }  // before the first: nothing to map it onto
                // A picture that cannot be kept (out of memory) only costs a thumbnail: analysis goes on without it.
                if let held { try? picture.keep(in: held) }
                let item = Picture(offset: picture.time - first!, isKeyframe: picture.isKeyframe, luma: try picture.luma())
                condition.withLock {
                    while source.synchronous, queue.count >= Self.capacity, !stopping { condition.wait() }
                    if queue.count >= Self.capacity {
                        queue.removeFirst()
                        droppedCount += 1
                        if droppedCount == 1 {
                            logger.warning("analysis pictures dropped: the recording did not take them (main stream stalled?)",
                                           metadata: ["analysisSource": "\(source.url)", "queue": "\(Self.capacity)"])
                        }
                    }
                    queue.append(item)
                    newest = max(newest ?? item.offset, item.offset)
                    decodedCount += 1
                    condition.broadcast()
                }
            }
            while !isStopping, try input.read(into: packet) {
                guard packet.streamIndex == videoIndex else { continue }
                if keyframesOnly && !packet.isKeyframe { continue }
                if pace, let pts = packet.pts ?? packet.dts, let due = pacer.due(input.video!.timeBase.time(pts)) {
                    while ContinuousClock.now < due, !isStopping {
                        Thread.sleep(forTimeInterval: min(0.02, max(0, (due - ContinuousClock.now) / .seconds(1))))
                    }
                }
                try sampler.decode(packet, queued)
            }
            if !isStopping { try sampler.decode(nil, queued) }
        } catch {
            if !isStopping { result = .failed("\(error)") }
        }
        condition.withLock {
            outcome = result
            condition.broadcast()
        }
    }
}

/// Reads no faster than real time (a file standing in for a camera), as `ffmpeg -re` does: packet times against the
/// wall clock from the first packet.
struct RealTimePacer {
    private var start: (media: Double, wall: ContinuousClock.Instant)?

    /// When the packet at `time` is due, or nil to read it at once: the first packet, a jump back, a jump of more than
    /// an hour, or a gap of more than 5 s (a camera must not stall for a hole in its timestamps) start again from it.
    mutating func due(_ time: MediaTime) -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        guard let start, time.seconds >= start.media, time.seconds - start.media < 3600 else {
            self.start = (time.seconds, now)
            return nil
        }
        let due = start.wall + .seconds(time.seconds - start.media)
        if due - now > .seconds(5) {
            self.start = (time.seconds, now)
            return nil
        }
        return due
    }
}
