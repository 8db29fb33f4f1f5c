/// One fragmented MP4 a browser's `<video>` plays whole, with sound, made of a recording's CMAF tracks as the spool
/// keeps them — without a second copy on disk.
///
/// Why not the tracks one after the other: a CMAF header says nothing of how long its track is (`mvhd` duration 0,
/// no `mehd`), and a player that trusts the header (WebKit, the engine of every iPhone browser) stopped after the
/// first fragment; and a track file holds one track, so the audio was not heard. Here the file is:
///
/// - the video header's `ftyp`, then a `moov` of both tracks: the video header's boxes with `mvhd` carrying the
///   clip's duration, the audio header's `trak` after the video's (its track ID made distinct if it collides), and an
///   `mvex` with an `mehd` (the fragments' total duration) and both `trex`;
/// - every segment file whole (`styp`, `moof`, `mdat` …), the two tracks' files interleaved by decode time, so a player
///   reading from the front has both tracks' media at each point. Bytes are patched where they sit, never moved: the
///   audio fragments' `tfhd` track ID (when renumbered) and every `mfhd` sequence number (one count over the file, as
///   ISO BMFF asks). Fragment data offsets are relative to their `moof` (CMAF's default-base-is-moof), so nothing
///   else changes.
///
/// Pure: the caller reads the headers and each segment's `moof` boxes; serving copies the files' bytes with
/// ``Piece/file(_:patches:)``'s patches applied.
public struct PlayableClip: Hashable, Sendable {
    /// One segment file as read for the plan: its size and each of its `moof` boxes with its offset in the file.
    public struct SegmentFile: Hashable, Sendable {
        public var size: Int
        public var moofs: [(offset: Int, bytes: [UInt8])]

        public init(size: Int, moofs: [(offset: Int, bytes: [UInt8])]) {
            self.size = size
            self.moofs = moofs
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.size == b.size && a.moofs.map(\.offset) == b.moofs.map(\.offset) && a.moofs.map(\.bytes) == b.moofs.map(\.bytes)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(size)
            for moof in moofs { hasher.combine(moof.offset); hasher.combine(moof.bytes) }
        }
    }

    /// A track as the spool keeps it: its header's bytes and its segment files in order.
    public struct Track: Hashable, Sendable {
        public var header: [UInt8]
        public var segments: [SegmentFile]

        public init(header: [UInt8], segments: [SegmentFile]) {
            self.header = header
            self.segments = segments
        }
    }

    /// Which segment file: the track (0 video, 1 audio) and its index in that track's `segments`.
    public struct FileReference: Hashable, Sendable {
        public var track: Int
        public var segment: Int
    }

    /// Bytes written over a file's own at `offset` (from the file's start).
    public struct Patch: Hashable, Sendable {
        public var offset: Int
        public var bytes: [UInt8]
    }

    public enum Piece: Hashable, Sendable {
        /// Bytes made here (the `ftyp` and the new `moov`).
        case bytes([UInt8])
        /// A whole segment file, with patches.
        case file(FileReference, patches: [Patch])
    }

    /// The file, front to back.
    public var pieces: [Piece]
    /// Its size in bytes: the made bytes and the segment files (patches change no size).
    public var size: Int
    /// The longest track's duration, in seconds: what `mvhd` and `mehd` say.
    public var durationSeconds: Double
    /// The track ID the audio has in this file (nil without audio).
    public var audioTrackID: UInt32?

    /// The plan for `video` and, if the recording has it, `audio`.
    /// - Throws: ``CMAFError`` when a header or a `moof` cannot be parsed, or a header has no track.
    public init(video: Track, audio: Track?) throws {
        let videoHeader = try CMAFHeader(bytes: video.header, fileName: "video")
        let audioHeader = try audio.map { try CMAFHeader(bytes: $0.header, fileName: "audio") }
        guard let moov = videoHeader.moov, let videoTrak = videoHeader.trak, let videoID = videoHeader.trackID else {
            throw CMAFError.malformed(type: "moov", offset: 0, reason: "the video header has no track")
        }
        let movieTimescale = UInt64(max(1, videoHeader.movieTimescale ?? 1000))

        struct Fragment {
            var reference: FileReference
            var start: Double
            var end: Double
            var size: Int
            /// Where each `moof`'s `mfhd` sequence number and `tfhd` track ID sit in the file.
            var sequenceOffsets: [Int]
            var trackIDOffsets: [Int]
        }
        func fragments(_ track: Track, index: Int, header: CMAFHeader) throws -> [Fragment] {
            let timescale = Double(max(1, header.mediaTimescale ?? 1))
            var next: UInt64 = 0
            return try track.segments.enumerated().map { number, file in
                var fragment = Fragment(reference: FileReference(track: index, segment: number), start: .infinity, end: 0,
                                        size: file.size, sequenceOffsets: [], trackIDOffsets: [])
                for moof in file.moofs {
                    guard let box = try BoxReader.parse(moof.bytes).first, box.type == "moof" else {
                        throw CMAFError.malformed(type: "moof", offset: moof.offset, reason: "not a moof box")
                    }
                    let chunk = try CMAFSegment.parseChunk(moof: box, mdat: nil, bytes: moof.bytes, header: header,
                                                           fallbackDecodeTime: next)
                    let start = chunk.baseMediaDecodeTime ?? next
                    next = start &+ chunk.duration
                    fragment.start = min(fragment.start, Double(start) / timescale)
                    fragment.end = max(fragment.end, Double(next) / timescale)
                    if let mfhd = box.child("mfhd") { fragment.sequenceOffsets.append(moof.offset + mfhd.offset + 12) }
                    for traf in box.children("traf") {
                        if let tfhd = traf.child("tfhd") { fragment.trackIDOffsets.append(moof.offset + tfhd.offset + 12) }
                    }
                }
                if fragment.start == .infinity { fragment.start = fragment.end }
                return fragment
            }
        }
        let videoFragments = try fragments(video, index: 0, header: videoHeader)
        let audioFragments = try audio.map { try fragments($0, index: 1, header: audioHeader!) } ?? []

        // The audio keeps its own track ID unless it is the video's.
        var audioID: UInt32?
        if let audioHeader {
            guard audioHeader.trak != nil, let own = audioHeader.trackID else {
                throw CMAFError.malformed(type: "moov", offset: 0, reason: "the audio header has no track")
            }
            audioID = own == videoID ? videoID &+ 1 : own
        }
        audioTrackID = audioID
        let duration = (videoFragments + audioFragments).map(\.end).max() ?? 0
        durationSeconds = duration
        let movieDuration = UInt64((duration * Double(movieTimescale)).rounded(.up))

        // The moov: the video header's children in order, mvhd patched, the audio trak after the video's, mvex anew.
        var moovPayload: [UInt8] = []
        var wroteMvex = false
        func mvex() throws -> [UInt8] {
            var payload = Self.fullBox("mehd", version: 1, Self.be64(movieDuration))
            let videoMvex = moov.child("mvex")
            for child in videoMvex?.children ?? [] where child.type != "mehd" {
                payload += video.header[child.range]
            }
            if let audio, let audioHeader, let audioID, let audioMvex = audioHeader.moov?.child("mvex") {
                for trex in audioMvex.children("trex") {
                    payload += Self.patched(Array(audio.header[trex.range]), at: trex.headerSize + 4, Self.be32(audioID))
                }
            }
            return Self.box("mvex", payload)
        }
        for child in moov.children {
            switch child.type {
            case "mvhd":
                moovPayload += try Self.movieHeader(Array(video.header[child.range]), box: child,
                                                    duration: movieDuration, nextTrackID: max(videoID, audioID ?? 0) &+ 1)
            case "trak" where child == videoTrak:
                moovPayload += video.header[child.range]
                if let audio, let audioHeader, let audioTrak = audioHeader.trak, let audioID {
                    moovPayload += try Self.trackWithID(Array(audio.header[audioTrak.range]), trak: audioTrak, id: audioID,
                                                        bytes: audio.header)
                }
            case "mvex":
                moovPayload += try mvex()
                wroteMvex = true
            default:
                moovPayload += video.header[child.range]
            }
        }
        if !wroteMvex { moovPayload += try mvex() }
        let fileType = videoHeader.boxes.first { $0.type == "ftyp" }.map { Array(video.header[$0.range]) } ?? []
        let front = fileType + Self.box("moov", moovPayload)

        // Interleaved by decode time (video first at a tie: a player starts from a picture).
        let ordered = (videoFragments + audioFragments).enumerated().sorted { a, b in
            a.element.start != b.element.start ? a.element.start < b.element.start : a.offset < b.offset
        }.map(\.element)
        var pieces: [Piece] = [.bytes(front)]
        var size = front.count
        var sequence: UInt32 = 0
        for fragment in ordered {
            var patches: [Patch] = []
            for offset in fragment.sequenceOffsets {
                sequence &+= 1
                patches.append(Patch(offset: offset, bytes: Self.be32(sequence)))
            }
            if fragment.reference.track == 1, let audioID, let own = audioHeader?.trackID, own != audioID {
                patches += fragment.trackIDOffsets.map { Patch(offset: $0, bytes: Self.be32(audioID)) }
            }
            pieces.append(.file(fragment.reference, patches: patches.sorted { $0.offset < $1.offset }))
            size += fragment.size
        }
        self.pieces = pieces
        self.size = size
    }

    // MARK: - Box bytes

    // Box bytes are written by CommonEncryption's writers (`box`, `fullBox`, `be32`, `be64`): one writer per module.
    static func be32(_ value: UInt32) -> [UInt8] { CommonEncryption.be32(value) }
    static func be64(_ value: UInt64) -> [UInt8] { CommonEncryption.be64(value) }
    static func box(_ type: FourCC, _ payload: [UInt8]) -> [UInt8] { CommonEncryption.box(type, payload) }
    static func fullBox(_ type: FourCC, version: UInt8, _ payload: [UInt8]) -> [UInt8] {
        CommonEncryption.fullBox(type, version: version, flags: 0, payload)
    }

    static func patched(_ bytes: [UInt8], at offset: Int, _ value: [UInt8]) -> [UInt8] {
        var bytes = bytes
        bytes.replaceSubrange(offset ..< offset + value.count, with: value)
        return bytes
    }

    /// `mvhd` with `duration` (in its own timescale) and `next_track_ID`; a version-0 box whose duration does not fit
    /// 32 bits says "unknown" (all ones), as ISO BMFF allows.
    static func movieHeader(_ bytes: [UInt8], box: Box, duration: UInt64, nextTrackID: UInt32) throws -> [UInt8] {
        guard bytes.count >= box.headerSize + 4 else { throw CMAFError.truncatedPayload(type: "mvhd", offset: box.offset) }
        let version = bytes[box.headerSize]
        let durationOffset = box.headerSize + 4 + (version == 1 ? 16 : 8) + 4
        let width = version == 1 ? 8 : 4
        guard bytes.count >= durationOffset + width + 4 else { throw CMAFError.truncatedPayload(type: "mvhd", offset: box.offset) }
        let field = version == 1 ? be64(duration) : be32(duration > UInt64(UInt32.max) ? .max : UInt32(duration))
        return patched(patched(bytes, at: durationOffset, field), at: bytes.count - 4, be32(nextTrackID))
    }

    /// A `trak` (its bytes, `trak` the box as parsed in `header`) with its `tkhd` track ID set to `id`.
    static func trackWithID(_ bytes: [UInt8], trak: Box, id: UInt32, bytes header: [UInt8]) throws -> [UInt8] {
        guard let tkhd = trak.child("tkhd"), tkhd.size >= tkhd.headerSize + 24 else {
            throw CMAFError.malformed(type: "trak", offset: trak.offset, reason: "no track header")
        }
        let version = header[tkhd.offset + tkhd.headerSize]
        let offset = tkhd.offset - trak.offset + tkhd.headerSize + 4 + (version == 1 ? 16 : 8)
        return patched(bytes, at: offset, be32(id))
    }
}
