import CFFmpeg

/// FFmpeg's own console logging. Libraries log warnings (and x264 its statistics) to stderr by default, which would
/// drown our one-line errors; we keep errors only unless asked for more.
public enum FFmpegLog {
    public enum Level: Sendable { case quiet, errors, warnings, info }

    public static func setLevel(_ level: Level) {
        switch level {
        case .quiet: av_log_set_level(AV_LOG_QUIET)
        case .errors: av_log_set_level(AV_LOG_ERROR)
        case .warnings: av_log_set_level(AV_LOG_WARNING)
        case .info: av_log_set_level(AV_LOG_INFO)
        }
    }
}
