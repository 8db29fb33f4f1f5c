import Foundation

/// Runs a session's file output — segment and header files, the manifest, the playable clip's muxer — on a thread
/// of its own, in the order it was queued, so the media thread demuxes and muxes the next packets while the kernel
/// copies the previous ones into the page cache. On a remux that output is about a third of the work, and the
/// second core was idle.
///
/// Work handed over belongs to the output thread from then on: the caller must not touch what a work item captures.
///
/// Bounded by bytes: ``enqueue(bytes:_:)`` blocks the caller while more than ``byteLimit`` bytes wait, so a disk slower
/// than the input paces the recording instead of growing memory. The first failure is kept: later work is skipped,
/// and the next ``enqueue(bytes:_:)`` or ``drain()`` throws it, so a failed write ends the recording as it did when
/// writes were synchronous (one packet later at most).
final class FileOutputQueue: @unchecked Sendable {
    let byteLimit: Int
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var items: [(bytes: Int, work: () throws -> Void)] = []
    private var queuedBytes = 0
    private var running = false
    private var failure: (any Error)?
    private var closed = false
    /// The output thread waits for work (an enqueue must wake it).
    private var threadIdle = false
    /// Callers waiting in ``enqueue(bytes:_:)`` for room or in ``drain()`` (tests watch it).
    var waitingCallers: Int { condition.withLock { waiting } }
    private var waiting = 0

    init(name: String, byteLimit: Int = 4 << 20) {
        self.byteLimit = byteLimit
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Queues `work`, which holds about `bytes` bytes until it has run. Throws the failure of earlier work.
    func enqueue(bytes: Int, _ work: @escaping () throws -> Void) throws {
        try condition.withLock {
            // One item larger than the bound still goes through, alone.
            while failure == nil, queuedBytes > 0, queuedBytes + bytes > byteLimit {
                waiting += 1
                condition.wait()
                waiting -= 1
            }
            if let failure { throw failure }
            precondition(!closed, "enqueue after close")
            items.append((bytes, work))
            queuedBytes += bytes
            // Wake the output thread only when it sleeps on an empty queue: a signal per packet costs a system call.
            if threadIdle { condition.broadcast() }
        }
    }

    /// Waits until everything queued has run; throws the first failure.
    func drain() throws {
        try condition.withLock {
            while failure == nil, !items.isEmpty || running {
                waiting += 1
                condition.wait()
                waiting -= 1
            }
            if let failure { throw failure }
        }
    }

    /// Lets the thread end once the queue is empty (what is queued still runs).
    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    private func run() {
        while true {
            // Everything queued so far, taken at once.
            let batch: [(bytes: Int, work: () throws -> Void)] = condition.withLock {
                while items.isEmpty && !closed {
                    threadIdle = true
                    condition.wait()
                    threadIdle = false
                }
                running = !items.isEmpty
                defer { items.removeAll(keepingCapacity: true) }
                return items
            }
            guard !batch.isEmpty else { return }
            var failed = condition.withLock { failure != nil }
            for item in batch {
                var error: (any Error)?
                if !failed {
                    do { try item.work() } catch let thrown { error = thrown }
                }
                condition.withLock {
                    if failure == nil, let error { failure = error }
                    failed = failure != nil
                    queuedBytes -= item.bytes
                    if waiting > 0 { condition.broadcast() }
                }
            }
            condition.withLock {
                running = false
                if waiting > 0 { condition.broadcast() }
            }
        }
    }
}
