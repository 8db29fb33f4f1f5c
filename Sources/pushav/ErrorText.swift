import Foundation

/// One plain sentence for an error a command prints.
///
/// Foundation's file errors describe themselves as `Error Domain=NSCocoaErrorDomain Code=4 "The file doesn't exist."
/// UserInfo={…}` — the path and the system's reason are buried in a dictionary dump. A user needs the two facts the
/// dump holds: which path, and what the system said (`cannot create /proc/x: No such file or directory`). Every other
/// error is already written as a sentence by the code that throws it, and is kept as it is.
enum ErrorText {
    static func sentence(for error: any Error) -> String { fileErrorSentence(error) ?? "\(error)" }

    /// The sentence for one of Foundation's own file errors; nil for any other error (a Swift error bridged to
    /// NSError would describe itself as a dump too, so only these are rewritten).
    static func fileErrorSentence(_ error: any Error) -> String? {
        let cocoa: NSError
        if let error = error as? CocoaError {
            cocoa = error as NSError
        } else if type(of: error) is NSError.Type, (error as NSError).domain == NSCocoaErrorDomain {
            cocoa = error as NSError
        } else {
            return nil
        }
        let path = (cocoa.userInfo[NSFilePathErrorKey] as? String) ?? (cocoa.userInfo[NSURLErrorKey] as? URL)?.path
        let reason = posixCode(of: cocoa.userInfo[NSUnderlyingErrorKey]).map { String(cString: strerror($0)) }
            ?? fallbackReason(code: cocoa.code)
        // Foundation's codes: 256…511 are read errors, 512…767 write errors (NSFileReadUnknownError … NSFileWriteVolumeReadOnlyError).
        let operation = (256..<512).contains(cocoa.code) ? "cannot read" : "cannot create"
        guard let path else { return "\(operation) a file: \(reason)" }
        return "\(operation) \(path): \(reason)"
    }

    /// The errno an underlying error carries (Foundation puts it there as a POSIXError or an NSError of its domain).
    private static func posixCode(of underlying: Any?) -> Int32? {
        if let error = underlying as? POSIXError { return error.code.rawValue }
        if let error = underlying as? NSError, error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
        return nil
    }

    /// The system's words for Foundation's codes that carry no underlying POSIX error.
    private static func fallbackReason(code: Int) -> String {
        switch code {
        case CocoaError.fileNoSuchFile.rawValue, CocoaError.fileReadNoSuchFile.rawValue: String(cString: strerror(ENOENT))
        case CocoaError.fileReadNoPermission.rawValue, CocoaError.fileWriteNoPermission.rawValue: String(cString: strerror(EACCES))
        case CocoaError.fileWriteOutOfSpace.rawValue: String(cString: strerror(ENOSPC))
        case CocoaError.fileWriteVolumeReadOnly.rawValue: String(cString: strerror(EROFS))
        case CocoaError.fileWriteFileExists.rawValue: String(cString: strerror(EEXIST))
        default: "the file system refused it (Foundation error \(code))"
        }
    }
}
