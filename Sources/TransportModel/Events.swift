import Domain
import Foundation

/// The PushTransportBegin event: a recording started uploading.
public struct PushTransportBegin: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    /// Command for a manually triggered recording, whatever the transport's own trigger type.
    public var triggerType: TransportTriggerTypeEnum
    /// Present only when `triggerType` is Command.
    public var activationReason: TriggerActivationReasonEnum?
    public var containerType: ContainerFormatEnum?
    /// The recording's CMAF session number; present for CMAF.
    public var cmafSessionNumber: SessionNumber?

    public init(
        connectionID: UInt16, triggerType: TransportTriggerTypeEnum,
        activationReason: TriggerActivationReasonEnum? = nil, containerType: ContainerFormatEnum? = nil,
        cmafSessionNumber: SessionNumber? = nil
    ) {
        self.connectionID = connectionID
        self.triggerType = triggerType
        self.activationReason = activationReason
        self.containerType = containerType
        self.cmafSessionNumber = cmafSessionNumber
    }
}

/// The PushTransportEnd event: a recording finished.
public struct PushTransportEnd: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    public var containerType: ContainerFormatEnum?
    public var cmafSessionNumber: SessionNumber?

    public init(
        connectionID: UInt16, containerType: ContainerFormatEnum? = nil, cmafSessionNumber: SessionNumber? = nil
    ) {
        self.connectionID = connectionID
        self.containerType = containerType
        self.cmafSessionNumber = cmafSessionNumber
    }
}

/// The events of the camera's endpoint, in the order they happened: the Push AV Stream Transport cluster's
/// PushTransportBegin/End and the Zone Management cluster's ZoneTriggered/ZoneStopped. One type because Matter numbers
/// every event of a node in one sequence, so one log (and one event stream) holds both clusters' events in order.
public enum CameraEvent: Sendable, Hashable {
    case pushTransportBegin(PushTransportBegin)
    case pushTransportEnd(PushTransportEnd)
    case zoneTriggered(ZoneTriggeredEvent)
    case zoneStopped(ZoneStoppedEvent)

    /// The fabric a zone event is logged with: zones are the camera's, not a fabric's, so every fabric reads them.
    public static let noFabric: FabricIndex = 0

    /// The connection a transport event concerns; nil for zone events.
    public var connectionID: UInt16? {
        switch self {
        case .pushTransportBegin(let begin): begin.connectionID
        case .pushTransportEnd(let end): end.connectionID
        case .zoneTriggered, .zoneStopped: nil
        }
    }

    /// The event's name in the specification: the SSE event type and the event log's `type` column.
    public var name: String {
        switch self {
        case .pushTransportBegin: "PushTransportBegin"
        case .pushTransportEnd: "PushTransportEnd"
        case .zoneTriggered: "ZoneTriggered"
        case .zoneStopped: "ZoneStopped"
        }
    }
}


/// Why a connection went away.
public enum DeallocationReason: Sendable, Hashable {
    case command
    case expired
    case fabricRemoved
}

/// A ManuallyTriggerTransport the recorder must act on: start a clip, or treat it as a matching sample.
public struct ManualTrigger: Sendable, Hashable {
    public var connectionID: UInt16
    public var activationReason: TriggerActivationReasonEnum
    /// The command's time control, else the transport's configured motionTimeControl. Its blind duration is ignored.
    public var timeControl: TransportMotionTriggerTimeControlStruct
    public var userDefined: Data?

    public init(
        connectionID: UInt16, activationReason: TriggerActivationReasonEnum,
        timeControl: TransportMotionTriggerTimeControlStruct, userDefined: Data? = nil
    ) {
        self.connectionID = connectionID
        self.activationReason = activationReason
        self.timeControl = timeControl
        self.userDefined = userDefined
    }
}

/// A change of the desired state the cameras follow. Not a cluster event. A camera reconciles to the whole current
/// state on any of them (it reads the state afresh), so one missed or late change costs nothing; only a manual
/// trigger is an event in itself.
public enum TransportChange: Sendable, Hashable {
    case allocated(StoredConnection)
    case modified(StoredConnection)
    case statusChanged(connectionID: UInt16, TransportStatusEnum)
    case deallocated(connectionID: UInt16, reason: DeallocationReason)
    case manuallyTriggered(ManualTrigger)
    case registriesChanged
}

/// Fans values out to any number of `AsyncStream` subscribers. Lives inside the server actor, which serialises it.
struct Broadcast<Element: Sendable> {
    private var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
    private var nextKey = 0

    /// A stream of every value sent from now on. Unbounded buffering: events are rare and must not be dropped.
    mutating func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
        continuations[nextKey] = continuation
        nextKey += 1
        return stream
    }

    mutating func send(_ element: Element) {
        for (key, continuation) in continuations {
            // A subscriber that stopped iterating is forgotten on the next send.
            if case .terminated = continuation.yield(element) { continuations[key] = nil }
        }
    }

    mutating func finish() {
        for continuation in continuations.values { continuation.finish() }
        continuations = [:]
    }
}

/// The desired state of one camera's transports as the cluster holds it, at one version (see
/// `PushAVStreamTransportServer.desiredState()`).
public struct DesiredTransportState: Sendable {
    public var version: UInt64
    /// Every connection of every fabric, in ID order.
    public var connections: [StoredConnection]
    public var registries: TransportRegistries
    /// Zone Management's triggers, each with its sensitivity resolved.
    public var zoneTriggers: [ZoneTrigger]

    public init(
        version: UInt64, connections: [StoredConnection], registries: TransportRegistries, zoneTriggers: [ZoneTrigger]
    ) {
        self.version = version
        self.connections = connections
        self.registries = registries
        self.zoneTriggers = zoneTriggers
    }
}
