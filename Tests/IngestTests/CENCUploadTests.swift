import Foundation
import Testing
import TestSupport

/// A transport with CENCKey and CENCKeyID: `pushav record --transport … --push` uploads only protected media, and
/// FFmpeg decrypts what arrived to exactly the frames of the same recording made in the clear.
@Suite(.timeLimit(.minutes(2))) struct CENCUploadTests {
    static let key = "00112233445566778899aabbccddeeff"
    static let keyID = "0102030405060708090a0b0c0d0e0f10"

    static func base64(_ hex: String) -> String {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index ..< next], radix: 16)!)
            index = next
        }
        return Data(bytes).base64EncodedString()
    }

    static func transport(encrypted: Bool) -> String {
        let cenc = encrypted ? #", "cencKey": "\#(base64(key))", "cencKeyID": "\#(base64(keyID))""# : ""
        return """
            {"streamUsage": 1, "tlsEndpointID": 1, "url": "https://ingest.example/", "ingestMethod": 0, "audioStreamID": 2,
             "triggerOptions": {"triggerType": 2},
             "containerOptions": {"containerType": 0, "cmafContainerOptions": {"cmafInterface": 0, "segmentDuration": 2000,
                                  "chunkDuration": 1000\(cenc)}}}
            """
    }

    /// Per-frame hashes of a track file (header + segments), decrypted with `key` when given. FFmpeg 5.1 maps the
    /// encryption info of fragments wrongly when it indexes a seekable file up front, so the file is read as a stream.
    static func frames(_ file: URL, key: String? = nil) async throws -> [String] {
        let decrypt = key.map { "-seekable 0 -decryption_key \($0)" } ?? ""
        let text = try await Shell.run("ffmpeg -nostdin -v error \(decrypt) -i '\(file.path)' -f framemd5 - 2>/dev/null || true")
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
    }

    @Test func uploadedMediaIsProtectedAndDecryptsToTheClearFrames() async throws {
        let ingest = try await ServeIngest()
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        let directory = ingest.directory, pki = ingest.pki
        let input = Fixtures.packageRoot.appendingPathComponent("TestMedia/a_720p30_h264_main.mp4").path
        var outputs: [Bool: URL] = [:]
        for encrypted in [true, false] {
            let document = directory.appendingPathComponent("transport-\(encrypted).json")
            try Self.transport(encrypted: encrypted).write(to: document, atomically: true, encoding: .utf8)
            let out = directory.appendingPathComponent(encrypted ? "encrypted" : "clear")
            outputs[encrypted] = out
            let upload = encrypted
                ? ["--push", "https://localhost:\(server.port)/", "--ca", pki.path("ca.pem"), "--cert", pki.path("client.pem"),
                   "--key", pki.path("client.key")]
                : ["--no-push"]
            let result = try await Fixtures.run(Fixtures.pushav.path, ["record", input, "--out", out.path, "--transport", document.path] + upload)
            try #require(result.status == 0, "\(result.output)")
        }
        await server.stop()
        let arrived = ingest.endpoint.storedPaths
        try #require(arrived.count >= 20, "\(arrived)")
        // What arrived is what was written locally, protected: the sample entries are encv/enca with the key ID.
        for path in arrived {
            let local = FileManager.default.contents(atPath: outputs[true]!.appendingPathComponent(path).path)
            let stored = FileManager.default.contents(atPath: ingest.root.appendingPathComponent(path).path)
            #expect(stored != nil && stored == local, "\(path)")
        }
        let inspect = try await Fixtures.run(Fixtures.pushav.path, ["inspect", "--chunked", ingest.root.appendingPathComponent("session_1").path])
        #expect(inspect.status == 0, "\(inspect.output)")
        #expect(inspect.output.components(separatedBy: "encrypted (cenc, KID \(Self.keyID))").count == 3, "\(inspect.output)")

        for track in ["video", "audio"] {
            func concatenated(_ root: URL, _ name: String) throws -> URL {
                let folder = root.appendingPathComponent("session_1/\(track)")
                var bytes = try Data(contentsOf: folder.appendingPathComponent("\(track).init"))
                let segments = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".m4s") }.sorted()
                for segment in segments { bytes += try Data(contentsOf: folder.appendingPathComponent(segment)) }
                let file = directory.appendingPathComponent("\(name)-\(track).mp4")
                try bytes.write(to: file)
                return file
            }
            let protected = try concatenated(ingest.root, "arrived")
            let clear = try concatenated(outputs[false]!, "clear")
            let clearFrames = try await Self.frames(clear)
            try #require(clearFrames.count > 100, "\(track): \(clearFrames.count) clear frames")
            #expect(try await Self.frames(protected, key: Self.key) == clearFrames, "\(track): decrypted frames differ")
            #expect(try await Self.frames(protected, key: "000102030405060708090a0b0c0d0e0f") != clearFrames,
                    "\(track): the wrong key decrypts too")
        }
    }
}
