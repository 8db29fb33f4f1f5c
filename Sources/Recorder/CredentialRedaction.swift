import Logging

/// Camera URLs carry their credentials (`rtsp://user:password@camera/stream`), and FFmpeg's errors, our own
/// messages and the status API all quote the URL they are about. This removes the userinfo of every URL in a text,
/// wherever it appears (`rtsp://***@camera/stream`), so no log line, error or response repeats a password.
public enum CredentialRedaction {
    /// What replaces a URL's `user:password`.
    public static let placeholder = "***"

    /// `text` with the userinfo of every `scheme://userinfo@host` in it replaced by ``placeholder``.
    public static func redact(_ text: String) -> String {
        // Most text has no URL with credentials: a cheap test keeps log lines from paying for the scan.
        guard text.contains("://"), text.contains("@") else { return text }
        return text.replacing(userinfo) { match in "\(match.output.1)\(placeholder)@" }
    }

    /// A scheme, `://`, then userinfo up to the *last* `@` before the authority ends (RFC 3986's authority ends at
    /// the first `/`, `?` or `#`; white space ends a URL in prose), so a password with an unencoded `@` goes whole.
    nonisolated(unsafe) private static let userinfo = /([A-Za-z][A-Za-z0-9+.\-]*:\/\/)[^\/?#\s]*@/
}

/// A log handler that redacts URL credentials (``CredentialRedaction``) from every message and metadata value before
/// handing the entry to `wrapped`. `pushav` installs it around its standard-error handler, so every line of every
/// command — FFmpeg's messages and errors quoting an input URL included — is covered in one place.
public struct RedactingLogHandler: LogHandler {
    public var wrapped: any LogHandler

    public init(wrapping wrapped: any LogHandler) { self.wrapped = wrapped }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = "\(CredentialRedaction.redact(event.message.description))"
        // The handler's own metadata (a camera's `camera`, …) is merged by `wrapped`, explicit values winning: pass
        // the merged set, redacted, so none of it goes out unredacted.
        let merged = metadata.merging(event.metadata ?? [:]) { _, explicit in explicit }
        event.metadata = merged.isEmpty ? event.metadata : merged.mapValues(Self.redact)
        if let error = event.error { event.error = RedactedError(description: CredentialRedaction.redact("\(error)")) }
        wrapped.log(event: event)
    }

    /// An error as its redacted description.
    struct RedactedError: Error, CustomStringConvertible {
        var description: String
    }

    private static func redact(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(CredentialRedaction.redact(text))
        case .stringConvertible(let convertible): .string(CredentialRedaction.redact(convertible.description))
        case .array(let values): .array(values.map(redact))
        case .dictionary(let values): .dictionary(values.mapValues(redact))
        }
    }
}
