import Domain
import Foundation

// The endpoint's events (PushTransportBegin/End, read live or from the log) and the changes the cameras follow.
extension PushAVStreamTransportServer {
    /// A new subscription to PushTransportBegin/End, from now on, each with its event number, time and fabric.
    /// Any number of consumers may subscribe. To replay and then follow without a gap, subscribe first, then read
    /// `loggedEvents(after:fabric:limit:)`, then take live events numbered above the last one read.
    public func events() -> AsyncStream<LoggedTransportEvent> { endpointEvents.subscribe() }

    /// Logged events numbered above `number`, of `fabric` (nil: every fabric), oldest first, at most `limit`.
    /// Events whose append failed are not there; pruned ones neither (see `EventLogRetention`).
    public func loggedEvents(after number: UInt64, fabric: FabricIndex?, limit: Int) throws -> [LoggedTransportEvent] {
        try endpointEvents.logged(after: number, fabric: fabric, limit: limit)
    }

    /// Sends the End owed to every recording the previous process began and never ended (it was killed, or the
    /// power went): logged with the next event numbers, so a controller reading the event log from where it left off
    /// sees every Begin matched. Call once at start, before recording. Returns the recordings ended, by connection ID.
    ///
    /// A recording whose End is in the log after its Begin already got it: only the store's record of that End failed
    /// (an I/O error) before the process died. Its stale record is cleared and no second End goes out (a chaos run
    /// found one: a libfiu write fault, then kill -9).
    @discardableResult
    public func endRecordingsInterruptedByTheLastStop() -> [UInt16: OpenRecording] {
        var owed = interruptedRecordings
        interruptedRecordings = [:]
        let logged = owed.isEmpty ? [] : ((try? endpointEvents.logged(after: 0, fabric: nil, limit: 1 << 30)) ?? [])
        for (connectionID, recording) in owed.sorted(by: { $0.key < $1.key }) {
            if Self.endLogged(connectionID, recording, in: logged) {
                do { try persistence.save(openRecording: nil, connectionID: connectionID) } catch { endpointEvents.report(error) }
                owed[connectionID] = nil
                continue
            }
            endRecording(connectionID, recording)
        }
        return owed
    }

    /// Whether `logged` holds an End of `recording` after its latest Begin.
    static func endLogged(_ connectionID: UInt16, _ recording: OpenRecording, in logged: [LoggedTransportEvent]) -> Bool {
        guard recording.containerType == .cmaf,
              let begin = logged.last(where: { entry in
                  if case .pushTransportBegin(let begin) = entry.event {
                      return begin.connectionID == connectionID && begin.cmafSessionNumber == recording.sessionNumber
                  }
                  return false
              })
        else { return false }
        return logged.contains { entry in
            if case .pushTransportEnd(let end) = entry.event {
                return entry.number > begin.number && end.connectionID == connectionID && end.cmafSessionNumber == recording.sessionNumber
            }
            return false
        }
    }

    /// The number the next event will get (every event so far has a lower one).
    public var upcomingEventNumber: UInt64 { endpointEvents.upcomingNumber }

    /// A new subscription to the changes the recorder and uploader follow.
    public func changes() -> AsyncStream<TransportChange> { changeBroadcast.subscribe() }

    /// Everything a camera reconciles its recordings and deliveries to, read in one step (one version).
    public func desiredState() -> DesiredTransportState {
        removeExpiredConnectionsRetryingLater()
        return DesiredTransportState(version: version, connections: connections.values.sorted { $0.connectionID < $1.connectionID },
                                     registries: registries, zoneTriggers: resolvedZoneTriggers)
    }

    /// Ends every subscription (at shutdown): iteration finishes after the values already sent.
    public func finishSubscriptions() {
        saveUnsavedEnds()  // an End held back by a failed record goes out now if its record can be written
        endpointEvents.finish()
        changeBroadcast.finish()
    }
}
