import CFFmpeg

/// A failed FFmpeg call: the operation we attempted, FFmpeg's negative return code and its `av_strerror` text.
public struct FFmpegError: Error, Sendable, Equatable, CustomStringConvertible {
    public let operation: String
    public let code: Int32
    public let message: String

    public init(_ operation: String, code: Int32) {
        self.operation = operation
        self.code = code
        self.message = FFmpegError.text(for: code)
    }

    public var description: String { "\(operation): \(message)" }

    static func text(for code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        if av_strerror(code, &buffer, buffer.count) < 0 { return "error \(code)" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Throws when `code` is negative; returns it otherwise (some calls return a count).
    @discardableResult
    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(FFmpegError) -> Int32 {
        if code < 0 { throw FFmpegError(operation(), code: code) }
        return code
    }

    static func outOfMemory(_ operation: String) -> FFmpegError { FFmpegError(operation, code: CFFmpeg_AVERROR(ENOMEM)) }
}

/// A media problem that is not a failing FFmpeg call: no video stream, a codec we cannot carry or transcode, …
public struct MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
