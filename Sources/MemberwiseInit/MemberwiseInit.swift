/// Adds the `public` memberwise initialiser that Swift synthesises only as `internal`.
///
/// Why: a struct that another module builds (a cluster struct the API decodes and the CLI makes, a domain value the
/// recorder and the sidecar share) needs a `public init` that repeats every stored property three times. Written by
/// hand, a hundred such initialisers differed only in names, and a field added to the type but not to its initialiser
/// was a compile error far from the change. This macro writes the initialiser from the stored properties, in their
/// order, so the type's fields are its one description.
///
/// The rules, those of Swift's own memberwise initialiser with one addition:
/// - one parameter per stored instance property, labelled with its name, in declaration order;
/// - a property's initial value is the parameter's default; a `let` with an initial value, or a property with one whose
///   setter is private (`private`, `fileprivate`, `private(set)`; an optional `var` starts as nil), is not a parameter: it
///   cannot be set again, or it is the type's own state;
/// - an optional property (`T?`) defaults to `nil`, `let` or `var` alike (Swift does this for `var` only);
/// - a closure property's parameter is `@escaping`;
/// - computed, `lazy` and `static` properties and properties of nested types are not parameters.
/// A property without a written type is an error at the property: the macro cannot infer one.
@attached(member, names: named(init))
public macro MemberwiseInit() = #externalMacro(module: "MemberwiseInitMacros", type: "MemberwiseInitMacro")
