import Ingest
import TransportModel

/// Compares the cluster's desired connections with what a camera runs and says, per connection, whether its
/// recording goes on as it is, must be made anew (its options or its destination changed), or stops; and which
/// destinations are no longer anyone's (retired: they finish what they hold, at their own URL, and end). Pure: no
/// I/O; tested by tables.
///
/// The one place that decides whether a change affects a running recording: only a change of what is recorded
/// (options other than ExpiryTime) or of where it goes (URL, fabric, TLS material) makes it anew. Status, privacy,
/// the microphone and the Zone Management Sensitivity are followed by the running recording itself (see
/// `RecordingReconciler`).
enum ConnectionReconciler {
    /// What a connection's recording is made from: the cluster's options without ExpiryTime, and its destination.
    struct Spec: Sendable, Hashable {
        var options: TransportOptionsStruct
        var destination: String

        init(options: TransportOptionsStruct, destination: String) {
            self.options = options.ignoringExpiry
            self.destination = destination
        }
    }

    /// A connection the cluster holds: its spec, or nil when its TLS endpoint is gone (nothing may be recorded: the
    /// upload would go out with the system's trust roots and no client certificate, to a server nobody authorised).
    struct Wanted: Sendable, Hashable {
        var spec: Spec?
    }

    enum Action: Sendable, Hashable {
        /// Build the connection's recording from its spec (new, or replacing one of another spec).
        case record(UInt16)
        /// Its recording goes on as it is.
        case keep(UInt16)
        /// It records nothing now: deallocated, or refused for want of its TLS endpoint.
        case stop(UInt16)
        /// Refused: its TLS endpoint is gone (logged and listed until it is back).
        case refuse(UInt16)
        /// No connection records for this destination any more.
        case retire(String)
    }

    /// The actions from `running` (each connection's spec as the camera runs it) to `wanted`, connections in ID order,
    /// then the destinations retired, in label order.
    static func actions(wanted: [UInt16: Wanted], running: [UInt16: Spec]) -> [Action] {
        var actions: [Action] = []
        for id in Set(wanted.keys).union(running.keys).sorted() {
            switch (wanted[id], running[id]) {
            case (nil, _?):
                actions.append(.stop(id))
            case (let want?, let have):
                guard let spec = want.spec else {
                    if have != nil { actions.append(.stop(id)) }
                    actions.append(.refuse(id))
                    continue
                }
                actions.append(spec == have ? .keep(id) : .record(id))
            case (nil, nil):
                break
            }
        }
        let kept = Set(wanted.values.compactMap { $0.spec?.destination })
        for key in Set(running.values.map(\.destination)).subtracting(kept).sorted() {
            actions.append(.retire(key))
        }
        return actions
    }
}
