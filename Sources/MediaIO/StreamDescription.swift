import CFFmpeg
import Domain
import Timeline

/// A Sendable description of one input stream, read once after the input is probed.
public struct StreamDescription: Sendable, Codable, Equatable {
    public var index: Int
    public var kind: MediaKind
    /// FFmpeg's short codec name (`h264`, `hevc`, `aac`, `opus`, `mpeg4`, `mp3`, …).
    public var codec: String
    public var profile: String?
    public var timeBase: TimeBase
    public var bitRate: Int64?
    public var width: Int?
    public var height: Int?
    /// Frames per second as FFmpeg guesses it from the container and the bitstream.
    public var frameRate: Double?
    public var sampleRate: Int?
    public var channels: Int?
    /// Seconds of the first timestamp on the stream's own timeline, if known.
    public var startTime: Double?
    public var duration: Double?
}

/// A stream time base `num/den` seconds per tick.
public struct TimeBase: Sendable, Codable, Equatable, CustomStringConvertible {
    public var num: Int32
    public var den: Int32
    public init(num: Int32, den: Int32) { self.num = num; self.den = den }
    init(_ r: AVRational) { self.init(num: r.num, den: r.den) }
    var rational: AVRational { AVRational(num: num, den: den) }
    public var description: String { "\(num)/\(den)" }

    /// A tick count on this time base as an exact media time (saturating where `ticks × num` leaves Int64: only
    /// damaged timestamps get there, and they must not trap).
    public func time(_ ticks: Int64) -> MediaTime {
        if num == 1 { return MediaTime(value: ticks, timescale: den) }
        let (value, overflow) = ticks.multipliedReportingOverflow(by: Int64(num))
        return MediaTime(value: overflow ? (ticks < 0 ? Int64.min / 4 : Int64.max / 4) : value, timescale: den)
    }

    /// Ticks per second (den / num).
    public var ticksPerSecond: Double { Double(den) / Double(num) }

    /// The tick on this time base nearest to `time`.
    public func ticks(_ time: MediaTime) -> Int64 {
        av_rescale_q_rnd(time.value, AVRational(num: 1, den: time.timescale), rational, AV_ROUND_NEAR_INF)
    }
}

extension StreamDescription {
    /// Frame rates a real video has (one frame per 100 s … 1000 fps); anything else comes from a damaged header.
    public static let plausibleFrameRates = 0.01...1000.0

    init(stream: UnsafeMutablePointer<AVStream>, index: Int, kind: MediaKind) {
        let par = stream.pointee.codecpar!
        self.index = index
        self.kind = kind
        codec = avcodec_get_name(par.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
        profile = avcodec_profile_name(par.pointee.codec_id, par.pointee.profile).map { String(cString: $0) }
        timeBase = TimeBase(stream.pointee.time_base)
        bitRate = par.pointee.bit_rate > 0 ? par.pointee.bit_rate : nil
        let nopts = CFFmpeg_AV_NOPTS_VALUE()
        startTime = stream.pointee.start_time == nopts ? nil : av_q2d(stream.pointee.time_base) * Double(stream.pointee.start_time)
        duration = stream.pointee.duration == nopts || stream.pointee.duration <= 0
            ? nil : av_q2d(stream.pointee.time_base) * Double(stream.pointee.duration)
        // Header fields of a damaged file can hold anything: what no camera produces is treated as unknown, so the
        // arithmetic built on it (GOP length, frame durations, resampling) stays in range.
        switch kind {
        case .video:
            width = par.pointee.width > 0 ? Int(par.pointee.width) : nil
            height = par.pointee.height > 0 ? Int(par.pointee.height) : nil
            let rate = stream.pointee.avg_frame_rate.num > 0 ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
            let fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0
            frameRate = Self.plausibleFrameRates.contains(fps) ? fps : nil
        case .audio:
            sampleRate = par.pointee.sample_rate > 0 ? Int(par.pointee.sample_rate) : nil
            channels = par.pointee.ch_layout.nb_channels > 0 ? Int(par.pointee.ch_layout.nb_channels) : nil
        }
    }
}
