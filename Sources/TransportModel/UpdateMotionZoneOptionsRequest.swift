import Foundation

/// UpdateMotionZoneOptions (provisional, TC-PAVST-2.15). A field left out keeps its value; `motionZones` null or
/// empty means motion anywhere. The HTTP API's body of the command too (its schema in openapi.json is generated as
/// this type): generated Codable reads a field left out and a null one alike, and here they mean different things.
public struct UpdateMotionZoneOptionsRequest: Codable, Sendable, Hashable {
    public var connectionID: UInt16
    public var motionZones: Nullable<[TransportZoneOptionsStruct]>?
    public var motionSensitivity: Nullable<UInt8>?

    public init(
        connectionID: UInt16, motionZones: Nullable<[TransportZoneOptionsStruct]>? = nil,
        motionSensitivity: Nullable<UInt8>? = nil
    ) {
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
