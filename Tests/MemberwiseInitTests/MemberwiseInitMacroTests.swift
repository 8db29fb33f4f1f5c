import MemberwiseInitMacros
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// The initialiser `@MemberwiseInit` writes, rule by rule (the rules are in the macro's declaration).
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
    func writesTheInitialiser(_ row: Case) {
        let members = row.members.split(separator: "\n", omittingEmptySubsequences: false).map { "    \($0)" }
        let initialiser = row.initialiser.split(separator: "\n").map { "    \($0)" }
        assertMacroExpansion(
            "@MemberwiseInit\npublic struct S {\n\(members.joined(separator: "\n"))\n}",
            expandedSource: "public struct S {\n\(members.joined(separator: "\n"))\n\n\(initialiser.joined(separator: "\n"))\n}",
            macroSpecs: specs, failureHandler: record)
    }

    @Test func refusesWhatIsNotAStruct() {
        assertMacroExpansion(
            "@MemberwiseInit\npublic enum E {\n    case a\n}",
            expandedSource: "public enum E {\n    case a\n}",
            diagnostics: [DiagnosticSpec(message: "@MemberwiseInit applies to a struct", line: 1, column: 1)],
            macroSpecs: specs, failureHandler: record)
    }

    @Test func asksForTheTypeItCannotInfer() {
        assertMacroExpansion(
            "@MemberwiseInit\npublic struct S {\n    public var limit = 64\n}",
            expandedSource: "public struct S {\n    public var limit = 64\n}",
            diagnostics: [
                DiagnosticSpec(
                    message: "@MemberwiseInit needs the type of 'limit' written out: the initialiser's parameter takes it",
                    line: 3, column: 16)
            ],
            macroSpecs: specs, failureHandler: record)
    }

    private let specs = ["MemberwiseInit": MacroSpec(type: MemberwiseInitMacro.self)]

    private func record(_ failure: TestFailureSpec) {
        Issue.record(
            Comment(rawValue: failure.message),
            sourceLocation: SourceLocation(
                fileID: failure.location.fileID, filePath: failure.location.filePath, line: failure.location.line,
                column: failure.location.column))
    }
}
