import Foundation
import Yams

/// A configuration the service refuses to start with; `key` is the offending key's path.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var key: String
    public var message: String
    public var file: String?

    public init(key: String, message: String, file: String? = nil) {
        self.key = key
        self.message = message
        self.file = file
    }

    public var description: String {
        (file.map { "\($0): " } ?? "") + (key.isEmpty ? message : "\(key): \(message)")
    }
}

/// A YAML mapping whose keys are checked against the ones a section knows.
struct ConfigurationMapping {
    let mapping: Node.Mapping
    let path: String

    init(_ node: Node, path: String, known: Set<String>) throws(ConfigurationError) {
        guard let mapping = node.mapping else {
            throw ConfigurationError(key: path, message: "expected a mapping of \(known.sorted().joined(separator: ", "))")
        }
        for key in mapping.keys {
            guard let name = key.string, known.contains(name) else {
                throw ConfigurationError(key: Self.join(path, key.string ?? "?"),
                                         message: "unknown key (known here: \(known.sorted().joined(separator: ", ")))")
            }
        }
        self.mapping = mapping
        self.path = path
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func optional<T>(_ key: String, _ parse: (Node, String) throws(ConfigurationError) -> T) throws(ConfigurationError) -> T? {
        guard let node = mapping[Node(key)], node != Node("~"), node.null == nil else { return nil }
        return try parse(node, Self.join(path, key))
    }

    func required<T>(_ key: String, _ parse: (Node, String) throws(ConfigurationError) -> T) throws(ConfigurationError) -> T {
        guard let value = try optional(key, parse) else {
            throw ConfigurationError(key: Self.join(path, key), message: "required")
        }
        return value
    }
}

extension Node {
    func text(_ path: String) throws(ConfigurationError) -> String {
        guard case .scalar(let scalar) = self else { throw ConfigurationError(key: path, message: "expected a string") }
        return scalar.string
    }

    func nonEmptyText(_ path: String) throws(ConfigurationError) -> String {
        let value = try text(path)
        guard !value.isEmpty else { throw ConfigurationError(key: path, message: "must not be empty") }
        return value
    }

    func integer(_ path: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard case .scalar = self, let value = int else {
            throw ConfigurationError(key: path, message: "expected an integer, got \(describedValue)")
        }
        guard range.contains(value) else {
            throw ConfigurationError(key: path, message: "must be \(range.lowerBound)…\(range.upperBound), got \(value)")
        }
        return value
    }

    func number(_ path: String) throws(ConfigurationError) -> Double {
        guard case .scalar = self, let value = float ?? int.map(Double.init), value.isFinite else {
            throw ConfigurationError(key: path, message: "expected a number, got \(describedValue)")
        }
        return value
    }

    func boolean(_ path: String) throws(ConfigurationError) -> Bool {
        guard case .scalar = self, let value = bool else {
            throw ConfigurationError(key: path, message: "expected true or false, got \(describedValue)")
        }
        return value
    }

    func list<T>(_ path: String, _ element: (Node, String) throws(ConfigurationError) -> T) throws(ConfigurationError) -> [T] {
        guard case .sequence(let sequence) = self else {
            throw ConfigurationError(key: path, message: "expected a list, got \(describedValue)")
        }
        var result: [T] = []
        for (index, item) in sequence.enumerated() { result.append(try element(item, "\(path)[\(index)]")) }
        return result
    }

    private var describedValue: String {
        switch self {
        case .scalar(let scalar): "\"\(scalar.string)\""
        case .mapping: "a mapping"
        case .sequence: "a list"
        }
    }
}
