import CFFmpeg
import Foundation

/// The picture at a moment of a recording on disk, as a JPEG: what the status page shows as a clip's thumbnail.
///
/// Why made from the recording and not kept: a recent recording's header and segments are already in the spool, and
/// a stored JPEG (about 10 KB at 320 px) was written twice more per clip — to the journal's WAL and again at its
/// checkpoint — a write amplification of several per cent on a short clip at a low bit rate. Made from the files
/// instead, a thumbnail costs one decode of at most a GOP when it is first asked for, and nothing on disk.
public enum RecordedPicture {
    /// The picture `offset` seconds after the first picture of `files` — a fragmented MP4's header followed by its
    /// segments, read as one stream (FFmpeg's `concat:` protocol, no copy) — scaled to at most `maxWidth` pixels wide.
    /// An offset past the end gives the last picture. Blocking (demux and decode): call it from a thread that may
    /// block, never from Swift's cooperative pool.
    public static func jpeg(of files: [URL], at offset: Double, maxWidth: Int) throws -> JPEGPicture {
        guard !files.isEmpty else { throw MediaError("no files to take a picture from") }
        // `concat:` separates its parts with `|`: a path holding one cannot be named to it.
        if let odd = files.first(where: { $0.path.contains("|") }) {
            throw MediaError("cannot read \(odd.path) through the concat protocol: its path contains '|'")
        }
        let input = try MediaInput(url: "concat:" + files.map(\.path).joined(separator: "|"))
        guard let video = input.video else { throw MediaError("\(files[0].path) has no video track") }
        let decoder = try Decoder(parameters: try CodecParameters(copying: input.parameters(of: video.index)),
                                  timeBase: video.timeBase, threads: 1)
        let seconds = { (ticks: Int64) in Double(ticks) * Double(video.timeBase.num) / Double(video.timeBase.den) }

        // The packets from the last keyframe at or before the moment: decoding them (and no earlier GOP) reaches it.
        var group: [Packet] = []
        var start: Double?
        let packet = try Packet()
        while try input.read(into: packet) {
            defer { packet.unreference() }
            guard packet.streamIndex == video.index, let pts = packet.pts else { continue }
            let time = seconds(pts)
            if start == nil || time < start! { start = time }
            if packet.isKeyframe {
                if time > start! + offset, !group.isEmpty { break }
                group.removeAll()
            }
            group.append(try packet.reference())
        }
        guard let start else { throw MediaError("\(files[0].path) holds no video picture") }

        // The first picture at or after the moment in presentation order, else the last one there is.
        let target = start + offset
        let frame = try Frame()
        let chosen = try Frame()
        var found = false
        var held = false
        let keep = { (picture: Frame) throws in
            guard !found else { return }
            chosen.unreference()
            try FFmpegError.check(av_frame_ref(chosen.pointer, picture.pointer), "keep a decoded picture")
            held = true
            if let ts = picture.bestEffortTimestamp, seconds(ts) >= target - 1e-6 { found = true }
        }
        for packet in group where !found { try decoder.decode(packet, into: frame, keep) }
        if !found { try decoder.decode(nil, into: frame, keep) }
        guard held else { throw MediaError("no picture of \(files[0].path) could be decoded") }
        return try JPEGEncoder(maxWidth: maxWidth).encode(chosen)
    }
}
