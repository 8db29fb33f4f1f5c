// The FFmpeg 5.1 headers PushAV Recorder uses, plus static inline re-exports of the macros the Swift importer
// cannot see (function-like macros and FFERRTAG/UINT64_C expansions). Every name is prefixed CFFmpeg_.
#ifndef PUSHAV_CFFMPEG_SHIM_H
#define PUSHAV_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavutil/avutil.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

static inline int CFFmpeg_AVERROR(int e) { return AVERROR(e); }
static inline int CFFmpeg_AVERROR_EOF(void) { return AVERROR_EOF; }
static inline int CFFmpeg_AVERROR_EXIT(void) { return AVERROR_EXIT; }
static inline int CFFmpeg_AVERROR_INVALIDDATA(void) { return AVERROR_INVALIDDATA; }
static inline int CFFmpeg_AVERROR_DECODER_NOT_FOUND(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int CFFmpeg_AVERROR_ENCODER_NOT_FOUND(void) { return AVERROR_ENCODER_NOT_FOUND; }
static inline int CFFmpeg_AVERROR_STREAM_NOT_FOUND(void) { return AVERROR_STREAM_NOT_FOUND; }
static inline int CFFmpeg_EAGAIN_ERROR(void) { return AVERROR(EAGAIN); }
static inline int64_t CFFmpeg_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }
static inline AVRational CFFmpeg_AV_TIME_BASE_Q(void) { return AV_TIME_BASE_Q; }

/// AVERROR_EXIT from the interrupt callback when *flag is non-zero; the flag is an atomic int owned by Swift.
static inline int CFFmpeg_interrupt_callback(void *opaque) {
    return __atomic_load_n((const int *)opaque, __ATOMIC_ACQUIRE) != 0;
}
static inline void CFFmpeg_set_flag(int *flag, int value) { __atomic_store_n(flag, value, __ATOMIC_RELEASE); }

/// Stereo / mono default layouts, which are compound-literal macros in 5.1.
static inline void CFFmpeg_default_layout(AVChannelLayout *layout, int channels) {
    av_channel_layout_default(layout, channels);
}

#endif
