import Domain
import Testing
import TransportModel

/// The trigger type converts to and from the cluster's wire enum in one place, and a recording's trigger carries it.
@Suite("Trigger types")
struct TriggerTypeTests {
    static let wire: [(TriggerType, UInt8)] = [(.command, 0), (.motion, 1), (.continuous, 2)]

    @Test(arguments: wire)
    func wireValuesRoundTrip(type: TriggerType, raw: UInt8) {
        #expect(TransportTriggerTypeEnum(type).rawValue == raw)
        #expect(TransportTriggerTypeEnum(rawValue: raw).type == type)
    }

    @Test func anUnknownWireValueNamesNoTriggerType() {
        #expect(TransportTriggerTypeEnum(rawValue: 3).type == nil)
        #expect(TransportTriggerTypeEnum(rawValue: 255).type == nil)
    }

    static let recordings: [(TriggerType, RecordingTrigger)] = [
        (.motion, .motion), (.continuous, .continuous), (.command, .command(.doorbellPressed)),
    ]

    /// A command's reason is kept; motion and continuous recordings have none.
    @Test(arguments: recordings)
    func aRecordingsTriggerCarriesItsType(type: TriggerType, expected: RecordingTrigger) {
        let trigger = RecordingTrigger(type, commandReason: .doorbellPressed)
        #expect(trigger == expected)
        #expect(trigger.type == type)
    }
}
