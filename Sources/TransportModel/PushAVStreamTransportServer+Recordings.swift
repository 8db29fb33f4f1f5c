import Domain

// What the recorder tells the cluster: a recording began or ended. The connection's recording state machine decides
// whether and which session records; the server only checks the desired state, numbers the session, remembers it
// until its End (to owe that End across a crash) and emits the events.
extension PushAVStreamTransportServer {
    /// The recorder started a recording (a new CMAF session) on `connectionID`. Persists and returns its session
    /// number (per connection, starting at 1, never reused) and emits PushTransportBegin. Throws, and emits
    /// nothing, when the transport is gone, Inactive, blocked by privacy, or of a trigger type `trigger` does not
    /// fit; the recorder must then not record. The recorder's state machine begins a recording only after the
    /// previous one's End; should an earlier recording of the connection still be open here all the same, its End is
    /// sent first, so every Begin keeps exactly one End.
    public func recordingStarted(connectionID: UInt16, trigger: RecordingTrigger) throws(TransportCommandError) -> SessionNumber {
        removeExpiredConnectionsRetryingLater()
        guard let connection = connections[connectionID] else { throw notFound(connectionID) }
        guard connection.transportStatus == .active else {
            throw .cluster(.invalidTransportStatus, "connectionID: transport \(connectionID) is Inactive")
        }
        try refuseIfPrivate(connection)
        let options = connection.transportOptions
        let triggerType: TransportTriggerTypeEnum
        let activationReason: TriggerActivationReasonEnum?
        switch (trigger, options.triggerOptions.triggerType.type) {
        case (.motion, .motion), (.continuous, .continuous):
            (triggerType, activationReason) = (TransportTriggerTypeEnum(trigger.type), nil)
        case (.command(let reason), .command), (.command(let reason), .motion):
            (triggerType, activationReason) = (.command, reason)
        default:
            throw .cluster(.invalidTriggerType, "trigger: \(trigger) does not fit a \(options.triggerOptions.triggerType) transport")
        }
        let sessionNumber = sessionNumbers[connectionID]?.next ?? .first
        let containerType = options.containerOptions.containerType
        let recording = OpenRecording(sessionNumber: sessionNumber, containerType: containerType,
                                      fabricIndex: connection.fabricIndex)
        if let earlier = recordings[connectionID] { endRecording(connectionID, earlier) }
        // An End still held back must go out before this Begin, and only once its record is written: otherwise no
        // Begin (a fault forces a dropped clip, not a second End).
        if let held = unsavedEnds[connectionID] {
            try write { try persistence.save(openRecording: nil, connectionID: connectionID) }
            unsavedEnds[connectionID] = nil
            emit(held.event, fabric: held.fabric)
        }
        // Numbered after the earlier End, logged in the Begin's own commit where the store is also the log.
        let begin = endpointEvents.numbered(.pushTransportBegin(PushTransportBegin(
            connectionID: connectionID, triggerType: triggerType, activationReason: activationReason,
            containerType: containerType, cmafSessionNumber: containerType == .cmaf ? sessionNumber : nil)),
            fabric: connection.fabricIndex, at: clock.now())
        try write {
            try persistence.saveBegin(sessionNumber: sessionNumber, openRecording: recording, connectionID: connectionID,
                                      event: persistenceLogsEvents ? begin : nil)
        }
        sessionNumbers[connectionID] = sessionNumber
        recordings[connectionID] = recording
        endpointEvents.publish(begin, logged: persistenceLogsEvents)
        return sessionNumber
    }

    /// The recorder finished recording `sessionNumber` (the connection may have been deallocated meanwhile: the End
    /// goes to the fabric of its Begin). Emits PushTransportEnd and returns true, or returns false when that recording
    /// is not open (its End went out already).
    @discardableResult
    public func recordingEnded(connectionID: UInt16, sessionNumber: SessionNumber) -> Bool {
        guard let recording = recordings[connectionID], recording.sessionNumber == sessionNumber else { return false }
        endRecording(connectionID, recording)
        return true
    }

    /// Writes again the End records that failed (see ``unsavedEnds``) and sends each End once its record is written.
    public func saveUnsavedEnds() {
        endpointEvents.appendUnlogged()
        for connectionID in unsavedEnds.keys.sorted() {
            guard let held = unsavedEnds[connectionID] else { continue }
            do {
                try persistence.save(openRecording: nil, connectionID: connectionID)
            } catch {
                return  // the store still fails: the next tick tries again
            }
            unsavedEnds[connectionID] = nil
            emit(held.event, fabric: held.fabric)
        }
    }

    /// The session number of the recording running on `connectionID`, if any.
    public func runningSessionNumber(connectionID: UInt16) -> SessionNumber? { recordings[connectionID]?.sessionNumber }

    /// The session number `connectionID` used last (its session counter; persisted); nil before its first recording.
    public func lastSessionNumber(connectionID: UInt16) -> SessionNumber? { sessionNumbers[connectionID] }

    /// Every connection of every fabric, for the recorder and uploader (not fabric-filtered).
    public func allConnections() -> [StoredConnection] {
        removeExpiredConnectionsRetryingLater()
        return connections.values.sorted { $0.connectionID < $1.connectionID }
    }

    /// One connection of any fabric, for the recorder and uploader.
    public func storedConnection(_ connectionID: UInt16) -> StoredConnection? {
        removeExpiredConnectionsRetryingLater()
        return connections[connectionID]
    }

    /// The TLS endpoint (CA, client chain, key) the uploader uses for `connectionID`.
    public func tlsEndpoint(forConnection connectionID: UInt16) -> TLSEndpoint? {
        connections[connectionID].flatMap(registries.tls.endpoint(for:))
    }

    func endRecording(_ connectionID: UInt16, _ recording: OpenRecording) {
        recordings[connectionID] = nil
        let end = CameraEvent.pushTransportEnd(PushTransportEnd(
            connectionID: connectionID, containerType: recording.containerType,
            cmafSessionNumber: recording.containerType == .cmaf ? recording.sessionNumber : nil))
        // Sent once its record is written; a failed write holds it back and is tried again (``unsavedEnds``).
        do {
            try persistence.save(openRecording: nil, connectionID: connectionID)
        } catch {
            unsavedEnds[connectionID] = (end, recording.fabricIndex)
            endpointEvents.report(error)
            return
        }
        emit(end, fabric: recording.fabricIndex)
    }
}
