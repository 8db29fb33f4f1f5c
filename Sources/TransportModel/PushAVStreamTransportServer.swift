import Domain
import Foundation

/// The server side of the Push AV Stream Transport cluster on one endpoint: the six commands, the two attributes,
/// the events, expiry, and the hooks the recorder and uploader use.
///
/// Every command names the caller's fabric; connections of other fabrics are invisible to it (NOT_FOUND).
/// Commands validate in the reference server's order and throw `TransportCommandError` carrying the status the
/// controller receives. State changes are written through `TransportPersistence` before they take effect, so a
/// failed write leaves the server unchanged and answers FAILURE.
///
/// Desired state, not recordings: the server holds what controllers asked for (connections, their status and
/// options, privacy, expiry, registries) and publishes every change on ``changes()``; each camera reconciles its
/// recordings to the latest state. Whether and which session a connection records is decided by that connection's
/// recording state machine alone: the server never ends a recording itself. It learns Begin and End from the
/// recorder (`recordingStarted` / `recordingEnded`, which emit the events), numbers sessions, and remembers each
/// announced recording until its End only to owe that End across a crash (`endRecordingsInterruptedByTheLastStop`).
/// A Begin is refused only on desired state (the transport gone, Inactive, private, of another trigger type).
///
/// Events are numbered, logged and broadcast by ``EndpointEvents``, which the endpoint's other clusters share. The
/// node's other clusters are values it holds (`+Clusters.swift`, and a file per cluster's commands); the recorder's
/// Begin/End (`+Recordings.swift`) and expiry (`+Expiry.swift`) are extensions of their own.
public actor PushAVStreamTransportServer {
    public nonisolated let capabilities: TransportCapabilities
    /// Every change is committed to `persistence` (SQLite, fsync) inside the actor: it runs on a queue of its own.
    private nonisolated let executor = BlockingSerialExecutor(label: "pushav-cluster")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    let persistence: any TransportPersistence
    let clock: any TransportClock
    /// Answers whether a connection still has segments waiting to upload (→ BUSY). Set by the uploader.
    private var uploadsPending: @Sendable (UInt16) async -> Bool

    var connections: [UInt16: StoredConnection]
    var registries: TransportRegistries
    var lastConnectionID: UInt16?
    var sessionNumbers: [UInt16: SessionNumber]
    /// The running recording of each connection, exactly as persisted until its End (its fabric is the one at Begin:
    /// the End keeps it even after the connection is deallocated).
    var recordings: [UInt16: OpenRecording] = [:]
    /// Recordings the previous process began and did not end (see ``endRecordingsInterruptedByTheLastStop()``).
    var interruptedRecordings: [UInt16: OpenRecording]
    /// Ends whose record failed (an I/O error), held back: an End goes out only once the store says the recording is
    /// over. Sent at once, a restart before the record was written sent it again — two Ends for one Begin (seed 140
    /// of the 40-seed chaos run). Written again every second by the expiry timer and at shutdown, and sent then; a
    /// stop before that leaves the record open, and the next start sends the End — once. Bounded: one per connection.
    var unsavedEnds: [UInt16: (event: CameraEvent, fabric: FabricIndex)] = [:]
    var changeBroadcast = Broadcast<TransportChange>()
    /// The endpoint's event numbering, log and broadcast, shared with the other clusters' events.
    var endpointEvents: EndpointEvents
    /// `persistence` is also the event log (one object, as `pushav serve` has it): a Begin's event is then written in
    /// the Begin's own commit (``TransportPersistence/saveBegin(sessionNumber:openRecording:connectionID:event:)``).
    let persistenceLogsEvents: Bool

    /// How many event numbers one reservation write covers. A restart skips what is left of the block.
    public static let eventNumberReservationBlock: UInt64 = EndpointEvents.reservationBlock

    /// Restores the state `persistence` holds and the event numbering `eventLog` reserved; throws their error when
    /// they cannot be read. `reportEventLogFailure` hears every failed event-log write (the event still goes out).
    public init(
        capabilities: TransportCapabilities = TransportCapabilities(),
        persistence: any TransportPersistence = VolatileTransportPersistence(),
        clock: any TransportClock = SystemTransportClock(),
        uploadsPending: @escaping @Sendable (UInt16) async -> Bool = { _ in false },
        eventLog: any TransportEventLog = VolatileTransportEventLog(),
        reportEventLogFailure: @escaping @Sendable (any Error) -> Void = { _ in }
    ) throws {
        let state = try persistence.load()
        endpointEvents = try EndpointEvents(log: eventLog, reportFailure: reportEventLogFailure)
        self.capabilities = capabilities
        self.persistence = persistence
        persistenceLogsEvents = (persistence as AnyObject) === (eventLog as AnyObject)
        self.clock = clock
        self.uploadsPending = uploadsPending
        self.connections = Dictionary(state.connections.map { ($0.connectionID, $0) }, uniquingKeysWith: { _, last in last })
        self.registries = state.registries
        self.lastConnectionID = state.lastConnectionID
        self.sessionNumbers = state.sessionNumbers
        self.interruptedRecordings = state.openRecordings
    }

    /// Installs the uploader's answer to "does this connection still have segments waiting to upload?".
    public func setUploadsPendingQuery(_ query: @escaping @Sendable (UInt16) async -> Bool) {
        uploadsPending = query
    }

    // MARK: - Attributes

    /// The SupportedFormats attribute.
    public nonisolated var supportedFormats: [SupportedFormatStruct] { capabilities.supportedFormats }

    /// The CurrentConnections attribute as `fabric` reads it, ordered by connection ID. A read over a transport
    /// without large-message support passes `includeTransportOptions: false`.
    public func currentConnections(fabric: FabricIndex, includeTransportOptions: Bool = true) -> [TransportConfigurationStruct] {
        removeExpiredConnectionsRetryingLater()
        return connections(of: fabric).map { connection in
            var configuration = connection.configuration
            if !includeTransportOptions { configuration.transportOptions = nil }
            return configuration
        }
    }

    // MARK: - Commands

    /// AllocatePushTransport: validates, stores a new Inactive transport, and returns its configuration.
    public func allocatePushTransport(
        _ transportOptions: TransportOptionsStruct, fabric: FabricIndex
    ) throws(TransportCommandError) -> TransportConfigurationStruct {
        removeExpiredConnectionsRetryingLater()
        try transportOptions.validateShape(features: capabilities.features)
        let options = try resolveAgainstRegistries(transportOptions, fabric: fabric, replacing: nil)
        guard let connectionID = nextConnectionID(after: lastConnectionID, isInUse: { connections[$0] != nil }) else {
            throw .im(.resourceExhausted, "connectionID: all 65534 connection IDs are in use")
        }
        try checkRecorderSupport(options)
        let connection = StoredConnection(
            connectionID: connectionID, fabricIndex: fabric, transportStatus: .inactive, transportOptions: options,
            expiryDeadline: transportOptions.expiryTime.map { clock.now().addingTimeInterval(TimeInterval($0)) })
        try write { try persistence.save(connections: [connection], lastConnectionID: connectionID) }
        connections[connectionID] = connection
        lastConnectionID = connectionID
        publish(.allocated(connection))
        return connection.configuration
    }

    /// DeallocatePushTransport: removes the transport, ending its recording if one runs.
    public func deallocatePushTransport(connectionID: UInt16, fabric: FabricIndex) async throws(TransportCommandError) {
        removeExpiredConnectionsRetryingLater()
        _ = try connection(connectionID, within: fabric)
        try await refuseIfUploadsPending(connectionID)
        _ = try connection(connectionID, within: fabric)  // it may have gone while the uploader answered
        try remove([connectionID], reason: .command)
    }

    /// ModifyPushTransport: replaces the stored options.
    ///
    /// Fields the trigger or container type requires but the request leaves out (`motionZones`,
    /// `motionSensitivity`, `motionTimeControl`, `maxPreRollLen`, `cmafContainerOptions`) are taken from the stored
    /// configuration before validation, as Google Home's partial modify needs; null stream IDs, or no stream fields
    /// at all, keep the stored stream selection. ExpiryTime present restarts the TTL from now; absent keeps the
    /// stored TTL and deadline. A running recording is cut when anything but ExpiryTime changes.
    public func modifyPushTransport(
        connectionID: UInt16, transportOptions request: TransportOptionsStruct, fabric: FabricIndex
    ) async throws(TransportCommandError) {
        removeExpiredConnectionsRetryingLater()
        let features = capabilities.features
        // The reference validates before looking the connection up; merging needs the stored options, so look up
        // quietly first and report NOT_FOUND only after the shape checks, keeping the reference's status order.
        let stored = try? connection(connectionID, within: fabric)
        try (stored.map { request.filledForModify(from: $0.transportOptions, features: features) } ?? request)
            .validateShape(features: features)
        guard stored != nil else { throw notFound(connectionID) }
        try await refuseIfUploadsPending(connectionID)

        var updated = try connection(connectionID, within: fabric)
        let merged = request.filledForModify(from: updated.transportOptions, features: features)
        try merged.validateShape(features: features)
        var options = try resolveAgainstRegistries(merged, fabric: fabric, replacing: connectionID)
        try checkRecorderSupport(options)
        if let ttl = request.expiryTime {
            updated.expiryDeadline = clock.now().addingTimeInterval(TimeInterval(ttl))
        } else {
            options.expiryTime = updated.transportOptions.expiryTime
        }
        updated.transportOptions = options
        try write { try persistence.save(connections: [updated], lastConnectionID: lastConnectionID) }
        connections[connectionID] = updated
        publish(.modified(updated))
    }

    /// SetTransportStatus: `connectionID` nil means every connection of the caller's fabric.
    public func setTransportStatus(
        connectionID: UInt16?, transportStatus: TransportStatusEnum, fabric: FabricIndex
    ) throws(TransportCommandError) {
        removeExpiredConnectionsRetryingLater()
        guard transportStatus.isKnown else {
            throw .im(.constraintError, "transportStatus: unknown value \(transportStatus.rawValue)")
        }
        let targets: [StoredConnection]
        if let connectionID {
            targets = [try connection(connectionID, within: fabric)]
        } else {
            targets = connections(of: fabric)
            guard !targets.isEmpty else { throw .im(.notFound, "connectionID: null, and this fabric has no connections") }
        }
        if transportStatus == .active && registries.streams.privacy.anyOn {
            throw .im(.invalidInState, "transportStatus: cannot go Active while a privacy mode is on")
        }
        let changed = targets.filter { $0.transportStatus != transportStatus }.map { connection in
            var connection = connection
            connection.transportStatus = transportStatus
            return connection
        }
        guard !changed.isEmpty else { return }
        try write { try persistence.save(connections: changed, lastConnectionID: lastConnectionID) }
        for connection in changed {
            connections[connection.connectionID] = connection
            publish(.statusChanged(connectionID: connection.connectionID, transportStatus))
        }
    }

    /// ManuallyTriggerTransport: asks the recorder (through `.manuallyTriggered`) to start a clip, or to count the
    /// trigger as motion if one is running. The recorder's `recordingStarted(trigger: .command(reason))` then
    /// emits the Begin with TriggerType Command and this activation reason.
    public func manuallyTriggerTransport(
        connectionID: UInt16, activationReason: TriggerActivationReasonEnum,
        timeControl: TransportMotionTriggerTimeControlStruct? = nil, userDefined: Data? = nil, fabric: FabricIndex
    ) async throws(TransportCommandError) {
        removeExpiredConnectionsRetryingLater()
        guard activationReason.isKnown else {
            throw .im(.constraintError, "activationReason: unknown value \(activationReason.rawValue)")
        }
        try timeControl?.validateShape(field: "timeControl")
        if let userDefined, userDefined.count > 256 {
            throw .im(.constraintError, "userDefined: at most 256 bytes")
        }
        try refuseIfPrivate(try connection(connectionID, within: fabric))
        try await refuseIfUploadsPending(connectionID)
        let connection = try connection(connectionID, within: fabric)
        try refuseIfPrivate(connection)
        guard connection.transportStatus == .active else {
            throw .cluster(.invalidTransportStatus, "connectionID: transport \(connectionID) is Inactive")
        }
        let configured = connection.transportOptions.triggerOptions
        let effectiveTimeControl: TransportMotionTriggerTimeControlStruct
        switch configured.triggerType {
        case .continuous, .unknown:
            throw .cluster(.invalidTriggerType, "connectionID: transport \(connectionID) records continuously")
        case .command:
            guard let timeControl else {
                throw .im(.dynamicConstraintError, "timeControl: required for a Command-triggered transport")
            }
            effectiveTimeControl = timeControl
        case .motion:
            guard let chosen = timeControl ?? configured.motionTimeControl else {
                throw .im(.dynamicConstraintError, "timeControl: required, the transport has no motionTimeControl")
            }
            effectiveTimeControl = chosen
        }
        publish(.manuallyTriggered(ManualTrigger(
            connectionID: connectionID, activationReason: activationReason, timeControl: effectiveTimeControl,
            userDefined: userDefined)))
    }

    /// FindTransport: `connectionID` nil means every connection of the caller's fabric (NOT_FOUND when none).
    public func findTransport(connectionID: UInt16?, fabric: FabricIndex) throws(TransportCommandError) -> [TransportConfigurationStruct] {
        removeExpiredConnectionsRetryingLater()
        if let connectionID {
            return [try connection(connectionID, within: fabric).configuration]
        }
        let found = connections(of: fabric)
        guard !found.isEmpty else { throw .im(.notFound, "connectionID: null, and this fabric has no connections") }
        return found.map(\.configuration)
    }

    /// UpdateMotionZoneOptions (provisional, after 1.5.1; TC-PAVST-2.15): replaces a Motion transport's zones and,
    /// without PERZONESENS, its sensitivity. `motionZones` nil (the field left out, as step 12 of the test sends
    /// only a sensitivity) keeps the stored zones. Its wire ID is not yet known. The model cuts nothing; the change
    /// goes out as `.modified`, and `pushav serve` re-attaches the connection with its new filter (which ends a
    /// running recording, as a Modify does).
    public func updateMotionZoneOptions(
        connectionID: UInt16, motionZones: Nullable<[TransportZoneOptionsStruct]>?,
        motionSensitivity: Nullable<UInt8>? = nil, fabric: FabricIndex
    ) throws(TransportCommandError) {
        removeExpiredConnectionsRetryingLater()
        var connection = try connection(connectionID, within: fabric)
        var trigger = connection.transportOptions.triggerOptions
        guard trigger.triggerType == .motion else {
            throw .cluster(.invalidTriggerType, "connectionID: transport \(connectionID) is not motion-triggered")
        }
        if let motionZones { trigger.motionZones = motionZones }
        if capabilities.features.contains(.perZoneSensitivity) {
            if motionSensitivity != nil {
                throw .im(.invalidCommand, "motionSensitivity: not allowed with per-zone sensitivity")
            }
        } else if let motionSensitivity {
            trigger.motionSensitivity = motionSensitivity
        }
        try trigger.validateShape(features: capabilities.features)
        if let zones = motionZones?.value {
            try AllocationChecks(capabilities: capabilities, registries: registries, otherConnections: [])
                .checkZones(zones)
        }
        connection.transportOptions.triggerOptions = trigger
        try write { try persistence.save(connections: [connection], lastConnectionID: lastConnectionID) }
        connections[connectionID] = connection
        publish(.modified(connection))
    }

    /// Counts the changes published so far: a camera applying an older state than one it applied already skips it.
    public private(set) var version: UInt64 = 0

    // MARK: - Internals

    /// Sends a change to the cameras under the next version.
    private func publish(_ change: TransportChange) {
        version += 1
        changeBroadcast.send(change)
    }

    private func resolveAgainstRegistries(
        _ request: TransportOptionsStruct, fabric: FabricIndex, replacing: UInt16?
    ) throws(TransportCommandError) -> TransportOptionsStruct {
        let others = connections.values.filter { $0.connectionID != replacing }
        return try AllocationChecks(capabilities: capabilities, registries: registries, otherConnections: others)
            .resolve(request, fabric: fabric)
    }

    private func checkRecorderSupport(_ options: TransportOptionsStruct) throws(TransportCommandError) {
        try AllocationChecks(capabilities: capabilities, registries: registries, otherConnections: [])
            .checkRecorderSupport(options)
    }

    func connections(of fabric: FabricIndex) -> [StoredConnection] {
        connections.values.filter { $0.fabricIndex == fabric }.sorted { $0.connectionID < $1.connectionID }
    }

    /// Looks a connection up as `fabric` sees it: another fabric's connection is indistinguishable from none.
    private func connection(_ connectionID: UInt16, within fabric: FabricIndex) throws(TransportCommandError) -> StoredConnection {
        guard connectionID <= 65534 else { throw .im(.constraintError, "connectionID: must be 0…65534") }
        guard let connection = connections[connectionID], connection.fabricIndex == fabric else {
            throw notFound(connectionID)
        }
        return connection
    }

    func notFound(_ connectionID: UInt16) -> TransportCommandError {
        .im(.notFound, "connectionID: no transport \(connectionID) in this fabric")
    }

    private func refuseIfUploadsPending(_ connectionID: UInt16) async throws(TransportCommandError) {
        if await uploadsPending(connectionID) {
            throw .im(.busy, "connectionID: transport \(connectionID) still has segments waiting to upload")
        }
    }

    func refuseIfPrivate(_ connection: StoredConnection) throws(TransportCommandError) {
        if registries.streams.privacy.forbids(connection.transportOptions.streamUsage) {
            throw .im(.invalidInState, "connectionID: a privacy mode forbids \(connection.transportOptions.streamUsage) streams")
        }
    }

    /// Runs a persistence write, mapping its failure to FAILURE so callers see a cluster answer.
    func write(_ body: () throws -> Void) throws(TransportCommandError) {
        do { try body() } catch { throw .im(.failure, "storage: \(error)") }
    }

    /// Runs one command of another cluster on a copy of the registries; the copy replaces them (and the cameras
    /// hear of it) only once it is stored. A command that throws, or changes nothing, writes nothing.
    func updateRegistries<Result>(
        _ change: (inout TransportRegistries) throws(TransportCommandError) -> Result
    ) throws(TransportCommandError) -> Result {
        var updated = registries
        let result = try change(&updated)
        let changed = updated.sections(differingFrom: registries)
        guard !changed.isEmpty else { return result }
        try write { try persistence.save(registries: updated, changed: changed) }
        registries = updated
        publish(.registriesChanged)
        return result
    }

    func remove(_ connectionIDs: [UInt16], reason: DeallocationReason) throws(TransportCommandError) {
        try write { try persistence.deleteConnections(connectionIDs) }
        for connectionID in connectionIDs {
            connections[connectionID] = nil
            publish(.deallocated(connectionID: connectionID, reason: reason))
        }
    }

    /// Numbers, logs, then broadcasts one event of this endpoint (see ``EndpointEvents``).
    func emit(_ event: CameraEvent, fabric: FabricIndex) {
        endpointEvents.emit(event, fabric: fabric, at: clock.now())
    }
}

/// The next connection ID after `last`: last + 1 (the first is 1), wrapping 65534 → 1 and skipping IDs in use;
/// nil when every ID is taken. 0 is never issued: certification tests treat it as "no connection".
public func nextConnectionID(after last: UInt16?, isInUse: (UInt16) -> Bool) -> UInt16? {
    var candidate = min(last ?? 0, 65534)
    for _ in 0..<65534 {
        candidate = candidate == 65534 ? 1 : candidate + 1
        if !isInUse(candidate) { return candidate }
    }
    return nil
}

extension TransportOptionsStruct {
    /// These options with ExpiryTime cleared: what a recording depends on.
    public var ignoringExpiry: TransportOptionsStruct {
        var copy = self
        copy.expiryTime = nil
        return copy
    }
}
