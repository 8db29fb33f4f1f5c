import ArgumentParser
import Domain
import Foundation
import Logging
import MediaIO
import Recorder
import Timeline

/// A failure reported as one clear line on stderr and a non-zero exit.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    /// The message, without the credentials of any URL it quotes (a camera URL in an error about it).
    init(_ description: String) { self.description = CredentialRedaction.redact(description) }
    /// `error` as one sentence (``ErrorText``).
    init(describing error: any Error) { self.init(ErrorText.sentence(for: error)) }
}

enum CLILogging {
    /// `quietLevel`: what is logged without --verbose (a service says what it does; a one-shot command only warns).
    static func logger(verbose: Bool, quietLevel: Logger.Level = .warning) -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : quietLevel
            // No line repeats a camera URL's password, whoever logs it (our messages, FFmpeg's, errors quoting a URL).
            return RedactingLogHandler(wrapping: handler)
        }
        // FFmpeg's own messages duplicate our errors; show them only when asked to be verbose.
        FFmpegLog.setLevel(verbose ? .warnings : .quiet)
        return Logger(label: "pushav")
    }
}

/// A single self-overwriting progress line on stderr, only when stderr is a terminal.
final class ProgressLine: Sendable {
    let enabled: Bool
    init(enabled: Bool) { self.enabled = enabled && isatty(STDERR_FILENO) == 1 }

    func show(_ p: RecordingProgress) {
        guard enabled else { return }
        var line = String(format: "\rrecording: %.1f s", p.position)
        if let d = p.duration, d > 0 { line += String(format: " of %.1f s (%.0f%%)", d, min(100, 100 * p.position / d)) }
        line += ", \(p.sessions) session(s)"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func clear() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

enum ReportFile {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func write(_ report: RecordingReport, to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(try encode(report).utf8).write(to: directory.appendingPathComponent("report.json"), options: .atomic)
    }

    /// What a failed recording left complete on disk, for its error line; nil when nothing was written.
    static func summaryOfSaved(_ report: RecordingReport) -> String? {
        guard !report.sessions.isEmpty else { return nil }
        let segments = report.sessions.flatMap(\.tracks).map(\.segments.count).reduce(0, +)
        return "\(report.sessions.count) session(s), \(segments) segment file(s) written before the fault are complete"
    }

    static func summary(_ report: RecordingReport, directory: String) -> String {
        var lines: [String] = []
        let input = report.input
        var facts = "\(input.url): \(input.container)"
        if let d = input.duration { facts += String(format: ", %.3f s", d) }
        if let v = input.video {
            facts += ", \(v.codec) \(v.width ?? 0)x\(v.height ?? 0)"
            if let r = v.frameRate { facts += String(format: "@%.3g", r) }
        }
        if let a = input.audio { facts += ", \(a.codec) \(a.sampleRate ?? 0) Hz" }
        lines.append(facts)
        let damage = input.damage
        if damage.droppedPackets + damage.repairedTimestamps > 0 {
            lines.append("input damaged: \(damage.droppedPackets) packet(s) dropped, \(damage.repairedTimestamps) "
                         + "timestamp(s) repaired (report.json input.damage)")
        }
        if !report.motion.isEmpty {
            lines.append("motion: " + report.motion.map { String(format: "%.2f–%.2f s", $0.start, $0.end) }.joined(separator: ", "))
        }
        if report.sessions.isEmpty { lines.append("no clip recorded") }
        for s in report.sessions {
            var head = "session \(s.session): " + String(format: "%.3f–%.3f s (%.3f s), %@", s.start, s.end, s.duration, s.endReason)
            if let reason = ClipEndReason(rawValue: s.endReason), let trigger = s.triggerType.flatMap(TriggerType.init(rawValue:)) {
                head += " (\(reason.explanation(trigger: trigger)))"
            }
            if let t0 = s.trigger, s.triggerType != "continuous" {
                head += String(format: "; trigger %.3f s, pre-roll %.3f s", t0, s.preRoll ?? 0)
                if let d = s.motionDetectedDuration { head += String(format: ", D %.0f s", d) }
                if let a = s.augmentations, a > 0 { head += ", \(a) augmentation(s)" }
            }
            lines.append(head)
            for t in s.tracks {
                let total = t.segmentDetails.map(\.duration).reduce(0, +)
                lines.append(String(format: "  %@ %@%@: %d segment(s), %.3f s, timescale %d, init %@", t.name.rawValue, t.codec,
                                    t.transcoded ? " (transcoded from \(t.sourceCodec))" : "", t.segments.count, total,
                                    t.timescale, "\(directory)/\(t.`init`)"))
            }
            if let clip = s.clip { lines.append("  clip: \(directory)/\(clip)") }
        }
        lines.append("report: \(directory)/report.json")
        return lines.joined(separator: "\n")
    }
}
