import Foundation
import Testing

/// `Scripts/fuzz` over the test media: a fixed seed, so every run checks the same 150 mutants.
@Suite("Mutation fuzzer")
struct MutationFuzzTests {
    /// Bit flips, zeroed, duplicated and shuffled blocks, truncation and random header bytes, each mutant recorded by
    /// the built `pushav`: no crash, no hang, no error other than one clear line, and every session left on disk has
    /// media segments that `pushav inspect` accepts.
    @Test func mutantsNeverCrashHangOrLeaveAnInvalidSession() async throws {
        let dir = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let summary = dir.appendingPathComponent("fuzz.json")
        let script = Fixtures.packageRoot.appendingPathComponent("Scripts/fuzz")
        let result = try await PushAVBinary.run(
            ["python3", script.path, "150", "--seed", "1", "--pushav", Fixtures.pushav.path, "--jobs", "2",
             "--timeout", "60", "--quiet", "--json", summary.path],
            timeout: 600, executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")

        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: summary)) as? [String: Any]
        let counts = try #require(json?["counts"] as? [String: Int])
        #expect(json?["count"] as? Int == 150)
        #expect(counts["crash"] == 0 && counts["hang"] == 0 && counts["garbled"] == 0, "\(result.stdout)")
        #expect(json?["invalidRuns"] as? Int == 0, "\(result.stdout)")
        // The mutants did reach the recorder: some are still recorded, some are refused with an error line.
        #expect((counts["clean"] ?? 0) > 0 && (counts["error"] ?? 0) > 0, "\(counts)")
        #expect((json?["sessions"] as? Int ?? 0) > 0)
    }
}
