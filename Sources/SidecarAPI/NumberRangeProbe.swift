import Foundation

/// Finds the field of a number that does not fit its type.
///
/// Foundation's JSONDecoder on Linux reports a number that does not fit the field (70000 or -1 for a UInt16, 1.5
/// for an integer) as "not valid JSON" with no coding path. When the body is valid JSON, this retries the decode
/// with each suspicious number (negative, fractional or above 255) set to 0, and names the first one whose
/// replacement gets the decoder past that point. Bounded: at most `maxCandidates` retries on a body the API
/// already capped at 64 KiB.
enum NumberRangeProbe {
    static let maxCandidates = 16

    private enum Step { case key(String), index(Int) }

    /// `decode` stands for the body's type (``RequestBodyTypes`` keeps them by operation).
    static func field(decoding decode: (Data) throws -> Void, from data: Data) -> String? {
        guard let root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        var candidates: [[Step]] = []
        collect(root, path: [], into: &candidates)
        for path in candidates.prefix(maxCandidates) {
            let patched = replacing(root, at: path[...], with: 0)
            guard let patchedData = try? JSONSerialization.data(withJSONObject: patched, options: [.fragmentsAllowed]) else { continue }
            do {
                try decode(patchedData)
                return describe(path)
            } catch let DecodingError.dataCorrupted(context) where context.codingPath.isEmpty {
                continue  // another number is still out of range, or this one was not the culprit
            } catch {
                return describe(path)
            }
        }
        return nil
    }

    private static func collect(_ value: Any, path: [Step], into candidates: inout [[Step]]) {
        guard candidates.count < maxCandidates else { return }
        switch value {
        case let object as [String: Any]:
            for key in object.keys.sorted() { collect(object[key]!, path: path + [.key(key)], into: &candidates) }
        case let array as [Any]:
            for (index, element) in array.enumerated() { collect(element, path: path + [.index(index)], into: &candidates) }
        case is Bool, is String:
            break
        case let number as NSNumber:
            let double = number.doubleValue
            if double < 0 || double.rounded() != double || double > 255 { candidates.append(path) }
        default:
            break
        }
    }

    private static func replacing(_ value: Any, at path: ArraySlice<Step>, with replacement: Any) -> Any {
        guard let step = path.first else { return replacement }
        switch (step, value) {
        case (.key(let key), var object as [String: Any]):
            if let child = object[key] { object[key] = replacing(child, at: path.dropFirst(), with: replacement) }
            return object
        case (.index(let index), var array as [Any]) where array.indices.contains(index):
            array[index] = replacing(array[index], at: path.dropFirst(), with: replacement)
            return array
        default:
            return value
        }
    }

    private static func describe(_ path: [Step]) -> String {
        var text = ""
        for step in path {
            switch step {
            case .key(let key): text += text.isEmpty ? key : "." + key
            case .index(let index): text += "[\(index)]"
            }
        }
        return text.isEmpty ? "body" : text
    }
}
