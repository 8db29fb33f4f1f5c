import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import Recorder

/// The session's output thread: order, the byte bound, and what a failure does.
@Suite struct FileOutputQueueTests {
    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [Int] = []
        func add(_ i: Int) { lock.withLock { items.append(i) } }
        var all: [Int] { lock.withLock { items } }
    }

    struct Refused: Error, Equatable { let item: Int }

    @Test func runsEverythingInTheOrderItWasQueued() throws {
        let queue = FileOutputQueue(name: "test-order")
        defer { queue.close() }
        let log = Log()
        for i in 0..<500 { try queue.enqueue(bytes: i % 7) { log.add(i) } }
        try queue.drain()
        #expect(log.all == Array(0..<500))
    }

    /// The first failure skips what follows and is thrown by the next enqueue and by drain.
    @Test func aFailureSkipsTheRestAndIsThrownToTheCaller() throws {
        let queue = FileOutputQueue(name: "test-failure")
        defer { queue.close() }
        let log = Log()
        // The first item holds the output thread until all ten are queued: otherwise item 3 may fail while the loop
        // is still queueing, and the next enqueue (rightly) throws its failure.
        let queued = DispatchSemaphore(value: 0)
        for i in 0..<10 {
            try queue.enqueue(bytes: 1) {
                if i == 0 { queued.wait() }
                if i == 3 { throw Refused(item: i) }
                log.add(i)
            }
        }
        queued.signal()
        #expect(throws: Refused(item: 3)) { try queue.drain() }
        #expect(log.all == [0, 1, 2])
        #expect(throws: Refused(item: 3)) { try queue.enqueue(bytes: 1) { log.add(99) } }
        #expect(log.all == [0, 1, 2])
    }

    /// Past the byte bound the caller waits until the output thread has written enough; an item larger than the
    /// bound still goes through on its own.
    @Test func theCallerWaitsAtTheByteBound() throws {
        let queue = FileOutputQueue(name: "test-bound", byteLimit: 10)
        defer { queue.close() }
        let gate = DispatchSemaphore(value: 0)
        let log = Log()
        try queue.enqueue(bytes: 8) {
            gate.wait()
            log.add(1)
        }
        let second = DispatchSemaphore(value: 0)
        Thread {
            try? queue.enqueue(bytes: 8) { log.add(2) }
            second.signal()
        }.start()
        // The second caller is held while the first item (8 of 10 bytes) is not written yet.
        while queue.waitingCallers == 0 { sched_yield() }
        #expect(log.all.isEmpty)
        gate.signal()
        second.wait()
        try queue.enqueue(bytes: 1000) { log.add(3) }
        try queue.drain()
        #expect(log.all == [1, 2, 3])
    }
}
