import Foundation

/// Finds the field of a number that does not fit its type, and the range that does.
///
/// Foundation's JSONDecoder on Linux reports a number that does not fit the field (70000 or -1 for a UInt16, 1.5
/// for an integer) as "not valid JSON" with no coding path. When the body is valid JSON, this retries the decode
/// with each suspicious number (negative, fractional or above 255) set to 0, and names the first one whose
/// replacement gets the decoder past that point; then it tries that field at the edges of the integer widths to
/// say which range the field takes (`zoneID: must be an integer 0…65535; got 70000`). Bounded: at most
/// `maxCandidates` retries to find the field and four per width to find its range, only for a request already
/// refused, and only on a body of at most `maxProbedBytes`: every command's body is far smaller, and a 64 KiB body
/// (the API's cap) was decoded up to 400 times per request (issue 47's review). A larger one gets the decoder's own
/// refusal.
enum NumberRangeProbe {
    static let maxCandidates = 16
    static let maxProbedBytes = 8 << 10

    private enum Step { case key(String), index(Int) }

    /// The widths a field of the API can have, narrowest first: the first whose edges decode and whose next values
    /// do not is the field's.
    private static let widths: [(min: Int64, max: Int64)] = [
        (Int64(UInt8.min), Int64(UInt8.max)), (Int64(Int8.min), Int64(Int8.max)),
        (Int64(UInt16.min), Int64(UInt16.max)), (Int64(Int16.min), Int64(Int16.max)),
        (Int64(UInt32.min), Int64(UInt32.max)), (Int64(Int32.min), Int64(Int32.max)),
    ]

    /// `decode` stands for the body's type (``RequestBodyTypes`` keeps them by operation). Returns the refusal's text,
    /// naming the field (and its range, where one of ``widths`` is it).
    static func refusal(decoding decode: (Data) throws -> Void, from data: Data) -> String? {
        guard data.count <= maxProbedBytes, let root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        var candidates: [[Step]] = []
        collect(root, path: [], into: &candidates)
        /// Whether the body decodes past its numbers with `value` at `path` (another kind of error may still follow).
        func fits(_ value: Any, at path: [Step]) -> Bool {
            let patched = replacing(root, at: path[...], with: value)
            guard let patchedData = try? JSONSerialization.data(withJSONObject: patched, options: [.fragmentsAllowed]) else {
                return false
            }
            do {
                try decode(patchedData)
                return true
            } catch let DecodingError.dataCorrupted(context) where context.codingPath.isEmpty {
                return false  // another number is still out of range, or this one was not the culprit
            } catch {
                return true
            }
        }
        for path in candidates.prefix(maxCandidates) where fits(0, at: path) {
            let field = describe(path)
            let number = value(at: path[...], in: root) as? NSNumber
            let given = number.map { "\($0)" } ?? "?"
            let width = widths.first { width in
                fits(NSNumber(value: width.max), at: path) && !fits(NSNumber(value: width.max + 1), at: path)
                    && fits(NSNumber(value: width.min), at: path) && !fits(NSNumber(value: width.min - 1), at: path)
            }
            if let width { return integerRefusal(field, min: width.min, max: width.max, got: given) }
            // A field as wide as the document's integer (its width is checked once it is read): only a fraction
            // stops it here.
            if let number, number.doubleValue.rounded() != number.doubleValue { return "\(field): must be an integer; got \(given)" }
            return "\(field): number out of range for this field; got \(given)"
        }
        return nil
    }

    /// The one text of a number outside its integer field, for the probe and for the handlers that narrow the
    /// document's integers themselves (``SidecarOperations/integer(_:_:as:)``).
    static func integerRefusal(_ field: String, min: some BinaryInteger, max: some BinaryInteger, got given: String) -> String {
        "\(field): must be an integer \(min)…\(max); got \(given)"
    }

    private static func value(at path: ArraySlice<Step>, in node: Any) -> Any? {
        guard let step = path.first else { return node }
        switch (step, node) {
        case (.key(let key), let object as [String: Any]): return object[key].flatMap { value(at: path.dropFirst(), in: $0) }
        case (.index(let index), let array as [Any]) where array.indices.contains(index):
            return value(at: path.dropFirst(), in: array[index])
        default: return nil
        }
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
