import SwiftCompilerPlugin
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@MemberwiseInit`: see the declaration in the `MemberwiseInit` module for the rules it follows.
public struct MemberwiseInitMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard declaration.is(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: MemberwiseInitMessage.notAStruct))
            return []
        }
        var parameters: [String] = []
        var assignments: [String] = []
        for member in declaration.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self), isStoredInstanceProperty(variable) else {
                continue
            }
            let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
            let isHidden = variable.modifiers.contains {
                [.keyword(.private), .keyword(.fileprivate)].contains($0.name.tokenKind)
            }
            for binding in variable.bindings {
                guard let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.trimmed else { continue }
                // A `let` with a value cannot be set again; a property with a value and a private setter is the
                // type's own state, not something a caller chooses (an optional `var` starts as nil: it has one).
                let type = binding.typeAnnotation?.type.trimmed
                let hasValue = binding.initializer != nil || (!isLet && type.map(isOptional) == true)
                if binding.initializer != nil && isLet || hasValue && isHidden { continue }
                guard let type else {
                    context.diagnose(Diagnostic(node: binding, message: MemberwiseInitMessage.untypedProperty(name.text)))
                    return []
                }
                var parameter = "\(name.text): \(isClosure(type) ? "@escaping " : "")\(type)"
                if let initial = binding.initializer?.value.trimmed {
                    parameter += " = \(initial)"
                } else if isOptional(type) {
                    parameter += " = nil"
                }
                parameters.append(parameter)
                assignments.append("self.\(name.text) = \(name.text)")
            }
        }
        let signature = "public init(\(parameters.joined(separator: ", ")))"
        return ["\(raw: signature) {\n\(raw: assignments.joined(separator: "\n"))\n}"]
    }

    /// Stored: no accessor block, or only observers (`willSet`/`didSet`); instance: not `static` or `class`.
    static func isStoredInstanceProperty(_ variable: VariableDeclSyntax) -> Bool {
        let excluded: [TokenKind] = [.keyword(.static), .keyword(.class), .keyword(.lazy)]
        if variable.modifiers.contains(where: { excluded.contains($0.name.tokenKind) }) {
            return false
        }
        return variable.bindings.allSatisfy { binding in
            switch binding.accessorBlock?.accessors {
            case nil:
                return true
            case .getter:
                return false
            case .accessors(let accessors):
                return accessors.allSatisfy {
                    [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind)
                }
            }
        }
    }

    static func isOptional(_ type: TypeSyntax) -> Bool {
        if type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return true }
        return type.as(IdentifierTypeSyntax.self)?.name.text == "Optional"
    }

    static func isClosure(_ type: TypeSyntax) -> Bool {
        if type.is(FunctionTypeSyntax.self) { return true }
        if let attributed = type.as(AttributedTypeSyntax.self) { return isClosure(attributed.baseType) }
        return false
    }
}

enum MemberwiseInitMessage: DiagnosticMessage {
    case notAStruct
    case untypedProperty(String)

    var message: String {
        switch self {
        case .notAStruct: "@MemberwiseInit applies to a struct"
        case .untypedProperty(let name):
            "@MemberwiseInit needs the type of '\(name)' written out: the initialiser's parameter takes it"
        }
    }

    var diagnosticID: MessageID {
        switch self {
        case .notAStruct: MessageID(domain: "MemberwiseInit", id: "notAStruct")
        case .untypedProperty: MessageID(domain: "MemberwiseInit", id: "untypedProperty")
        }
    }

    var severity: DiagnosticSeverity { .error }
}

@main
struct MemberwiseInitPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [MemberwiseInitMacro.self]
}
