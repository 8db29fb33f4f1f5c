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
static inline int CFFmpeg_EAGAIN_ERROR(void) { return AVERROR(EAGAIN); }
static inline int64_t CFFmpeg_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }

#endif
