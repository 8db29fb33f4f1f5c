import ArgumentParser
import Foundation
import SidecarDemo
import SystemPackage

/// `pushav certificates make DIR`: the certificates a mutual-TLS upload needs, for a user with no PKI of their own.
struct CertificatesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certificates",
        abstract: "Make the certificates a mutual-TLS upload needs (a private CA, a server and a client certificate).",
        subcommands: [MakeCertificates.self])
}

struct MakeCertificates: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "make",
        abstract: "Write a private CA, a server certificate for --host and a client certificate into a folder.",
        discussion: """
            Writes into DIR (created if missing; existing files are never overwritten):
              ca.pem                      the CA both sides trust (give it to --ca and --client-ca)
              server.pem, server.key      the ingest's certificate and key (pushav receive --cert/--key)
              client.pem, client.key      the camera's certificate and key (--cert/--key of record --push,
                                          or a serve TLS endpoint)
            Keys are written with mode 0600. The CA's own key is not kept: nothing else can be signed with \
            it, so run this again (into a new folder) for new certificates. ECDSA P-256, valid for --days.

            Examples:
              pushav certificates make pki --host localhost,127.0.0.1
              pushav receive --root received --cert pki/server.pem --key pki/server.key \\
                  --client-ca pki/ca.pem
              pushav record video.mp4 --out out --push https://localhost:8443/cam/ \\
                  --ca pki/ca.pem --cert pki/client.pem --key pki/client.key
            """)

    @Argument(help: ArgumentHelp("The folder to write into.", valueName: "dir"))
    var directory: String

    @Option(name: .long, help: ArgumentHelp(
        "Names the server certificate covers, comma-separated: DNS names and IP addresses (v4 or v6).",
        valueName: "names"))
    var host: String = "localhost,127.0.0.1"

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "How long the certificates are valid, 1…3650 days.", valueName: "days"))
    var days: Int = 825

    func validate() throws {
        guard (1...3650).contains(days) else { throw ValidationError("--days must be 1…3650, got \(days)") }
        _ = try serverNames()
    }

    func serverNames() throws -> [LocalPKI.ServerName] {
        let words = host.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !words.isEmpty else { throw ValidationError("--host names no host") }
        return try words.map { word in
            guard let name = LocalPKI.ServerName(word) else {
                throw ValidationError("--host: '\(word)' is neither a DNS name nor an IP address")
            }
            return name
        }
    }

    func run() throws {
        let names = try serverNames()
        let folder = URL(fileURLWithPath: directory)
        let pki = try LocalPKI(commonNamePrefix: "pushav", serverNames: names, validity: TimeInterval(days) * 86_400)
        let files: [(name: String, contents: String, mode: mode_t)] = [
            ("ca.pem", pki.caCertificatePEM, 0o644),
            ("server.pem", pki.serverCertificatePEM, 0o644), ("server.key", pki.serverKeyPEM, 0o600),
            ("client.pem", pki.clientCertificatePEM, 0o644), ("client.key", pki.clientKeyPEM, 0o600),
        ]
        // All or none: a folder that already holds one of them is left as it is (a second run never replaces the
        // certificates an ingest already trusts).
        let existing = files.map(\.name).filter { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) }
        if !existing.isEmpty {
            throw CLIError("\(directory) already holds \(existing.joined(separator: ", ")): choose a new folder")
        }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw CLIError(describing: error)
        }
        for file in files {
            try Self.create(folder.appendingPathComponent(file.name), file.contents, mode: file.mode)
        }
        let path = { (name: String) in folder.appendingPathComponent(name).path }
        StandardOutput.write("""
            wrote \(path("ca.pem")), \(path("server.pem")) + server.key (for \(names.map(\.description).joined(separator: ", "))), \
            \(path("client.pem")) + client.key; valid \(days) days
            an ingest:   pushav receive --root received --cert \(path("server.pem")) --key \(path("server.key")) --client-ca \(path("ca.pem"))
            a camera:    --ca \(path("ca.pem")) --cert \(path("client.pem")) --key \(path("client.key"))

            """)
    }

    /// Creates `url` with `mode` from the start (O_EXCL: never over a file; a key is never readable by others, not
    /// even for a moment), writes `text` and fsyncs it.
    static func create(_ url: URL, _ text: String, mode: mode_t) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw CLIError("cannot create \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        do {
            _ = try FileDescriptor(rawValue: fd).writeAll(text.utf8)
        } catch let error as Errno {
            throw CLIError("cannot write \(url.path): \(String(cString: strerror(error.rawValue)))")
        }
        guard fsync(fd) == 0 else { throw CLIError("cannot write \(url.path): \(String(cString: strerror(errno)))") }
        // The umask may have narrowed the mode; a certificate stays readable as intended.
        fchmod(fd, mode)
    }
}
