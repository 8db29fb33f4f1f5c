import Foundation

/// Where the tests find the package, its bundled media and the built `pushav`, and where they make scratch folders.
public enum TestPaths {
    /// The package's root folder (this file is Tests/TestSupport/TestPaths.swift).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    public static let testMedia = packageRoot.appendingPathComponent("TestMedia")

    public static func media(_ name: String) -> URL { testMedia.appendingPathComponent(name) }

    /// The `pushav` executable built next to the test bundle. Test targets depend on libraries only: the tests that
    /// run the real process need it built first, which `swift build --build-tests` (Scripts/test) and `swift test`
    /// do, since both build every product of the package.
    public static var pushav: URL { builtExecutable("pushav") }

    /// An executable the package's build made, found beside the running test bundle.
    public static func builtExecutable(_ name: String) -> URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        // swift test runs `<build>/debug/PushAVRecorderPackageTests.xctest`; on some hosts the runner sits deeper.
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug/\(name)")
    }

    /// A new empty folder under the system's temporary folder, named after `label`; the caller removes it.
    public static func scratchDirectory(_ label: String, prefix: String = "pushav-tests") throws -> URL {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(safe)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The test process's environment with a fresh, empty `PUSHAV_STATE_DIR` for a `pushav` child: every run gets its
    /// own session ledger, so a port a later test reuses never continues an earlier test's session numbers. A test
    /// that checks continuation across runs passes `--state-dir` itself.
    public static func isolatedEnvironment() -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PUSHAV_STATE_DIR"] = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushav-state-\(UUID().uuidString.prefix(8))").path
        return environment
    }
}
