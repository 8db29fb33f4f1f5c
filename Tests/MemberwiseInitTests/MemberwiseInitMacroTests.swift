import Foundation
import Testing
import TestSupport

/// The initialiser `@MemberwiseInit` writes, rule by rule (the rules are in the macro's declaration), and its two
/// refusals: each case is compiled by swiftc with the plugin the build made, which prints the expansion
/// (`-dump-macro-expansions`) and the diagnostics, as a build of the package would meet them.
@Suite struct MemberwiseInitMacroTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let rule: String
        let members: String
        let initialiser: String
        var testDescription: String { rule }
    }

    static let cases: [Case] = [
        Case(
            rule: "one labelled parameter per stored property, in order; an optional defaults to nil",
            members: "public var name: String\npublic var id: UInt16\npublic var note: String?",
            initialiser: """
                public init(name: String, id: UInt16, note: String? = nil) {
                    self.name = name
                    self.id = id
                    self.note = note
                }
                """),
        Case(
            rule: "an initial value is the default; a let with a value is no parameter; an optional let defaults to nil",
            members: "public var interval: Int = 4\npublic let kind: String = \"cmaf\"\npublic let key: [UInt8]?",
            initialiser: """
                public init(interval: Int = 4, key: [UInt8]? = nil) {
                    self.interval = interval
                    self.key = key
                }
                """),
        Case(
            rule: "computed, static and lazy properties are no parameters; one with observers is",
            members: """
                public var size: Int
                public var isEmpty: Bool { size == 0 }
                public static var shared: Int = 0
                public lazy var cache: [Int] = []
                public var count: Int { get { size } set { size = newValue } }
                public var observed: Int { didSet { print(observed) } }
                """,
            initialiser: """
                public init(size: Int, observed: Int) {
                    self.size = size
                    self.observed = observed
                }
                """),
        Case(
            rule: "a private setter's property with a value (an optional var has nil) is the type's own state",
            members: """
                public let configuration: Int
                public private(set) var activity: Int
                public private(set) var now: Int?
                private var counter: Int = 0
                fileprivate var seen: Set<Int> = []
                """,
            initialiser: """
                public init(configuration: Int, activity: Int) {
                    self.configuration = configuration
                    self.activity = activity
                }
                """),
        Case(
            rule: "a closure is escaping; an optional closure already is",
            members: "public var onEnd: @Sendable (Int) -> Void\npublic var onStart: (() -> Void)?",
            initialiser: """
                public init(onEnd: @escaping @Sendable (Int) -> Void, onStart: (() -> Void)? = nil) {
                    self.onEnd = onEnd
                    self.onStart = onStart
                }
                """),
    ]

    @Test(arguments: cases)
    func writesTheInitialiser(_ row: Case) async throws {
        let compiled = try await compile("@MemberwiseInit\npublic struct S {\n\(row.members)\n}")
        #expect(compiled.status == 0, "\(compiled.stderr)")
        #expect(compiled.stderr.contains("------------------------------\n\(row.initialiser)\n------------------------------"),
                "\(compiled.stderr)")
    }

    @Test(arguments: [
        ("@MemberwiseInit\nenum E { case a }\nlet e = E()", "3:1: error: @MemberwiseInit applies to a struct"),
        ("@MemberwiseInit\nstruct S {\n    var limit = 64\n}\nlet s = S()",
         "5:9: error: @MemberwiseInit needs the type of 'limit' written out: the initialiser's parameter takes it"),
    ])
    func refuses(_ source: String, _ diagnostic: String) async throws {
        let compiled = try await compile(source)
        #expect(compiled.status != 0)
        #expect(compiled.stderr.contains("macro.swift:\(diagnostic)"), "\(compiled.stderr)")
    }

    /// Type-checks `source` after the macro's declaration (two lines), with the built plugin.
    private func compile(_ source: String) async throws -> ProcessRun {
        let directory = try TestPaths.scratchDirectory("memberwise-init")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("macro.swift")
        try """
            @attached(member, names: named(init))
            macro MemberwiseInit() = #externalMacro(module: "MemberwiseInitMacros", type: "MemberwiseInitMacro")
            \(source)

            """.write(to: file, atomically: true, encoding: .utf8)
        return try await ProcessRun.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["swiftc", "-typecheck", "-Xfrontend", "-dump-macro-expansions",
             "-load-plugin-executable", "\(TestPaths.memberwiseInitPlugin.path)#MemberwiseInitMacros", file.path],
            timeout: 120)
    }
}
