import Foundation

/// Another process (or another spool in this one) holds the spool's journal: a spool has one owner.
public struct SpoolInUse: Error, CustomStringConvertible {
    public let directory: URL
    public var description: String {
        "the spool at \(directory.path) is in use by another process (a second pushav on the same state or spool folder?)"
    }
}
