import CFFmpeg

/// Owns one `AVPacket`. Packets are reference-counted by FFmpeg, so ``reference()`` is cheap: pre-roll buffers and
/// fan-out to several muxers share the payload.
public final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    public init() throws(FFmpegError) {
        guard let p = av_packet_alloc() else { throw FFmpegError.outOfMemory("av_packet_alloc") }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    /// A new packet sharing this one's payload, with its own copy of the timestamps and flags.
    public func reference() throws(FFmpegError) -> Packet {
        let copy = try Packet()
        try FFmpegError.check(av_packet_ref(copy.pointer, pointer), "av_packet_ref")
        return copy
    }

    public func unreference() { av_packet_unref(pointer) }

    public var streamIndex: Int {
        get { Int(pointer.pointee.stream_index) }
        set { pointer.pointee.stream_index = Int32(newValue) }
    }
    public var pts: Int64? {
        get { pointer.pointee.pts == CFFmpeg_AV_NOPTS_VALUE() ? nil : pointer.pointee.pts }
        set { pointer.pointee.pts = newValue ?? CFFmpeg_AV_NOPTS_VALUE() }
    }
    public var dts: Int64? {
        get { pointer.pointee.dts == CFFmpeg_AV_NOPTS_VALUE() ? nil : pointer.pointee.dts }
        set { pointer.pointee.dts = newValue ?? CFFmpeg_AV_NOPTS_VALUE() }
    }
    public var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }
    /// The keyframe flag; a muxer writes it as the sample's sync flag.
    public var isKeyframe: Bool {
        get { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
        set { pointer.pointee.flags = newValue ? pointer.pointee.flags | AV_PKT_FLAG_KEY : pointer.pointee.flags & ~AV_PKT_FLAG_KEY }
    }
    public var isCorrupt: Bool { pointer.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 }
    public var size: Int { Int(pointer.pointee.size) }

    /// The payload bytes, valid until the packet is unreferenced or reused.
    public var payload: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: pointer.pointee.data, count: Int(pointer.pointee.size))
    }
}
