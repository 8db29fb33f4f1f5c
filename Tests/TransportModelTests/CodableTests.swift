import Domain
import Foundation
import Testing
@testable import TransportModel

@Suite("JSON coding")
struct CodableTests {
    private func reencoded<T: Codable>(_ type: T.Type, _ json: String) throws -> String {
        let value = try JSONDecoder().decode(T.self, from: Data(json.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test("Documents round-trip byte for byte: absent stays absent, null stays null", arguments: [
        // Motion, explicit nulls for the stream IDs and the sensitivity, a null zone.
        #"{"audioStreamID":null,"containerOptions":{"cmafContainerOptions":{"chunkDuration":1000,"cmafInterface":0,"segmentDuration":4000},"containerType":0},"ingestMethod":0,"streamUsage":1,"tlsEndpointID":1,"triggerOptions":{"maxPreRollLen":4000,"motionSensitivity":null,"motionTimeControl":{"augmentationDuration":5,"blindDuration":1,"initialDuration":10,"maxDuration":20},"motionZones":[{"zone":null},{"sensitivity":4,"zone":2}],"triggerType":1},"url":"https:\/\/localhost:1234\/streams\/1\/","videoStreamID":null}"#,
        // The same with the stream IDs absent and null zones list.
        #"{"containerOptions":{"cmafContainerOptions":{"chunkDuration":0,"cmafInterface":0,"segmentDuration":4000},"containerType":0},"ingestMethod":0,"streamUsage":1,"tlsEndpointID":1,"triggerOptions":{"maxPreRollLen":0,"motionSensitivity":5,"motionTimeControl":{"augmentationDuration":0,"blindDuration":0,"initialDuration":1,"maxDuration":1},"motionZones":null,"triggerType":1},"url":"https:\/\/localhost:1234\/streams\/1\/","videoStreams":[{"videoStreamID":10,"videoStreamName":"front"}]}"#,
        // Every CMAF field, CENC bytes, expiry, unknown enum values kept as numbers.
        #"{"audioStreams":[],"containerOptions":{"cmafContainerOptions":{"cencKey":"AAECAwQFBgcICQoLDA0ODw==","cencKeyID":"EBESExQVFhcYGRobHB0eHw==","chunkDuration":500,"cmafInterface":9,"metadataEnabled":false,"segmentDuration":2000,"sessionGroup":3,"trackName":"media"},"containerType":7},"expiryTime":3600,"ingestMethod":5,"streamUsage":42,"tlsEndpointID":65535,"triggerOptions":{"triggerType":2},"url":"x","videoStreamID":10}"#,
    ])
    func transportOptions(json: String) throws {
        #expect(try reencoded(TransportOptionsStruct.self, json) == json)
    }

    @Test("The decoded tri-state fields are what the document says")
    func triState() throws {
        let json = #"{"containerOptions":{"containerType":0},"ingestMethod":0,"streamUsage":1,"tlsEndpointID":1,"triggerOptions":{"motionZones":[{"zone":null}],"motionSensitivity":null,"triggerType":1},"url":"u","videoStreamID":null,"audioStreamID":7}"#
        let options = try JSONDecoder().decode(TransportOptionsStruct.self, from: Data(json.utf8))
        #expect(options.videoStreamID == .null)
        #expect(options.audioStreamID == .value(7))
        #expect(options.triggerOptions.motionSensitivity == .null)
        #expect(options.triggerOptions.motionTimeControl == nil)
        #expect(options.triggerOptions.motionZones == .value([TransportZoneOptionsStruct(zone: .null)]))
        #expect(options.expiryTime == nil)
    }

    @Test("A zone entry without its mandatory zone field does not decode")
    func mandatoryNullable() {
        #expect(throws: DecodingError.self) {
            _ = try JSONDecoder().decode(TransportZoneOptionsStruct.self, from: Data(#"{"sensitivity":3}"#.utf8))
        }
    }

    @Test("TransportConfigurationStruct and events round-trip")
    func configurationAndEvents() throws {
        let configuration = #"{"connectionID":1,"fabricIndex":2,"transportStatus":1}"#
        #expect(try reencoded(TransportConfigurationStruct.self, configuration) == configuration)
        let begin = #"{"activationReason":3,"cmafSessionNumber":18446744073709551615,"connectionID":4,"containerType":0,"triggerType":0}"#
        #expect(try reencoded(PushTransportBegin.self, begin) == begin)
    }

    @Test("Enums carry their wire values", arguments: [
        (StreamUsageEnum.internal.rawValue, 0), (StreamUsageEnum.liveView.rawValue, 3),
        (TransportStatusEnum.active.rawValue, 0), (TransportStatusEnum.inactive.rawValue, 1),
        (TransportTriggerTypeEnum.command.rawValue, 0), (TransportTriggerTypeEnum.motion.rawValue, 1),
        (TransportTriggerTypeEnum.continuous.rawValue, 2), (TriggerActivationReasonEnum.doorbellPressed.rawValue, 3),
        (CMAFInterfaceEnum.interface2HLS.rawValue, 2), (ContainerFormatEnum.cmaf.rawValue, 0),
        (IngestMethodsEnum.cmafIngest.rawValue, 0),
    ] as [(UInt8, UInt8)])
    func wireValues(actual: UInt8, wire: UInt8) {
        #expect(actual == wire)
    }

    @Test("StatusCodeEnum uses the final 1.5/1.5.1 values, not the draft ones")
    func statusCodes() {
        #expect(StatusCodeEnum.invalidTLSEndpoint.rawValue == 0x02)
        #expect(StatusCodeEnum.invalidStream.rawValue == 0x03)
        #expect(StatusCodeEnum.invalidURL.rawValue == 0x04)
        #expect(StatusCodeEnum.invalidZone.rawValue == 0x05)
        #expect(StatusCodeEnum.invalidCombination.rawValue == 0x06)
        #expect(StatusCodeEnum.invalidTriggerType.rawValue == 0x07)
        #expect(StatusCodeEnum.invalidTransportStatus.rawValue == 0x08)
        #expect(StatusCodeEnum.invalidOptions.rawValue == 0x09)
        #expect(StatusCodeEnum.invalidStreamUsage.rawValue == 0x0A)
        #expect(StatusCodeEnum.invalidTime.rawValue == 0x0B)
        #expect(StatusCodeEnum.invalidPreRollLength.rawValue == 0x0C)
        #expect(StatusCodeEnum.duplicateStreamValues.rawValue == 0x0D)
        #expect(InteractionModelStatus.dynamicConstraintError.rawValue == 0xCF)
        #expect(InteractionModelStatus.alreadyExists.rawValue == 0xD0)
        #expect(InteractionModelStatus.invalidInState.rawValue == 0xCB)
    }

    @Test("Unknown wire values decode to .unknown and known ones never do")
    func unknownValues() throws {
        #expect(StreamUsageEnum(rawValue: 1) == .recording)
        #expect(StreamUsageEnum(rawValue: 4) == .unknown(4))
        #expect(!StreamUsageEnum(rawValue: 4).isKnown)
        #expect(try JSONDecoder().decode(TransportStatusEnum.self, from: Data("7".utf8)) == .unknown(7))
    }

    @Test("Effective motion sensitivity: zone entry, then MotionSensitivity, then Zone Management, then 10")
    func effectiveSensitivity() {
        let zone = TransportZoneOptionsStruct(zone: .value(1), sensitivity: 3)
        var trigger = TransportTriggerOptionsStruct(triggerType: .motion, motionSensitivity: .value(6))
        #expect(trigger.effectiveSensitivity(for: zone, zoneManagementSensitivity: 8) == 3)
        #expect(trigger.effectiveSensitivity(for: nil, zoneManagementSensitivity: 8) == 6)
        trigger.motionSensitivity = .null
        #expect(trigger.effectiveSensitivity(for: nil, zoneManagementSensitivity: 8) == 8)
        #expect(trigger.effectiveSensitivity(for: nil, zoneManagementSensitivity: nil) == 10)
    }
}
