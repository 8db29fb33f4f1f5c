import Foundation
import Testing
import TestSupport

/// The status page plays what the spool already holds (issue 30): a delivered recording's tracks stay in the spool as
/// a recent recording, and the clip route serves them as one fragmented MP4 — a `moov` made for it, then the segments
/// the ingest stored, box for box (only `mfhd` sequence numbers may differ: one count over the file), no second copy
/// written — with byte ranges; the clip and its thumbnail survive a restart.
extension ServeEndToEndTests {
    @Test func theClipRouteServesTheSpoolsRecordingAndItSurvivesARestart() async throws {
        let ingest = try await ServeIngest("recentclip")
        defer { try? FileManager.default.removeItem(at: ingest.directory) }
        let server = try await ingest.start()
        var serve = try await Serve(directory: ingest.directory, media: Self.media)
        do {
            let (id, events) = try await serve.activeCommandConnection(to: ingest, port: server.port)
            // A thumbnail is the latest analysed picture: the trigger waits for pictures, not only packets.
            try await serve.waitForFrames(5)
            try await serve.trigger(id, initial: 3, max: 6)
            try await events.wait("End of session 1", timeout: .seconds(20)) { $0.contains { !$0.isBegin && $0.session == 1 } }
            try await Fixtures.waitUntil("session 1 delivered and listed", timeout: .seconds(30)) {
                let clips = try await serve.camera()["recentClips"] as? [[String: Any]] ?? []
                return try await serve.pendingUploads() == 0 && clips.contains { $0["clip"] as? String != nil }
            }
            events.stop()
            // What the ingest stored of the video track's segments, in playing order (the transport records no audio).
            let folder = ingest.root.appendingPathComponent("session_1/video")
            var stored: [UInt8] = []
            for segment in try FileManager.default.contentsOfDirectory(atPath: folder.path).filter({ $0.hasSuffix(".m4s") }).sorted() {
                stored += try Data(contentsOf: folder.appendingPathComponent(segment))
            }
            /// Top-level boxes as (type, bytes), an `mfhd` sequence number zeroed in each `moof` (its first child).
            func boxes(_ bytes: [UInt8]) -> [(String, [UInt8])] {
                var result: [(String, [UInt8])] = []
                var offset = 0
                while offset + 8 <= bytes.count {
                    let size = bytes[offset ..< offset + 4].reduce(0) { $0 << 8 | Int($1) }
                    guard size >= 8, offset + size <= bytes.count else { return result + [("bad", [])] }
                    let type = String(decoding: bytes[offset + 4 ..< offset + 8], as: UTF8.self)
                    var box = Array(bytes[offset ..< offset + size])
                    if type == "moof", box.count >= 24 { box.replaceSubrange(20 ..< 24, with: [0, 0, 0, 0]) }
                    result.append((type, box))
                    offset += size
                }
                return result
            }
            let path = "/v1/cameras/cam1/clips/\(id)/1"
            // A baseline JPEG's size from its start of frame (FF C0: precision, height, width).
            func size(_ jpeg: [UInt8]) -> [Int]? {
                jpeg.indices.dropLast(9).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 }
                    .map { [Int(jpeg[$0 + 7]) << 8 | Int(jpeg[$0 + 8]), Int(jpeg[$0 + 5]) << 8 | Int(jpeg[$0 + 6])] }
            }
            var sizes: [[Int]?] = []
            for run in 1...2 {
                let (status, whole) = try await serve.bytes(path)
                #expect(status == 200 && whole.contentType == "video/mp4", "run \(run)")
                let served = boxes(whole.body)
                #expect(served.prefix(2).map(\.0) == ["ftyp", "moov"], "run \(run): \(served.map(\.0))")
                let expected = boxes(stored)
                #expect(served.dropFirst(2).map(\.0) == expected.map(\.0) && served.dropFirst(2).map(\.1) == expected.map(\.1),
                        "run \(run): the clip's segments are the stored ones, box for box")
                let (partial, text) = try await serve.request(.GET, path, headers: [("Range", "bytes=0-7")])
                #expect(partial == 206 && text.utf8.count == 8, "run \(run)")
                let (thumbnail, jpeg) = try await serve.bytes(path + "/thumbnail.jpg")
                #expect(thumbnail == 200 && jpeg.body.starts(with: [0xFF, 0xD8]), "run \(run)")
                sizes.append(size(jpeg.body))
                let clips = try #require(try await serve.camera()["recentClips"] as? [[String: Any]])
                let clip = try #require(clips.first { $0["connectionID"] as? Int == id && $0["cmafSessionNumber"] as? Int == 1 })
                #expect(clip["clip"] as? String == path && clip["thumbnail"] as? String == path + "/thumbnail.jpg", "\(clip)")
                #expect(clip["endReason"] as? String == "motionDetectedDuration", "\(clip)")
                guard run == 1 else { break }
                #expect(try await serve.stop(SIGTERM))
                try await serve.shutdown()
                serve = try await Serve(directory: ingest.directory, source: TestPaths.media(Self.media).path, run: 2)
                try await serve.waitUntilStreaming()
            }
            // After the restart the thumbnail is made from the kept recording (nothing was stored): the same size.
            #expect(sizes.count == 2 && sizes[0] == [320, 180] && sizes[1] == sizes[0], "\(sizes)")
            // The playable clip decodes: ffprobe counts the frames of the served body.
            let file = ingest.directory.appendingPathComponent("served.mp4")
            try Data(try await serve.bytes(path).response.body).write(to: file)
            let frames = try await Shell.run("ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 '\(file.path)'")
            #expect((Int(frames.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 60, "\(frames)")
            // No second copy: nothing under the recording folder but what is being written.
            let clipsFolder = ingest.directory.appendingPathComponent("state/recording/cam1/connection-\(id)/clips")
            #expect(!FileManager.default.fileExists(atPath: clipsFolder.path))
        } catch {
            Issue.record("\(error)\n\(serve.process.output)")
        }
        try await serve.shutdown()
        await server.stop()
    }
}
