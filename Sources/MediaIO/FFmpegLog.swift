import CFFmpeg
import Synchronization

/// FFmpeg's own console logging. Libraries log warnings (and x264 its statistics) to stderr by default, which would
/// drown our one-line errors; we keep errors only unless asked for more.
public enum FFmpegLog {
    public enum Level: Sendable { case quiet, errors, warnings, info }

    private static let chosen = Atomic<Bool>(false)

    /// Errors only, unless the application chose a level: called when the media layer is first used, so a library
    /// user does not get x264's statistics on stderr.
    static func applyDefault() {
        if !chosen.load(ordering: .relaxed) { av_log_set_level(AV_LOG_ERROR) }
    }

    public static func setLevel(_ level: Level) {
        chosen.store(true, ordering: .relaxed)
        switch level {
        case .quiet: av_log_set_level(AV_LOG_QUIET)
        case .errors: av_log_set_level(AV_LOG_ERROR)
        case .warnings: av_log_set_level(AV_LOG_WARNING)
        case .info: av_log_set_level(AV_LOG_INFO)
        }
    }
}
