import CFFmpeg
import Synchronization

/// A cancellation flag FFmpeg polls through `AVIOInterruptCB` while it blocks on network I/O.
///
/// Set from any thread (a task's cancellation handler, a signal); the FFmpeg thread sees blocking calls return
/// `AVERROR_EXIT`. Local files are not interruptible by FFmpeg, so readers also check ``isSet`` between packets.
public final class InterruptFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public func set() { flag.store(true, ordering: .releasing) }
    public var isSet: Bool { flag.load(ordering: .acquiring) }

    /// The callback record to store in `AVFormatContext.interrupt_callback`; valid while `self` is alive.
    var callback: AVIOInterruptCB {
        AVIOInterruptCB(
            callback: { opaque in
                guard let opaque else { return 0 }
                return Unmanaged<InterruptFlag>.fromOpaque(opaque).takeUnretainedValue().isSet ? 1 : 0
            },
            opaque: Unmanaged.passUnretained(self).toOpaque()
        )
    }
}
