import CFFmpeg

/// Owns a `SwrContext` and an `AVAudioFifo`: converts decoded audio to the encoder's sample format and layout and
/// regroups it into frames of exactly the encoder's frame size (1024 for AAC).
final class AudioResampler {
    private var context: OpaquePointer?
    private let fifo: OpaquePointer
    private let outputFormat: AVSampleFormat
    private let outputRate: Int32
    private var outputLayout = AVChannelLayout()

    init(outputFormat: AVSampleFormat, outputRate: Int32, channels: Int32) throws {
        self.outputFormat = outputFormat
        self.outputRate = outputRate
        av_channel_layout_default(&outputLayout, channels)
        guard let fifo = av_audio_fifo_alloc(outputFormat, channels, 4096) else {
            throw FFmpegError.outOfMemory("av_audio_fifo_alloc")
        }
        self.fifo = fifo
    }

    deinit {
        swr_free(&context)
        av_audio_fifo_free(fifo)
        av_channel_layout_uninit(&outputLayout)
    }

    /// Converts `frame` (nil flushes the resampler) and appends the samples to the FIFO.
    func push(_ frame: Frame?, scratch: Frame) throws {
        if context == nil, let frame {
            try FFmpegError.check(swr_alloc_set_opts2(
                &context, &outputLayout, outputFormat, outputRate,
                &frame.pointer.pointee.ch_layout, AVSampleFormat(rawValue: frame.pointer.pointee.format),
                frame.pointer.pointee.sample_rate, 0, nil), "configure resampler")
            try FFmpegError.check(swr_init(context), "initialise resampler")
        }
        guard let context else { return }
        scratch.unreference()
        scratch.pointer.pointee.format = outputFormat.rawValue
        scratch.pointer.pointee.sample_rate = outputRate
        try FFmpegError.check(av_channel_layout_copy(&scratch.pointer.pointee.ch_layout, &outputLayout), "copy layout")
        try FFmpegError.check(swr_convert_frame(context, scratch.pointer, frame?.pointer), "resample audio")
        let count = scratch.pointer.pointee.nb_samples
        guard count > 0 else { return }
        let written = scratch.pointer.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) {
            av_audio_fifo_write(fifo, $0, count)
        }
        try FFmpegError.check(written, "buffer audio")
    }

    var bufferedSamples: Int32 { av_audio_fifo_size(fifo) }

    /// Pops `count` samples into `frame` (allocating it), fewer at the end when `partial` allows it.
    func pop(_ count: Int32, into frame: Frame) throws {
        frame.unreference()
        frame.pointer.pointee.nb_samples = count
        frame.pointer.pointee.format = outputFormat.rawValue
        frame.pointer.pointee.sample_rate = outputRate
        try FFmpegError.check(av_channel_layout_copy(&frame.pointer.pointee.ch_layout, &outputLayout), "copy layout")
        try FFmpegError.check(av_frame_get_buffer(frame.pointer, 0), "allocate audio frame")
        let read = frame.pointer.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) {
            av_audio_fifo_read(fifo, $0, count)
        }
        try FFmpegError.check(read, "read buffered audio")
    }
}
