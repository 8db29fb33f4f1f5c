import Logging
import Synchronization

/// A log handler that keeps every message, for tests that check what the code under test logged.
public final class LogRecorder: LogHandler, @unchecked Sendable {  // metadata/logLevel are per-copy values; entries are locked
    private let entries = Mutex<[(message: String, fields: String)]>([])
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    public init() {}

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
        entries.withLock { $0.append(("\(event.message)", fields)) }
    }

    /// Every message, in order.
    public var all: [String] { entries.withLock { $0.map(\.message) } }
    /// Every message followed by its event's metadata as sorted `key=value` pairs.
    public var allWithMetadata: [String] { entries.withLock { $0.map { "\($0.message) \($0.fields)" } } }
}
