import CMAF
import Foundation
import Recorder
import Testing
import Timeline

/// A CENC key in no printed form: a transport's desired recording (what a camera hands its recording) and the encryption
/// value itself, however they are printed.
struct KeyRedactionTests {
    static let key: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18, 0x29, 0x3A, 0x4B, 0x5C, 0x6D, 0x7E, 0x8F, 0x90]
    static let keyID: [UInt8] = Array(repeating: 0x11, count: 16)

    /// The key as hex, base64, and Swift's array print forms (decimal and each byte).
    static func forms(of key: [UInt8]) -> [String] {
        [key.map { String(format: "%02x", $0) }.joined(), key.map { String(format: "%02X", $0) }.joined(),
         Data(key).base64EncodedString(), "\(key)", key.map(String.init).joined(separator: ", ")]
    }

    @Test func printedFormsShowTheKeyIDAndNeverTheKey() throws {
        let encryption = try CommonEncryption(key: Self.key, keyID: Self.keyID)
        var format = SessionFormat(segmentDuration: .seconds(2), chunkDuration: nil)
        format.encryption = encryption
        var policy = ClipPolicy(trigger: .continuous, maxPreRoll: .zero, continuousSessionLength: .seconds(300),
                                output: URL(fileURLWithPath: "/tmp"))
        policy.format = format
        let desired = DesiredRecordings(connections: [3: DesiredRecording(policy: policy, generation: 1, active: true, includeAudio: true)])
        var dumped = ""
        dump(desired, to: &dumped)
        let printed = ["\(encryption)", String(reflecting: encryption), "\(desired)", String(reflecting: desired), dumped,
                       "\(policy)"]
        for text in printed {
            for form in Self.forms(of: Self.key) { #expect(!text.contains(form), "\(form) in \(text)") }
        }
        #expect("\(encryption)".contains(String(repeating: "11", count: 16)), "the key ID stays visible")
    }
}
