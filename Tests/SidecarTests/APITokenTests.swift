import Foundation
import Sidecar
import Testing
import TestSupport

/// The token file `tokenFile` / `--token-file` names: one RFC 6750 token of at least 16 characters.
@Suite struct APITokenTests {
    /// (file contents, the token read, or nil when refused)
    static let files: [(String, String?)] = [
        ("0123456789abcdef0123456789abcdef\n", "0123456789abcdef0123456789abcdef"),
        ("  k3y-with.all_the~allowed+chars/==  \n", "k3y-with.all_the~allowed+chars/=="),
        ("0123456789abcdef", "0123456789abcdef"),
        ("0123456789abcde\n", nil),  // 15 characters
        ("", nil),
        ("\n", nil),
        ("two tokens0123456789", nil),
        ("0123456789abcdef\n0123456789abcdef\n", nil),
        ("0123456789abcdef=x", nil),  // `=` only as padding at the end
        ("=0123456789abcdef", nil),
        ("0123456789abcdéf0", nil),
    ]

    @Test(arguments: files.indices)
    func tokenFileIsReadOrRefused(index: Int) async throws {
        let (contents, expected) = Self.files[index]
        let directory = try TestPaths.scratchDirectory("token-\(index)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("token").path
        let read = try await BlockingWork.run { () -> Result<String, ConfigurationError> in
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
            return Result { () throws(ConfigurationError) in try APIToken.read(path: path, key: "tokenFile") }
        }
        switch read {
        case .success(let token): #expect(token == expected, "\(contents.debugDescription)")
        case .failure(let error):
            #expect(expected == nil, "\(contents.debugDescription): \(error)")
            #expect(error.key == "tokenFile")
        }
    }

    @Test func missingFileIsOneError() async throws {
        let error = try await BlockingWork.run { () -> ConfigurationError? in
            do throws(ConfigurationError) {
                _ = try APIToken.read(path: "/nonexistent/pushav-token", key: "--token-file")
                return nil
            } catch { return error }
        }
        #expect(error?.description == "--token-file: cannot read the token file /nonexistent/pushav-token: No such file or directory")
    }
}
