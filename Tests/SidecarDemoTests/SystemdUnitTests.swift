import Foundation
import Testing
import TestSupport

/// The systemd unit in `Packaging/systemd` checked by systemd's own tools, offline: `systemd-analyze verify` finds
/// nothing wrong with it (with ExecStart pointing at the `pushav` just built), and `systemd-analyze security` rates
/// its exposure at most 2.0 (it measured 1.1: what is left is the network access a recorder needs).
struct SystemdUnitTests {
    @Test func theUnitVerifiesAndItsExposureStaysLow() async throws {
        let root = TestPaths.packageRoot
        let run = try await ProcessRun.run(
            URL(fileURLWithPath: "/bin/bash"),
            [root.appendingPathComponent("Packaging/systemd/check-unit").path,
             root.appendingPathComponent("Packaging/systemd/pushav.service").path, TestPaths.pushav.path, "2.0"],
            timeout: 60)
        // 77 means systemd-analyze is missing: Scripts/setup installs it, so that is a failure here too.
        #expect(run.succeeded, "\(run.status)\n\(run.output)")
        let exposure = run.stdout.split(separator: "\n").first { $0.contains("Overall exposure level for pushav.service") }
        #expect(exposure != nil, "\(run.output)")
        print(exposure.map(String.init) ?? "no exposure line")
    }

    /// The unit's promises that the README makes: a dedicated user, a private state folder, the stop signal and a stop
    /// timeout longer than the service's own graceful shutdown (20 s, then 5 s of cancellation).
    @Test func theUnitKeepsTheDocumentedSettings() throws {
        let unit = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("Packaging/systemd/pushav.service"), encoding: .utf8)
        let settings = Set(unit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("#") })
        for expected in ["User=pushav", "StateDirectory=pushav", "StateDirectoryMode=0700", "ProtectSystem=strict",
                         "ProtectHome=yes", "NoNewPrivileges=yes", "CapabilityBoundingSet=", "PrivateTmp=yes",
                         "Restart=on-failure", "KillSignal=SIGTERM", "TimeoutStopSec=30s"] {
            #expect(settings.contains(expected), "\(expected) missing")
        }
    }
}
