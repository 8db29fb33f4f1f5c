import Domain
import Foundation
import Sidecar
import TransportModel

// The request and response bodies of the cluster's commands: the command's fields by the cluster's names (the
// Google Home trait's spelling, as `TransportOptionsStruct` already uses), as one JSON object.

/// AllocatePushTransport.
public struct AllocatePushTransportRequest: Codable, Sendable, Hashable {
    public var transportOptions: TransportOptionsStruct

    public init(transportOptions: TransportOptionsStruct) { self.transportOptions = transportOptions }
}

/// AllocatePushTransportResponse.
public struct AllocatePushTransportResponse: Codable, Sendable, Hashable {
    public var transportConfiguration: TransportConfigurationStruct

    public init(transportConfiguration: TransportConfigurationStruct) { self.transportConfiguration = transportConfiguration }
}

/// ModifyPushTransport.
public struct ModifyPushTransportRequest: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    public var transportOptions: TransportOptionsStruct

    public init(connectionID: UInt16, transportOptions: TransportOptionsStruct) {
        self.connectionID = connectionID
        self.transportOptions = transportOptions
    }
}

/// SetTransportStatus. `connectionID` is mandatory but nullable, as in the cluster: null means every connection of
/// the caller's fabric.
public struct SetTransportStatusRequest: Codable, Sendable, Hashable {
    public var connectionID: Nullable<UInt16>
    public var transportStatus: TransportStatusEnum

    public init(connectionID: Nullable<UInt16>, transportStatus: TransportStatusEnum) {
        self.connectionID = connectionID
        self.transportStatus = transportStatus
    }

    private enum CodingKeys: String, CodingKey { case connectionID, transportStatus }

    /// `connectionID` absent reads as null (every connection of the fabric). The cluster makes the field mandatory
    /// and nullable, but the Google Home SDK's `setTransportStatus(transportStatus:)` leaves the optional argument
    /// out to mean "all", and refusing that would lock such a controller out.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        connectionID = try container.decodeIfPresent(Nullable<UInt16>.self, forKey: .connectionID) ?? .null
        transportStatus = try container.decode(TransportStatusEnum.self, forKey: .transportStatus)
    }
}

/// ManuallyTriggerTransport. `userDefined` travels as base64 (at most 256 bytes decoded).
public struct ManuallyTriggerTransportRequest: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    public var activationReason: TriggerActivationReasonEnum
    public var timeControl: TransportMotionTriggerTimeControlStruct?
    public var userDefined: Data?

    public init(connectionID: UInt16, activationReason: TriggerActivationReasonEnum,
                timeControl: TransportMotionTriggerTimeControlStruct? = nil, userDefined: Data? = nil) {
        self.connectionID = connectionID
        self.activationReason = activationReason
        self.timeControl = timeControl
        self.userDefined = userDefined
    }
}

/// FindTransport. `connectionID` null or absent means every connection of the caller's fabric.
public struct FindTransportRequest: Codable, Sendable, Hashable {
    public var connectionID: UInt16?

    public init(connectionID: UInt16? = nil) { self.connectionID = connectionID }
}

/// FindTransportResponse.
public struct FindTransportResponse: Codable, Sendable, Hashable {
    public var transportConfigurations: [TransportConfigurationStruct]

    public init(transportConfigurations: [TransportConfigurationStruct]) {
        self.transportConfigurations = transportConfigurations
    }
}

/// UpdateMotionZoneOptions (provisional, TC-PAVST-2.15). A field left out keeps its value; `motionZones` null or
/// empty means motion anywhere.
public struct UpdateMotionZoneOptionsRequest: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    public var motionZones: Nullable<[TransportZoneOptionsStruct]>?
    public var motionSensitivity: Nullable<UInt8>?

    public init(connectionID: UInt16, motionZones: Nullable<[TransportZoneOptionsStruct]>? = nil,
                motionSensitivity: Nullable<UInt8>? = nil) {
        self.connectionID = connectionID
        self.motionZones = motionZones
        self.motionSensitivity = motionSensitivity
    }

    private enum CodingKeys: String, CodingKey { case connectionID, motionZones, motionSensitivity }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        connectionID = try container.decode(UInt16.self, forKey: .connectionID)
        motionZones = try container.decodeOptionalNullable([TransportZoneOptionsStruct].self, forKey: .motionZones)
        motionSensitivity = try container.decodeOptionalNullable(UInt8.self, forKey: .motionSensitivity)
    }
}

/// DeallocatePushTransport.
public struct DeallocatePushTransportRequest: Codable, Sendable, Hashable {
    public var connectionID: UInt16

    public init(connectionID: UInt16) { self.connectionID = connectionID }
}

/// Zone Management CreateTwoDCartesianZone.
public struct CreateTwoDCartesianZoneRequest: Codable, Sendable, Hashable {
    public var zone: TwoDCartesianZoneStruct
    public init(zone: TwoDCartesianZoneStruct) { self.zone = zone }
}

public struct CreateTwoDCartesianZoneResponse: Codable, Sendable, Hashable {
    public var zoneID: UInt16
    public init(zoneID: UInt16) { self.zoneID = zoneID }
}

/// Zone Management UpdateTwoDCartesianZone.
public struct UpdateTwoDCartesianZoneRequest: Codable, Sendable, Hashable {
    public var zoneID: UInt16
    public var zone: TwoDCartesianZoneStruct
    public init(zoneID: UInt16, zone: TwoDCartesianZoneStruct) {
        self.zoneID = zoneID
        self.zone = zone
    }
}

/// Zone Management RemoveZone.
public struct RemoveZoneRequest: Codable, Sendable, Hashable {
    public var zoneID: UInt16
    public init(zoneID: UInt16) { self.zoneID = zoneID }
}

/// The answer of a command whose response is a plain status: `{}`.
public struct EmptyResponse: Codable, Sendable, Hashable {
    public init() {}
}

/// Zone Management CreateOrUpdateTrigger.
public struct CreateOrUpdateTriggerRequest: Codable, Sendable, Hashable {
    public var trigger: ZoneTriggerControlStruct
    public init(trigger: ZoneTriggerControlStruct) { self.trigger = trigger }
}

/// Zone Management RemoveTrigger.
public struct RemoveTriggerRequest: Codable, Sendable, Hashable {
    public var zoneID: UInt16
    public init(zoneID: UInt16) { self.zoneID = zoneID }
}

/// `GET`/`PUT /v1/cameras/{camera}/attributes/{name}`: an attribute's value, and the body of a write.
public struct AttributeValue<Value: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    public var value: Value

    public init(value: Value) { self.value = value }
}

/// `GET /v1/cameras`.
public struct CameraList: Codable, Sendable, Hashable {
    public var cameras: [CameraStatus]

    public init(cameras: [CameraStatus]) { self.cameras = cameras }
}
