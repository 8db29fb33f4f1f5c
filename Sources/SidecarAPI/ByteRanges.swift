/// What to send for a GET of a file of `size` bytes given its `Range` and `If-Range` request headers (RFC 9110 §14):
/// the whole file, one part of it, or nothing (416). Pure: tested by a table.
///
/// Why the clip route needs it: Safari on iPhone and iPad (AVFoundation) plays MP4 over HTTP only with byte ranges, and
/// every browser seeks through them. The choices, each allowed by the RFC: an unknown unit or a malformed
/// `bytes=` value is ignored (the whole file, 200); several ranges are answered with one part that covers them all
/// (no multipart body); `If-Range` is compared with the strong ETag, and a date or another tag sends the whole file.
enum ByteRanges {
    enum Answer: Equatable {
        /// 200, the whole file.
        case whole
        /// 206 with `Content-Range: bytes first-last/size`.
        case part(ClosedRange<Int>)
        /// 416 with `Content-Range: bytes */size`.
        case unsatisfiable
    }

    static func answer(range: String?, ifRange: String?, etag: String, size: Int) -> Answer {
        guard let range else { return .whole }
        if let ifRange, ifRange.trimmingCharacters(in: .whitespaces) != etag || etag.hasPrefix("W/") { return .whole }
        let trimmed = range.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        var parts: [ClosedRange<Int>] = []
        var satisfiable = false
        for spec in trimmed.dropFirst(6).split(separator: ",", omittingEmptySubsequences: false) {
            let spec = spec.trimmingCharacters(in: .whitespaces)
            guard let dash = spec.firstIndex(of: "-") else { return .whole }
            let first = spec[..<dash], last = spec[spec.index(after: dash)...]
            guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit), !(first.isEmpty && last.isEmpty) else {
                return .whole
            }
            if first.isEmpty {
                // A suffix: the last n bytes (n = 0 is unsatisfiable; more than the file is the whole file).
                guard let n = Int(last) else { return .whole }
                guard n > 0, size > 0 else { continue }
                satisfiable = true
                parts.append(max(0, size - n)...(size - 1))
            } else {
                guard let start = Int(first) else { return .whole }
                let end = last.isEmpty ? Int.max : (Int(last) ?? Int.max)
                guard end >= start else { return .whole }  // first > last: an invalid range-spec, so the field is ignored
                guard start < size else { continue }
                satisfiable = true
                parts.append(start...min(end, size - 1))
            }
        }
        guard satisfiable, let low = parts.map(\.lowerBound).min(), let high = parts.map(\.upperBound).max() else {
            return .unsatisfiable
        }
        return .part(low...high)
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
