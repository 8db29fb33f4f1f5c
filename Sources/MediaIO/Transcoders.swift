import CFFmpeg
import CMAF
import Domain
import Timeline

/// Re-encodes video CMAF cannot carry (MPEG-4 Part 2, VP8, MJPEG, …) as H.264 with libx264, forcing an IDR at every
/// segment boundary so segments still start on keyframes and last exactly the segment duration.
final class VideoTranscoder: TrackConditioner {
    let kind = MediaKind.video
    let transcodes = true
    private let decoder: Decoder
    private let encoder: Encoder
    private let converter: PixelConverter
    private let decoded: Frame
    private let converted: Frame
    private let keyframeInterval: MediaTime
    private var nextForcedKeyframe: MediaTime?
    private var lastPts: Int64?
    private(set) var droppedPackets = 0
    let timeBase = TimeBase(num: 1, den: 90000)

    /// The encoder's bit rate cap (VBV maximum rate), also declared in the output parameters for the btrt box.
    private let maxBitRate: Int64

    init(
        stream: StreamDescription, parameters: UnsafePointer<AVCodecParameters>, keyframeInterval: MediaTime,
        sourceBitRate: Int64?
    ) throws {
        let input = try CodecParameters(copying: parameters)
        decoder = try Decoder(parameters: input, timeBase: stream.timeBase)
        decoded = try Frame()
        converted = try Frame()
        self.keyframeInterval = keyframeInterval
        let width = stream.width ?? 0, height = stream.height ?? 0
        guard width > 0, height > 0 else { throw MediaError("video stream \(stream.index) has no picture size") }
        converter = PixelConverter(width: width, height: height, format: AV_PIX_FMT_YUV420P)
        // StreamDescription only passes plausible frame rates; the clamp keeps x264's keyint in range regardless.
        let fps = stream.frameRate.map { min(max($0, StreamDescription.plausibleFrameRates.lowerBound),
                                             StreamDescription.plausibleFrameRates.upperBound) } ?? 25
        let gop = Int(min(max((keyframeInterval.seconds * fps).rounded(), 1), 100_000))
        let rate = av_d2q(fps, 100_000)
        let tb = timeBase.rational
        // Quality-driven (CRF), capped at the source's bit rate (else 0.1 bit per pixel per frame), so the header can
        // declare a maximum the track keeps to.
        let cap = min(max(sourceBitRate ?? Int64(Double(width * height) * fps * 0.1), 200_000), 50_000_000)
        maxBitRate = cap
        encoder = try Encoder(
            name: "libx264",
            options: ["preset": "veryfast", "forced-idr": "1", "x264-params": "scenecut=0:keyint=\(gop):min-keyint=\(gop)"]
        ) { ctx in
            ctx.pointee.width = Int32(width)
            ctx.pointee.height = Int32(height)
            ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            ctx.pointee.time_base = tb
            ctx.pointee.framerate = rate
            ctx.pointee.max_b_frames = 0  // lowest latency; a camera sidecar gains nothing from B-frames
            ctx.pointee.gop_size = Int32(gop)
            ctx.pointee.rc_max_rate = cap
            ctx.pointee.rc_buffer_size = Int32(cap)  // one second of the maximum rate
        }
    }

    func outputParameters() throws -> CodecParameters {
        let parameters = try CodecParameters(from: encoder.context)
        if parameters.pointer.pointee.bit_rate <= 0 { parameters.pointer.pointee.bit_rate = maxBitRate }
        return parameters
    }

    func push(_ packet: Packet, emit: (Packet) throws -> Void) throws {
        try decoder.decode(packet, into: decoded) { try encode($0, emit: emit) }
    }

    func drain(emit: (Packet) throws -> Void) throws {
        try decoder.decode(nil, into: decoded) { try encode($0, emit: emit) }
        try encoder.encode(nil, emit: emit)
    }

    func accessPoint(_ packet: Packet) -> AccessPointKind { packet.isKeyframe ? .closed : .other }  // IDRs: closed GOPs

    private func encode(_ frame: Frame, emit: (Packet) throws -> Void) throws {
        guard let ts = frame.bestEffortTimestamp else { return }
        let time = decoder.timeBase.time(ts)
        let pts = timeBase.ticks(time)
        if let lastPts, pts <= lastPts {  // a duplicate or backwards timestamp cannot be encoded
            droppedPackets += 1
            return
        }
        lastPts = pts
        try converter.convert(frame, into: converted)
        converted.pointer.pointee.pts = pts
        converted.pointer.pointee.pict_type = AV_PICTURE_TYPE_NONE
        if nextForcedKeyframe == nil || time >= nextForcedKeyframe! {
            converted.pointer.pointee.pict_type = AV_PICTURE_TYPE_I
            var next = nextForcedKeyframe ?? time
            var steps = 0
            while next <= time && steps < 1000 { next = next + keyframeInterval; steps += 1 }
            if next <= time { next = time + keyframeInterval }  // a jump far ahead: count boundaries from here
            nextForcedKeyframe = next
        }
        try encoder.encode(converted, emit: emit)
    }
}

/// Re-encodes audio CMAF cannot carry (MP3, MP2, PCM, G.711, …) as AAC-LC with FFmpeg's native encoder.
final class AudioTranscoder: TrackConditioner {
    let kind = MediaKind.audio
    let transcodes = true
    private let decoder: Decoder
    private let encoder: Encoder
    private let resampler: AudioResampler
    private let decoded: Frame
    private let scratch: Frame
    private let encoderFrame: Frame
    private var nextPts: Int64?
    let droppedPackets = 0  // samples are re-timed by count, so none is ever refused
    let timeBase: TimeBase

    init(stream: StreamDescription, parameters: UnsafePointer<AVCodecParameters>) throws {
        let input = try CodecParameters(copying: parameters)
        decoder = try Decoder(parameters: input, timeBase: stream.timeBase)
        decoded = try Frame()
        scratch = try Frame()
        encoderFrame = try Frame()
        let supported: Set<Int> = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]
        let rate = Int32(supported.contains(stream.sampleRate ?? 0) ? stream.sampleRate! : 48000)
        let channels = Int32(min(max(stream.channels ?? 2, 1), 2))
        timeBase = TimeBase(num: 1, den: rate)
        resampler = try AudioResampler(outputFormat: AV_SAMPLE_FMT_FLTP, outputRate: rate, channels: channels)
        encoder = try Encoder(name: "aac") { ctx in
            ctx.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            ctx.pointee.sample_rate = rate
            av_channel_layout_default(&ctx.pointee.ch_layout, channels)
            ctx.pointee.bit_rate = channels == 1 ? 64_000 : 128_000
            ctx.pointee.time_base = AVRational(num: 1, den: rate)
        }
    }

    func outputParameters() throws -> CodecParameters { try CodecParameters(from: encoder.context) }

    func push(_ packet: Packet, emit: (Packet) throws -> Void) throws {
        try decoder.decode(packet, into: decoded) { frame in
            if nextPts == nil, let ts = frame.bestEffortTimestamp { nextPts = timeBase.ticks(decoder.timeBase.time(ts)) }
            try resampler.push(frame, scratch: scratch)
            try encodeBuffered(final: false, emit: emit)
        }
    }

    func drain(emit: (Packet) throws -> Void) throws {
        try decoder.decode(nil, into: decoded) { frame in
            try resampler.push(frame, scratch: scratch)
        }
        try resampler.push(nil, scratch: scratch)
        try encodeBuffered(final: true, emit: emit)
        try encoder.encode(nil, emit: emit)
    }

    func accessPoint(_ packet: Packet) -> AccessPointKind { .closed }

    private func encodeBuffered(final: Bool, emit: (Packet) throws -> Void) throws {
        let size = encoder.context.pointee.frame_size > 0 ? encoder.context.pointee.frame_size : 1024
        while resampler.bufferedSamples >= size || (final && resampler.bufferedSamples > 0) {
            let count = min(size, resampler.bufferedSamples)
            try resampler.pop(count, into: encoderFrame)
            encoderFrame.pointer.pointee.pts = nextPts ?? 0
            nextPts = (nextPts ?? 0) + Int64(count)
            try encoder.encode(encoderFrame, emit: emit)
        }
    }
}
