import CFFmpeg

/// Owns one `AVFrame` (decoded picture or audio samples). Reused across a decode loop.
public final class Frame {
    let pointer: UnsafeMutablePointer<AVFrame>

    public init() throws(FFmpegError) {
        guard let p = av_frame_alloc() else { throw FFmpegError.outOfMemory("av_frame_alloc") }
        pointer = p
    }

    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&p)
    }

    public func unreference() { av_frame_unref(pointer) }

    /// The decoder's best guess of the presentation timestamp, in the decoder's packet time base.
    public var bestEffortTimestamp: Int64? {
        let t = pointer.pointee.best_effort_timestamp
        return t == CFFmpeg_AV_NOPTS_VALUE() ? nil : t
    }
    public var isKeyframe: Bool { pointer.pointee.key_frame != 0 }
}
