import CMAF
import Domain
import Foundation
import MediaIO
import Timeline

/// Writes one session (one clip): a CMAF track per role, cut into segments and chunks by ``SegmentPlanner``, plus an
/// ordinary MP4 of the same packets.
///
/// Audio is cut at the media times video is cut at, to the audio frame. Demuxers interleave by decode time, so the
/// two tracks are out of step both ways: an audio packet can arrive before the video keyframe that decides the cut in
/// front of it (it waits in `pendingAudio` until the video decode time passes it, since no later cut can be earlier
/// than the latest video decode time), and a video cut can be decided before the audio in front of it has arrived
/// (the cut waits in `audioCuts` until the audio timeline reaches it).
final class SessionWriter {
    let layout: SessionLayout
    /// Session start on the input timeline: the presentation time of its first video keyframe.
    let start: MediaTime
    private var planner: SegmentPlanner
    private let video: TrackOutput
    private let videoFrameDuration: Int64
    private let audioSource: (any TrackConditioner)?
    private let audioCodec: String?
    private var audio: TrackOutput?
    private var pendingAudio: [Packet] = []
    private var audioCuts: [(time: MediaTime, endSegment: Bool)] = []
    private var videoDecodeFrontier: MediaTime
    /// PTS − DTS of the session's first keyframe, the shift that keeps later segments at it, and the earliest PTS
    /// the open segment may present (see ``keepCompositionOffset(_:startsSegment:)``).
    private var sessionCompositionOffset: Int64?
    private var compositionShift: Int64 = 0
    private var segmentPresentationFloor: Int64 = 0
    private var compositionRepairs = 0
    /// End of the latest-presented video frame, session-relative, video muxer ticks.
    private var videoEndTicks: Int64 = 0
    private var clip: ClipSink?
    private let files: SegmentFileWriter
    private let output: FileOutputQueue
    private let emit: (@Sendable (RecordingEvent) -> Void)?
    /// CMAF Interface-2 (DASH): `index.mpd` beside the tracks, dynamic first, static at the end.
    private let writesManifest: Bool
    private let encryption: CommonEncryption?
    private let segmentDuration: MediaTime

    init(
        layout: SessionLayout, start: MediaTime, video: any TrackConditioner, videoCodec: String, frameRate: Double?,
        audio: (any TrackConditioner)?, audioCodec: String?, segmentDuration: MediaTime, chunkDuration: MediaTime?,
        writeClip: Bool, manifest: Bool = false, encryption: CommonEncryption? = nil, writesFiles: Bool = true,
        emit: (@Sendable (RecordingEvent) -> Void)? = nil
    ) throws {
        self.encryption = encryption
        self.emit = emit
        writesManifest = manifest
        self.segmentDuration = segmentDuration
        emit?(.sessionStarted(session: layout.session, start: start.seconds))
        self.layout = layout
        self.start = start
        files = SegmentFileWriter(root: writesFiles ? layout.root : nil)
        output = FileOutputQueue(name: "pushav-output-\(layout.session)")
        planner = SegmentPlanner(segmentDuration: segmentDuration, chunkDuration: chunkDuration)
        self.video = try TrackOutput(kind: .video, conditioner: video, sourceCodec: videoCodec, start: start,
                                     layout: layout, files: files, output: output, emit: emit,
                                     encryption: encryption, announceHeader: !manifest)
        let ts = self.video.muxer.timeBase
        let fps = (frameRate ?? 0) > 0 ? frameRate! : 30
        videoFrameDuration = max(1, Int64((Double(ts.den) / Double(ts.num) / fps).rounded()))
        audioSource = audio
        self.audioCodec = audioCodec
        videoDecodeFrontier = start
        if manifest {
            // The dynamic MPD goes before any header: the audio header is written with the first audio packet, so
            // its track is described from the stream's parameters (the static MPD reads it back from the header).
            // Nothing is measured yet: the bandwidth is each stream's nominal bit rate (1 when the input gives none).
            var tracks = [try DASHManifest.Track(name: layout.trackName(.video).rawValue, header: self.video.header,
                                                 fallbackBandwidth: (try? video.outputParameters().bitRate) ?? 1)]
            if let audio, let parameters = try? audio.outputParameters(), let codecs = parameters.audioCodecString {
                tracks.append(DASHManifest.Track(name: layout.trackName(.audio).rawValue, contentType: .audio, codecs: codecs,
                                                 timescale: UInt32(max(1, parameters.sampleRate)),
                                                 bandwidth: parameters.bitRate ?? 1,
                                                 sampleRate: parameters.sampleRate, channels: parameters.channelCount))
            }
            for index in tracks.indices { tracks[index].defaultKID = encryption?.keyID }
            let dynamic = DASHManifest(kind: .dynamic(availabilityStart: Date()), tracks: tracks,
                                       segmentDuration: segmentDuration.seconds)
            try writeManifest(dynamic, isFinal: false)
            self.video.announceHeader()
        }
        if writeClip {
            try FileManager.default.createDirectory(at: layout.url("clips"), withIntermediateDirectories: true)
            clip = ClipSink(path: layout.url(layout.clipPath).path, expectsAudio: audio != nil, output: output)
        }
    }

    deinit {
        // What is queued is still written (a session abandoned on an error keeps what it had); then the thread ends.
        output.close()
    }

    /// Waits until what was queued for disk is there (tests).
    func waitForOutput() throws { try output.drain() }

    /// Writes a video packet; the first one must be a random-access packet at ``start``.
    func writeVideo(_ packet: Packet, isRandomAccess: Bool) throws {
        var t = video.rebased(packet)
        guard video.admits(&t) else { return }
        if t.duration <= 0 { t.duration = videoFrameDuration }
        let presentation = start + video.muxer.timeBase.time(t.pts)
        let startsSession = planner.segmentStart == nil
        let placement = planner.place(presentationTime: presentation, isRandomAccess: isRandomAccess)
        switch placement {
        case .none: break
        case .chunk: try cut(at: presentation, endSegment: false)
        case .segment: try cut(at: presentation, endSegment: true)
        }
        keepCompositionOffset(&t, startsSegment: startsSession || placement == .segment)
        try video.write(packet, pts: t.pts, dts: t.dts, duration: t.duration)
        try clip?.add(packet, kind: .video, timing: t, timeBase: video.muxer.timeBase, writer: self)
        videoEndTicks = max(videoEndTicks, t.pts + t.duration)
        videoDecodeFrontier = max(videoDecodeFrontier, start + video.muxer.timeBase.time(t.dts))
        try writeAudio(before: videoDecodeFrontier)
    }

    /// CMAF wants every segment to start presenting at its tfdt (item 18), and FFmpeg writes composition offsets
    /// relative to the session's first sample. So each segment's first keyframe must have the PTS − DTS distance the
    /// session's first one had. A clean stream always does; one whose composition offsets are damaged (a cut `ctts`
    /// table, an encoder that changed its reorder delay) gets the segment's presentation times shifted to match,
    /// and no frame of the segment is presented before its keyframe. Each shift is counted.
    private func keepCompositionOffset(_ t: inout (pts: Int64, dts: Int64, duration: Int64), startsSegment: Bool) {
        if startsSegment {
            let offset = t.pts - t.dts
            if sessionCompositionOffset == nil { sessionCompositionOffset = offset }
            let shift = sessionCompositionOffset! - offset
            if shift != compositionShift { compositionRepairs += 1 }
            compositionShift = shift
            t.pts += shift
            segmentPresentationFloor = t.pts
        } else if compositionShift != 0 || t.pts < segmentPresentationFloor {
            t.pts = max(t.pts + compositionShift, segmentPresentationFloor, t.dts)
        }
    }

    /// Queues an audio packet (conditioned, on the audio conditioner's time base).
    func writeAudio(_ packet: Packet) throws {
        guard let source = audioSource, let pts = packet.pts else { return }
        // Audio before the first video frame of the clip is not part of it: the clip starts with video.
        if source.timeBase.time(pts) < start { return }
        pendingAudio.append(try packet.reference())  // the demuxer reuses its packet object
        try writeAudio(before: videoDecodeFrontier)
    }

    /// Ends the session at `end` (input timeline), or after the last video frame when nil, and returns its record.
    func finish(at end: MediaTime?, reason: String) throws -> SessionRecord {
        let videoEnd = start + video.muxer.timeBase.time(videoEndTicks)
        let sessionEnd = min(end ?? videoEnd, videoEnd)
        try writeAudio(before: sessionEnd)
        pendingAudio.removeAll()
        try video.cut(endSegment: true, final: true)
        try audio?.cut(endSegment: true, final: true)
        try clip?.finish(writer: self)
        // Everything of the session is on disk before its record is handed out.
        try output.drain()
        if video.segments.isEmpty {
            // Not one video frame reached the muxer (the input failed first): headers without media are no session,
            // so nothing of it stays on disk, and the record has no track.
            for path in [layout.sessionPath, layout.clipPath] where FileManager.default.fileExists(atPath: layout.url(path).path) {
                try FileManager.default.removeItem(at: layout.url(path))
            }
            return SessionRecord(session: layout.session, start: start.seconds, end: start.seconds, duration: 0,
                                 endReason: reason, clip: nil, tracks: [])
        }
        if writesManifest {
            // From what each track recorded of its segments as it wrote them (their boxes, parsed then).
            let tracks = try [video, audio].compactMap { $0 }.map { track in
                var described = try DASHManifest.Track(
                    name: layout.trackName(track.kind).rawValue, header: track.header,
                    segments: track.segments.map { .init(start: UInt64($0.baseMediaDecodeTime), duration: UInt64($0.durationTicks)) },
                    byteCount: track.segments.reduce(0) { $0 + $1.bytes })
                described.defaultKID = encryption?.keyID
                return described
            }
            try writeManifest(DASHManifest(kind: .static, tracks: tracks, segmentDuration: segmentDuration.seconds), isFinal: true)
        }
        var tracks = [try trackRecord(video)]
        if compositionRepairs > 0 { tracks[0].repairedTimestamps = compositionRepairs }
        if let audio { tracks.append(try trackRecord(audio)) }
        return SessionRecord(
            session: layout.session, start: start.seconds, end: sessionEnd.seconds,
            duration: (sessionEnd - start).seconds, endReason: reason, clip: clip == nil ? nil : layout.clipPath,
            tracks: tracks)
    }

    private func writeManifest(_ manifest: DASHManifest, isFinal: Bool) throws {
        let bytes = Array(manifest.xml.utf8)
        try files.write(bytes, to: layout.manifestPath, on: output)
        emit?(.manifest(session: layout.session, isFinal: isFinal, path: layout.manifestPath, bytes: bytes))
    }

    // MARK: -

    private func cut(at time: MediaTime, endSegment: Bool) throws {
        try video.cut(endSegment: endSegment)
        if audioSource != nil { audioCuts.append((time, endSegment)) }
    }

    private func writeAudio(before limit: MediaTime) throws {
        guard let source = audioSource, !pendingAudio.isEmpty else { return }
        var consumed = 0
        for packet in pendingAudio {
            guard let pts = packet.pts, source.timeBase.time(pts) < limit else { break }
            let track = try audioTrack(source)
            while let next = audioCuts.first, next.time <= source.timeBase.time(pts) {
                try track.cut(endSegment: next.endSegment)
                audioCuts.removeFirst()
            }
            consumed += 1
            var t = track.rebased(packet)
            guard track.admits(&t) else { continue }
            if t.duration <= 0 { t.duration = track.audioFrameTicks }
            try track.write(packet, pts: t.pts, dts: t.dts, duration: t.duration)
            try clip?.add(packet, kind: .audio, timing: t, timeBase: track.muxer.timeBase, writer: self)
        }
        pendingAudio.removeFirst(consumed)
    }

    /// The audio track is created with its first packet: ADTS re-framing only knows the AudioSpecificConfig then.
    private func audioTrack(_ source: any TrackConditioner) throws -> TrackOutput {
        if let audio { return audio }
        let track = try TrackOutput(kind: .audio, conditioner: source, sourceCodec: audioCodec ?? "unknown",
                                    start: start, layout: layout, files: files, output: output, emit: emit,
                                    encryption: encryption)
        audio = track
        return track
    }

    fileprivate func clipTracks(withAudio: Bool) throws -> [(kind: MediaKind, parameters: CodecParameters, timeBase: TimeBase)] {
        var tracks = [(kind: MediaKind.video, parameters: try video.muxer.parameters(), timeBase: video.muxer.timeBase)]
        if withAudio, let audio {
            tracks.append((kind: .audio, parameters: try audio.muxer.parameters(), timeBase: audio.muxer.timeBase))
        }
        return tracks
    }

    fileprivate var hasAudioTrack: Bool { audio != nil }

    private func trackRecord(_ track: TrackOutput) throws -> TrackRecord {
        let scale = Double(track.muxer.timeBase.den) / Double(track.muxer.timeBase.num)
        return TrackRecord(
            name: layout.trackName(track.kind), kind: track.kind, codec: track.header.codecString ?? track.sourceCodec,
            sourceCodec: track.sourceCodec, transcoded: track.transcoded, timescale: track.timescale,
            startOffset: Double(track.firstPresentation ?? 0) / scale, init: layout.initPath(track.kind),
            segments: track.segments.map(\.path), segmentDetails: track.segments,
            droppedPackets: track.droppedPackets > 0 ? track.droppedPackets : nil)
    }
}

/// Feeds the playable clip file. Its muxer needs both tracks' parameters up front, and the audio track's only exist
/// once its first packet is through; until then packets wait here (bounded: after 2 s of video without audio the
/// clip is written without audio). The muxer itself lives on the session's output thread: it is made, fed and
/// finished there, each packet handed over as a reference of its own.
private final class ClipSink {
    let path: String
    let expectsAudio: Bool
    private let output: FileOutputQueue
    /// Set and used on the output thread only.
    private final class Muxer { var writer: ClipFileWriter? }
    private let muxer = Muxer()
    private var opened = false
    private var waiting: [(Packet, MediaKind, (pts: Int64, dts: Int64, duration: Int64))] = []
    private var waitedVideoTicks: Int64 = 0

    init(path: String, expectsAudio: Bool, output: FileOutputQueue) {
        self.path = path
        self.expectsAudio = expectsAudio
        self.output = output
    }

    func add(
        _ packet: Packet, kind: MediaKind, timing: (pts: Int64, dts: Int64, duration: Int64), timeBase: TimeBase,
        writer session: SessionWriter
    ) throws {
        let reference = try packet.reference()  // the caller's packet is reused; this one goes to the output thread
        if opened {
            let muxer = self.muxer
            try output.enqueue(bytes: reference.size) {
                try muxer.writer?.write(reference, kind: kind, pts: timing.pts, dts: timing.dts, duration: timing.duration)
            }
            return
        }
        waiting.append((reference, kind, timing))
        if kind == .video { waitedVideoTicks = timing.pts + timing.duration }
        let waitedTooLong = kind == .video && timeBase.time(waitedVideoTicks) > .seconds(2)
        if !expectsAudio || session.hasAudioTrack || waitedTooLong { try open(session) }
    }

    func finish(writer session: SessionWriter) throws {
        if !opened && !waiting.isEmpty { try open(session) }
        let muxer = self.muxer
        try output.enqueue(bytes: 0) { try muxer.writer?.finish() }
    }

    private func open(_ session: SessionWriter) throws {
        let withAudio = session.hasAudioTrack
        let tracks = try session.clipTracks(withAudio: withAudio)
        let packets = waiting.filter { $0.1 == .video || withAudio }
        let (muxer, path) = (self.muxer, self.path)
        opened = true
        waiting.removeAll()
        try output.enqueue(bytes: packets.reduce(0) { $0 + $1.0.size }) {
            let opened = try ClipFileWriter(path: path, tracks: tracks)
            muxer.writer = opened
            for (packet, kind, t) in packets {
                try opened.write(packet, kind: kind, pts: t.pts, dts: t.dts, duration: t.duration)
            }
        }
    }
}
