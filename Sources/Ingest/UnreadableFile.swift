import Foundation

/// Why a file could not be read, in the system's words: `FileManager.contents(atPath:)` answers only nil, and "cannot
/// read nope.yaml" left a user to guess between a typo, a permission and a folder.
public enum UnreadableFile {
    public static func reason(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return String(cString: strerror(errno)) }
        if (info.st_mode & S_IFMT) == S_IFDIR { return "it is a folder" }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        close(fd)
        return "it could not be read whole"
    }
}
