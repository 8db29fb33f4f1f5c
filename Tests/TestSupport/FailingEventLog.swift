import Foundation
import Synchronization
import TransportModel

/// A volatile event log whose writes can be made to fail, as a full disk would make them.
public final class FailingEventLog: TransportEventLog {
    public struct DiskFull: Error, Equatable {
        public init() {}
    }

    public let inner: VolatileTransportEventLog
    private let failing = Mutex(false)

    public init(_ inner: VolatileTransportEventLog = VolatileTransportEventLog()) { self.inner = inner }

    /// While on, `append` and `reserveEventNumbers` throw ``DiskFull`` and change nothing.
    public func setFailing(_ on: Bool) { failing.withLock { $0 = on } }

    private func check() throws { if failing.withLock({ $0 }) { throw DiskFull() } }

    public func loadEventNumberReservation() throws -> UInt64 { try inner.loadEventNumberReservation() }

    public func reserveEventNumbers(below limit: UInt64) throws {
        try check()
        try inner.reserveEventNumbers(below: limit)
    }

    public func append(_ entry: LoggedTransportEvent) throws {
        try check()
        try inner.append(entry)
    }

    public func events(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent] {
        try inner.events(after: number, fabric: fabric, limit: limit)
    }
}

/// Errors handed to a callback, for tests that check what was reported.
public final class ErrorRecorder: Sendable {
    private let errors = Mutex<[String]>([])

    public init() {}

    public var report: @Sendable (any Error) -> Void { { [self] error in errors.withLock { $0.append("\(error)") } } }

    public var all: [String] { errors.withLock { $0 } }
}
