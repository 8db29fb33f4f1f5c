import Foundation
import Ingest
import IngestServer
import Testing
import TestSupport

/// CMAF Interface-2 DASH through `pushav record --dash --push` to the in-process receiver over mutual TLS.
@Suite(.timeLimit(.minutes(2))) struct DASHUploadTests {
    /// Per session, with refused attempts on both kinds of lane and one header whose answer is lost (the receiver
    /// stores it, the client times out and the strict receiver refuses the copies as duplicates: counted delivered,
    /// unconfirmed, exit 0 — CI once saw a slow answer end this run with "given up"): the dynamic MPD arrives before
    /// the session's first header, the static MPD after its last segment; what is stored at the end is the static MPD, byte-identical to the local one, and FFmpeg's dash
    /// demuxer decodes every frame of the uploaded session through it.
    @Test func manifestsFrameEachSessionsUploadsAndTheStaticOnePlays() async throws {
        let ingest = try await ServeIngest(strict: .dash)
        let directory = ingest.directory, pki = ingest.pki, root = ingest.root
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = Fixtures.packageRoot.appendingPathComponent("TestMedia/a_720p30_h264_main.mp4")
        let server = try await ingest.start()
        // Refused attempts hold the manifest lane back while the track lanes could go ahead, and the other way round:
        // the order must come from the uploader, not from timing.
        ingest.endpoint.inject(.status(503), times: 2, matching: "index.mpd")
        ingest.endpoint.inject(.status(503), times: 3, matching: "/video/segment_")
        ingest.endpoint.inject(.storeThenLoseTheAnswer, matching: "session_1/audio/audio.init")
        // And a dynamic MPD stored twice (CI once saw that too): its first answer is lost, the resend is taken.
        ingest.endpoint.inject(.storeThenLoseTheAnswer, matching: "session_2/index.mpd")
        let out = directory.appendingPathComponent("out")
        let result = try await Fixtures.run(Fixtures.pushav.path, [
            "record", input.path, "--out", out.path, "--dash", "--initial", "3", "--augmentation", "1",
            "--max-duration", "4", "--blind", "2", "--segment-duration", "2000", "--chunk-duration", "1000", "--no-clip",
            // Short retry delays: the refusals and the lost answer test the order and the outcome, not the backoff.
            "--max-backoff", "250",
            "--push", "https://localhost:\(server.port)/", "--ca", pki.path("ca.pem"),
            "--cert", pki.path("client.pem"), "--key", pki.path("client.key"),
        ])
        let arrivals = ingest.endpoint.storedPaths
        await server.stop()
        try #require(result.status == 0, "\(result.output)")
        // The header whose answer is lost is unconfirmed; on a loaded machine another object's answer may come after its
        // deadline too, and it is then unconfirmed the same way: every one listed must have had an attempt unanswered.
        let unconfirmedLine = result.output.split(separator: "\n").first { $0.contains("object(s) unconfirmed") }
        let unconfirmed = unconfirmedLine.flatMap { $0.split(separator: ": ").last }
            .map { $0.split(separator: ", ").map(String.init) } ?? []
        #expect(unconfirmed.contains("session_1/audio/audio.init"), "\(result.output)")
        for object in unconfirmed {
            #expect(result.output.split(separator: "\n").contains { $0.contains("object=\(object) outcome=no answer") },
                    "\(object) is unconfirmed without an unanswered attempt: \(result.output)")
        }
        let copies = ingest.endpoint.arrivals.filter { $0.path == "session_1/audio/audio.init" }.map(\.status)
        #expect(copies.first == 201 && copies.count >= 4 && copies.dropFirst().allSatisfy { $0 == 400 }, "\(copies)")
        #expect(arrivals.filter { $0 == "session_2/index.mpd" }.count >= 3, "dynamic twice, then static: \(arrivals)")
        let sessions = Set(arrivals.compactMap { $0.split(separator: "/").first.map(String.init) }).sorted()
        try #require(sessions.count == 2, "two motion clips: \(arrivals)")
        for session in sessions {
            let mine = arrivals.enumerated().filter { $0.element.hasPrefix(session + "/") }
            let manifests = mine.filter { $0.element == "\(session)/index.mpd" }.map(\.offset)
            let media = mine.filter { $0.element != "\(session)/index.mpd" }.map(\.offset)
            // At least once: a dynamic MPD whose answer came too late is sent again (the receiver takes both), so
            // there may be more than two; every one but the static last comes before the session's media.
            try #require(manifests.count >= 2 && media.count >= 4, "\(session): \(mine)")
            #expect(manifests.dropLast().allSatisfy { $0 < media.min()! } && manifests.last! > media.max()!,
                    "\(session): \(mine.map(\.element))")
            let local = FileManager.default.contents(atPath: out.appendingPathComponent("\(session)/index.mpd").path)
            let stored = FileManager.default.contents(atPath: root.appendingPathComponent("\(session)/index.mpd").path)
            #expect(stored != nil && stored == local)
            #expect(stored.map { String(decoding: $0, as: UTF8.self).contains(#"type="static""#) } == true)
            for path in media.map({ arrivals[$0] }) {
                #expect(FileManager.default.contents(atPath: root.appendingPathComponent(path).path)
                        == FileManager.default.contents(atPath: out.appendingPathComponent(path).path), "\(path)")
            }
            let mpd = root.appendingPathComponent("\(session)/index.mpd").path
            let frames = try await Shell.run("ffprobe -v error -allowed_extensions ALL -count_frames -select_streams v:0 "
                + "-show_entries stream=nb_read_frames -of csv=p=0 '\(mpd)'")
            let segments = media.map { arrivals[$0] }.filter { $0.contains("/video/segment_") }.sorted()
            var concatenated = try Data(contentsOf: root.appendingPathComponent("\(session)/video/video.init"))
            for segment in segments { concatenated += try Data(contentsOf: root.appendingPathComponent(segment)) }
            let track = directory.appendingPathComponent("\(session)-video.mp4")
            try concatenated.write(to: track)
            let reference = try await Shell.run("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                + "stream=nb_read_frames -of csv=p=0 '\(track.path)'")
            let count = { (text: String) in text.split(separator: "\n").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
            #expect(count(frames) != nil && count(frames) == count(reference), "MPD \(frames), track \(reference)")
        }
    }

    /// The receiver refuses an index.mpd that is not a DASH MPD, and accepts one that is.
    @Test(arguments: [
        ("<MPD type=\"static\"/>", 201),
        ("<MPD type=\"live\"/>", 400),
        ("<Playlist/>", 400),
        ("not xml <", 400),
    ])
    func receiverChecksTheManifest(body: String, status: Int) throws {
        let directory = try Fixtures.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = IngestStore(root: directory)
        let answer = store.accept(path: "/cam/session_4/index.mpd", body: Array(body.utf8))
        #expect(answer.status == status, "\(answer.message)")
    }
}
