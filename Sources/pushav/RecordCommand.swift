import ArgumentParser
import Foundation
import Logging
import Recorder
import Timeline

/// How a recording is triggered (Matter TransportTriggerTypeEnum).
enum TriggerOption: String, ExpressibleByArgument, CaseIterable {
    case continuous
}

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record an input as CMAF sessions and write a report.",
        discussion: """
            Writes, under --out:
              session_<N>/<track>/<track>.init          CMAF header (ftyp + moov) of each track
              session_<N>/<track>/segment_<1001+k>.m4s  CMAF segments (prft + moof + mdat per chunk)
              clips/session_<N>.mp4                     an ordinary MP4 of the session, for people
              report.json                               input facts, tracks, codec strings, segment times

            H.264, HEVC, AAC and Opus are copied as they are; other codecs are transcoded to H.264/AAC and the \
            report says so. Segments start on IDR frames: each lasts --segment-duration, cut at the first keyframe \
            at or after the target when the GOP does not divide it.

            Examples:
              pushav record video.mp4 --out out --trigger continuous
              pushav record video.mp4 --out out --trigger continuous --segment-duration 2000 --chunk-duration 500
              pushav record rtsp://cam/stream --out out --trigger continuous --json > report.json
            """
    )

    @Argument(help: "Input file or URL (anything libavformat opens).")
    var input: String

    @Option(name: .long, help: "Output directory (created if missing).")
    var out: String

    @Option(name: .long, help: "What starts a recording: \(TriggerOption.allCases.map(\.rawValue).joined(separator: ", ")).")
    var trigger: TriggerOption = .continuous

    @Option(name: .long, help: "Target CMAF segment duration in milliseconds (Matter SegmentDuration).")
    var segmentDuration: Int = 4000

    @Option(name: .long, help: "CMAF chunk duration in milliseconds; 0 = one chunk per segment (Matter ChunkDuration).")
    var chunkDuration: Int = 0

    @Flag(name: .long, help: "Record video only.")
    var noAudio = false

    @Flag(name: .long, help: "Print the report as JSON on stdout instead of a summary.")
    var json = false

    @Flag(name: .long, help: "Log what happens (to stderr).")
    var verbose = false

    @OptionGroup(title: "Upload") var push: PushOptions

    func validate() throws {
        guard (100...60_000).contains(segmentDuration) else {
            throw ValidationError("--segment-duration must be 100…60000 ms, got \(segmentDuration)")
        }
        guard chunkDuration == 0 || (10..<segmentDuration).contains(chunkDuration) else {
            throw ValidationError("--chunk-duration must be 0 or 10 ms up to the segment duration, got \(chunkDuration)")
        }
    }

    func run() async throws {
        let logger = CLILogging.logger(verbose: verbose)
        var options = RecordingOptions(output: URL(fileURLWithPath: out))
        options.segmentDuration = .milliseconds(Int64(segmentDuration))
        options.chunkDuration = chunkDuration > 0 ? .milliseconds(Int64(chunkDuration)) : nil
        options.includeAudio = !noAudio
        let upload = try RecordingUpload.start(push, options: &options, logger: logger)
        let progressLine = ProgressLine(enabled: !json)
        let report: RecordingReport
        do {
            report = try await Recorder.recordContinuous(input: input, options: options, logger: logger) { p in
                progressLine.show(p)
            }
        } catch let failure as RecordingFailure {
            progressLine.clear()
            if let partial = failure.report { try? ReportFile.write(partial, to: options.output) }
            throw CLIError("\(failure.underlying)" + (failure.report.map { " (\(ReportFile.summaryOfSaved($0)))" } ?? ""))
        } catch {
            progressLine.clear()
            throw CLIError("\(error)")
        }
        progressLine.clear()
        try await upload?.finish()
        try ReportFile.write(report, to: options.output)
        if json {
            print(try ReportFile.encode(report))
        } else {
            print(ReportFile.summary(report, directory: out))
        }
    }
}
