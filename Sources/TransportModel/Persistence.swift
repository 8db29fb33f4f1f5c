import Domain

import Foundation

/// An allocated connection as the server keeps it: the cluster's view plus the absolute expiry deadline.
public struct StoredConnection: Sendable, Hashable {
    public var connectionID: UInt16
    public var fabricIndex: FabricIndex
    public var transportStatus: TransportStatusEnum
    /// Normalised at allocation: stream lists filled in and the legacy stream IDs mirrored from them.
    public var transportOptions: TransportOptionsStruct
    /// When the ExpiryTime TTL runs out, as wall-clock time so it survives a restart; nil = never.
    public var expiryDeadline: Date?

    public init(
        connectionID: UInt16, fabricIndex: FabricIndex, transportStatus: TransportStatusEnum,
        transportOptions: TransportOptionsStruct, expiryDeadline: Date? = nil
    ) {
        self.connectionID = connectionID
        self.fabricIndex = fabricIndex
        self.transportStatus = transportStatus
        self.transportOptions = transportOptions
        self.expiryDeadline = expiryDeadline
    }

    /// The TransportConfigurationStruct controllers read.
    public var configuration: TransportConfigurationStruct {
        TransportConfigurationStruct(
            connectionID: connectionID, transportStatus: transportStatus, transportOptions: transportOptions,
            fabricIndex: fabricIndex)
    }
}

/// Everything the server restores at startup.
public struct PersistentTransportState: Sendable, Hashable {
    public var connections: [StoredConnection] = []
    public var registries: TransportRegistries = TransportRegistries()
    /// The last connection ID issued; allocation continues after it.
    public var lastConnectionID: UInt16?
    /// The last CMAF session number used per connection ID.
    public var sessionNumbers: [UInt16: SessionNumber] = [:]
    /// Recordings whose Begin went out and whose End did not, by connection ID: after a `kill -9` or a power loss,
    /// these ended with the process, and their End is still owed to the controller.
    public var openRecordings: [UInt16: OpenRecording] = [:]

    public init(
        connections: [StoredConnection] = [], registries: TransportRegistries = TransportRegistries(),
        lastConnectionID: UInt16? = nil, sessionNumbers: [UInt16: SessionNumber] = [:],
        openRecordings: [UInt16: OpenRecording] = [:]
    ) {
        self.connections = connections
        self.registries = registries
        self.lastConnectionID = lastConnectionID
        self.sessionNumbers = sessionNumbers
        self.openRecordings = openRecordings
    }
}

/// A recording between its PushTransportBegin and its PushTransportEnd: what its End needs.
public struct OpenRecording: Sendable, Hashable {
    public var sessionNumber: SessionNumber
    public var containerType: ContainerFormatEnum
    /// The connection's fabric at Begin (the End goes to it even if the connection is gone).
    public var fabricIndex: FabricIndex

    public init(sessionNumber: SessionNumber, containerType: ContainerFormatEnum, fabricIndex: FabricIndex) {
        self.sessionNumber = sessionNumber
        self.containerType = containerType
        self.fabricIndex = fabricIndex
    }
}

/// Where the server writes its state through. Every method is one atomic write; a throw means nothing changed.
///
/// The methods are synchronous on purpose: the server calls them inside its actor without suspending, so no other
/// command can interleave between a decision (a free connection ID, a session number) and its persistence.
public protocol TransportPersistence: Sendable {
    func load() throws -> PersistentTransportState
    /// Inserts or replaces connections and records the last issued connection ID, in one transaction.
    func save(connections: [StoredConnection], lastConnectionID: UInt16?) throws
    func deleteConnections(_ connectionIDs: [UInt16]) throws
    /// Stores the sections of `registries` that `changed` names (each cluster's own tables), atomically.
    func save(registries: TransportRegistries, changed: RegistrySections) throws
    /// Records that `connectionID`'s recording began (`recording`) or ended (nil), so a restart after a crash can send
    /// the End a Begin is owed.
    func save(openRecording recording: OpenRecording?, connectionID: UInt16) throws
    /// A Begin's two records (the session number handed out and the recording that now owes an End), in one commit:
    /// one fsync per Begin instead of two. `event`, when this persistence is also the server's event log, is the Begin's
    /// numbered event, logged in that same commit: the fsync covers it, and the log's page is not dirtied again right
    /// after the sync (a 4 KiB write less per recording, on flash).
    func saveBegin(sessionNumber: SessionNumber, openRecording recording: OpenRecording, connectionID: UInt16,
                   event: LoggedTransportEvent?) throws
}

extension TransportPersistence {
    /// Persistence that keeps nothing across a restart has nothing to owe after one.
    public func save(openRecording recording: OpenRecording?, connectionID: UInt16) throws {}
}

/// Keeps nothing: for tests and for a server whose state may die with the process.
public struct VolatileTransportPersistence: TransportPersistence {
    let initialState: PersistentTransportState

    public init(initialState: PersistentTransportState = PersistentTransportState()) {
        self.initialState = initialState
    }

    public func load() throws -> PersistentTransportState { initialState }
    public func save(connections: [StoredConnection], lastConnectionID: UInt16?) throws {}
    public func deleteConnections(_ connectionIDs: [UInt16]) throws {}
    public func save(registries: TransportRegistries, changed: RegistrySections) throws {}
    public func saveBegin(sessionNumber: SessionNumber, openRecording recording: OpenRecording, connectionID: UInt16,
                          event: LoggedTransportEvent?) throws {}
}

/// The time source for expiry deadlines. Wall-clock, because a deadline must mean the same after a reboot.
public protocol TransportClock: Sendable {
    func now() -> Date
    /// Suspends until `deadline`; throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Date) async throws
}

/// The system's wall clock.
public struct SystemTransportClock: TransportClock {
    public init() {}

    public func now() -> Date { Date() }

    public func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSinceNow
        if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
    }
}

/// Where TLS client private keys are kept: one owner-only store for the whole process, which the cameras' stores
/// refer to by a reference instead of holding a copy of each key (a camera store is read for much else — backups,
/// support bundles — and one copy per camera multiplies where a key can leak from). Synchronous, like
/// `TransportPersistence`, whose saves call it.
public protocol TLSPrivateKeyStore: Sendable {
    /// Keeps `key` (storing the same key twice keeps one copy) and returns the reference that finds it again.
    func reference(storing key: Data) throws -> String
    /// The key stored under `reference`, nil when there is none.
    func key(for reference: String) throws -> Data?
}
