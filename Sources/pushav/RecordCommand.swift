import ArgumentParser
import Domain
import Foundation
import Ingest
import Logging
import Motion
import Recorder
import Timeline
import TransportModel
import TransportRecording

/// `--trigger motion|continuous`: what starts a recording of a file or stream. Not `command`: nothing sends
/// ManuallyTriggerTransport to `pushav record` (`pushav serve` takes it from the cluster).
extension TriggerType: ExpressibleByArgument {
    public init?(argument: String) {
        guard let type = TriggerType(rawValue: argument), type != .command else { return nil }
        self = type
    }

    public static var allValueStrings: [String] { [TriggerType.motion, .continuous].map(\.rawValue) }
}

/// `--zone ID:x1,y1,x2,y2,…[:sensitivity]`: a polygon in the video's pixel coordinates.
struct ZoneArgument: ExpressibleByArgument {
    var zone: Domain.MotionZone

    init?(argument: String) {
        let parts = argument.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), let id = UInt16(parts[0]) else { return nil }
        let numbers = parts[1].split(separator: ",").compactMap { Double($0) }
        guard numbers.count == parts[1].split(separator: ",").count, numbers.count >= 4, numbers.count % 2 == 0 else {
            return nil
        }
        var sensitivity: Int?
        if parts.count == 3 {
            guard let s = Int(parts[2]) else { return nil }
            sensitivity = s
        }
        let points = stride(from: 0, to: numbers.count, by: 2).map { ZonePoint(x: numbers[$0], y: numbers[$0 + 1]) }
        zone = numbers.count == 4
            ? .rectangle(id: id, x1: numbers[0], y1: numbers[1], x2: numbers[2], y2: numbers[3], sensitivity: sensitivity)
            : Domain.MotionZone(id: id, polygon: points, sensitivity: sensitivity)
    }
}

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record an input as CMAF event clips (or continuously) and write a report.",
        discussion: """
            With --trigger motion (the default) every clip follows the Matter Push AV time-control rules: it is \
            activated by motion at t0, lasts --initial seconds, each further motion extends it by --augmentation \
            (no second extension until the clip has run past its previous length), never beyond --max-duration; \
            after a motion clip ends, motion is ignored for --blind seconds. A clip starts --pre-roll ms before t0 \
            at the latest, always on a keyframe, and ends frame-accurately at t0 + its final duration. \
            --trigger continuous records everything, a new session every --session-length seconds.

            Writes, under --out:
              session_<N>/<track>/<track>.init          CMAF header (ftyp + moov) of each track
              session_<N>/<track>/segment_<1001+k>.m4s  CMAF segments (prft + moof + mdat per chunk)
              clips/session_<N>.mp4                     an ordinary MP4 of each clip, for people
              report.json                               motion intervals, every clip's trigger/start/end/pre-roll/
                                                        duration/end reason, tracks, codec strings, segment times

            H.264, HEVC, AAC and Opus are copied as they are; other codecs are transcoded to H.264/AAC and the \
            report says so. Invalid options are answered with the Matter status the Push AV cluster would give; what \
            is not implemented (Interface-2 HLS) is refused with FAILURE, never ignored. --dash adds DASH manifests; a \
            --transport document with cencKey and cencKeyID encrypts every header and segment (CENC, scheme cenc). \
            Exit status 3: the recording finished, but a triggered clip could not be recorded (no usable keyframe) \
            or lost frames (pre-roll buffer full); stderr and report.json (droppedClips, preRollBuffer) say which.

            Session numbers only ever increase: a run into an --out that already holds sessions continues after the \
            highest one; with --push also after the highest one used for that URL (kept in --state-dir).

            Examples:
              pushav record video.mp4 --out out
              pushav record video.mp4 --out out --sensitivity 10 --initial 5 \\
                  --max-duration 15 --pre-roll 2000
              pushav record video.mp4 --out out --zone 1:0,0,640,720 \\
                  --zone 2:640,0,1280,360,640,720:8
              pushav record video.mp4 --out out --transport transport.json --no-push \\
                  --json > report.json
              pushav record rtsp://cam/stream --out out --trigger continuous \\
                  --segment-duration 2000 --chunk-duration 500
            """
    )

    @Argument(help: "Input file or URL (anything libavformat opens).")
    var input: String

    @Option(name: .long, help: "Output directory (created if missing).")
    var out: String

    @Option(name: .long, help: "What starts a recording: motion or continuous. (default: motion, or the --transport file's)")
    var trigger: TriggerType?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Motion sensitivity 1 (low) … 10 (high); Google Home: Low 1, Medium 5, High 10. (default: 5)", valueName: "1…10"))
    var sensitivity: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "InitialDuration: seconds a clip lasts after its activation, 1…65535. (default: 10)", valueName: "seconds"))
    var initial: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "AugmentationDuration: seconds each further motion adds, 0…65535. (default: 5)", valueName: "seconds"))
    var augmentation: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "MaxDuration: the longest a clip lasts after its activation, 1…65535 seconds, ≥ --initial. (default: 30)",
        valueName: "seconds"))
    var maxDuration: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "BlindDuration: seconds motion is ignored after a motion clip, 0…65535. (default: 30)", valueName: "seconds"))
    var blind: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "MaxPreRollLen: how much before the trigger a clip may start, 0…65535 ms; 0 = none. (default: 4000)",
        valueName: "ms"))
    var preRoll: Int?

    @Option(name: .long, help: ArgumentHelp(
        "A motion zone: only motion inside the listed zones starts a clip (repeatable).",
        discussion: """
            ID:x1,y1,x2,y2 is a rectangle, ID:x1,y1,x2,y2,x3,y3[,…] a polygon, in the video's pixel coordinates. \
            A zone without :sensitivity uses --sensitivity (default 5). Once any zone has its own :sensitivity (1…10), \
            the recording follows the cluster's per-zone rules: every zone carries a sensitivity (those without one \
            get --sensitivity) and the transport has no global motionSensitivity.
            """,
        valueName: "id:x1,y1,x2,y2[,…][:sensitivity]"))
    var zone: [ZoneArgument] = []

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Target CMAF segment duration, 500…65500 ms (Matter SegmentDuration). (default: 4000)", valueName: "ms"))
    var segmentDuration: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "CMAF chunk duration, 0…65535 ms and at most half the segment; 0 = no chunks (Matter ChunkDuration). (default: 0)",
        valueName: "ms"))
    var chunkDuration: Int?

    @Flag(name: .long, help: ArgumentHelp(
        "CMAF Interface-2 DASH (Matter CMAFInterface 1): each session also gets session_<N>/index.mpd, a dynamic MPD before its headers and a static one after its last segment (uploaded in that order with --push)."))
    var dash = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Continuous recording: seconds per CMAF session, ≥ 1.", valueName: "seconds"))
    var sessionLength: Int = 300

    @Option(name: .long, help: "A TransportOptions JSON document (Google Home / Matter field names); flags override it.")
    var transport: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --push: where the highest session number used per URL is kept (default: $PUSHAV_STATE_DIR, else $XDG_STATE_HOME/pushav, else ~/.local/state/pushav).",
        valueName: "dir"))
    var stateDir: String?

    @Flag(name: .long, help: "With --transport: record locally only; the document's url is not uploaded to.")
    var noPush = false

    @Flag(name: .long, help: ArgumentHelp(
        "Analyse motion on key pictures only: one decode per GOP (for low-power hosts); motion is seen up to one keyframe interval later."))
    var keyframeAnalysis = false

    @Option(name: .long, help: ArgumentHelp(
        "Analyse motion on this stream instead (a camera's low-resolution substream, same view): the input is then only copied, never decoded.",
        valueName: "url"))
    var analysisSource: String?

    @Flag(name: .long, help: "Record video only.")
    var noAudio = false

    @Flag(name: .long, help: "Do not write the playable clips/session_<N>.mp4 (a sidecar that only uploads saves one copy).")
    var noClip = false

    @Flag(name: .long, help: "Print the report as JSON on stdout instead of a summary.")
    var json = false

    @Flag(name: .long, help: "Log what happens (to stderr).")
    var verbose = false

    @OptionGroup(title: "Upload") var push: PushOptions

    func run() async throws {
        let logger = CLILogging.logger(verbose: verbose)
        let output = URL(fileURLWithPath: out)
        let transportOptions = try resolvedTransportOptions()
        var options: RecordingOptions
        do {
            options = try RecordingOptions(transport: transportOptions, zones: zone.map(\.zone), output: output,
                                           continuousSessionLength: .seconds(Int64(max(1, sessionLength))))
        } catch {
            throw CLIError(MatterStatusText.describe(error))
        }
        options.includeAudio = !noAudio
        options.writeClips = !noClip
        options.analyseKeyframesOnly = keyframeAnalysis
        options.analysisSource = analysisSource.map { AnalysisSource(url: $0, recording: input, pacedRealTime: options.paceRealTime) }
        let progressLine = ProgressLine(enabled: !json)
        // Ctrl-C / SIGTERM end the recording normally (a live input has no other end); a second one exits at once.
        let stop = RecordingStop()
        let signals = StopSignals(stop: stop) { number in
            progressLine.clear()
            FileHandle.standardError.write(Data(("interrupted (\(StopSignals.name(number))): stopping the input; open clips end "
                + "at the last frame read (send it again to exit at once)\n").utf8))
        }
        defer { withExtendedLifetime(signals) {} }
        let upload = try RecordingUpload.start(push, options: &options, logger: logger)
        let numbering = try SessionNumbering(options: &options, upload: upload, stateDirectory: stateDir, logger: logger)
        let report: RecordingReport
        do {
            report = try await Recorder.record(input: input, options: options, stop: stop, logger: logger) {
                progressLine.show($0)
            }
        } catch let stopped as RecordingStoppedBeforeStart {
            progressLine.clear()
            FileHandle.standardError.write(Data("interrupted: \(stopped)\n".utf8))
            try await upload?.finish(stop: stop)
            return
        } catch let failure as RecordingFailure {
            progressLine.clear()
            if let partial = failure.report { try? ReportFile.write(partial, to: output) }
            throw CLIError(ErrorText.sentence(for: failure.underlying)
                + (failure.report.flatMap(ReportFile.summaryOfSaved).map { " (\($0))" } ?? ""))
        } catch {
            progressLine.clear()
            throw CLIError(describing: error)
        }
        progressLine.clear()
        // The report first: it describes what is on disk whatever the uploads do next.
        try ReportFile.write(report, to: output)
        if let at = report.stoppedAt {
            let closed = report.sessions.filter { $0.endReason == ClipEndReason.interrupted.rawValue }.map(\.session)
            let clips = closed.isEmpty ? "no clip was open" : "closed \(closed.count) open clip(s) (session "
                + closed.map(String.init).joined(separator: ", ") + ")"
            FileHandle.standardError.write(Data(String(format: "interrupted at %.3f s: %@; report written\n", at, clips).utf8))
        }
        try await upload?.finish(stop: stop)
        print(json ? try ReportFile.encode(report) : ReportFile.summary(report, directory: out))
        try numbering.check()
        // Something a trigger asked for is missing: say what on stderr and exit 3, even though the rest is written.
        let losses = Self.losses(report)
        if !losses.isEmpty {
            FileHandle.standardError.write(Data(losses.map { "warning: \($0)\n" }.joined().utf8))
            throw ExitCode(3)
        }
    }

    /// One line per clip that was not recorded or lost frames (report.json has the details).
    static func losses(_ report: RecordingReport) -> [String] {
        var lines = report.droppedClips.map {
            String(format: "%@ clip triggered at %.3f s was not recorded: %@", $0.triggerType, $0.trigger, $0.reason)
        }
        if let buffer = report.preRollBuffer, buffer.droppedPackets > 0 {
            lines.append("pre-roll buffer full: \(buffer.droppedPackets) packet(s) (\(buffer.droppedBytes) bytes) of session(s) "
                + "\(buffer.affectedSessions.map(String.init).joined(separator: ", ")) were dropped; those clips miss frames")
        }
        return lines
    }

    /// The transport's options: the --transport document (or defaults), with the flags applied, validated the way
    /// the cluster validates AllocatePushTransport.
    func resolvedTransportOptions() throws -> TransportOptionsStruct {
        if noPush && push.push != nil { throw CLIError("--no-push and --push contradict each other") }
        var t: TransportOptionsStruct
        if let transport {
            guard let data = FileManager.default.contents(atPath: transport) else {
                throw CLIError("cannot read --transport \(transport): \(UnreadableFile.reason(transport))")
            }
            do {
                t = try JSONDecoder().decode(TransportOptionsStruct.self, from: data)
            } catch {
                throw CLIError("INVALID_COMMAND (0x85): \(transport) is not a TransportOptions document: \(error)")
            }
            // A transport's url is where it uploads: never accept it and then record without uploading.
            if push.push == nil && !noPush {
                throw CLIError("\(transport) uploads to \(t.url): add --push \(t.url) (with --ca/--cert/--key for mutual TLS) "
                    + "to upload there, or --no-push to record locally only")
            }
        } else {
            t = TransportOptionsStruct(
                streamUsage: .recording, tlsEndpointID: 0, url: "https://localhost/pushav/",
                triggerOptions: TransportTriggerOptionsStruct(triggerType: .motion),
                containerOptions: ContainerOptionsStruct(cmafContainerOptions: .init(segmentDuration: 4000, chunkDuration: 0)))
        }
        if let trigger { t.triggerOptions.triggerType = TransportTriggerTypeEnum(trigger) }
        let isContinuous = t.triggerOptions.triggerType == .continuous
        var control = t.triggerOptions.motionTimeControl
            ?? TransportMotionTriggerTimeControlStruct(initialDuration: 10, augmentationDuration: 5, maxDuration: 30, blindDuration: 30)
        if let initial { control.initialDuration = try Self.narrow(initial, "--initial", 1...65535, "s") }
        if let augmentation { control.augmentationDuration = try Self.narrow(augmentation, "--augmentation", 0...65535, "s") }
        if let maxDuration { control.maxDuration = UInt32(try Self.narrow(maxDuration, "--max-duration", 1...65535, "s")) }
        if let blind { control.blindDuration = try Self.narrow(blind, "--blind", 0...65535, "s") }
        if isContinuous {
            t.triggerOptions.motionTimeControl = nil
            t.triggerOptions.maxPreRollLen = nil
            t.triggerOptions.motionZones = nil
            t.triggerOptions.motionSensitivity = nil
        } else {
            t.triggerOptions.motionTimeControl = control
            if let preRoll { t.triggerOptions.maxPreRollLen = try Self.narrow(preRoll, "--pre-roll", 0...65535, "ms") }
            if t.triggerOptions.maxPreRollLen == nil { t.triggerOptions.maxPreRollLen = 4000 }
            if let sensitivity, !(1...10).contains(sensitivity) {
                throw CLIError("CONSTRAINT_ERROR (0x87): --sensitivity must be 1…10, got \(sensitivity)")
            }
            try applyZones(to: &t.triggerOptions)
        }
        var cmaf = t.containerOptions.cmafContainerOptions ?? .init(segmentDuration: 4000, chunkDuration: 0)
        if let segmentDuration { cmaf.segmentDuration = try Self.narrow(segmentDuration, "--segment-duration", 500...65500, "ms") }
        if let chunkDuration { cmaf.chunkDuration = try Self.narrow(chunkDuration, "--chunk-duration", 0...65535, "ms") }
        if dash { cmaf.cmafInterface = .interface2DASH }
        t.containerOptions.cmafContainerOptions = cmaf
        let perZone = (t.triggerOptions.motionZones?.value ?? []).contains { $0.sensitivity != nil }
        do {
            try t.validateShape(features: perZone ? [.perZoneSensitivity] : [])
        } catch {
            throw CLIError(MatterStatusText.describe(error))
        }
        for entry in t.triggerOptions.motionZones?.value ?? [] {
            if let id = entry.zone.value, !zone.contains(where: { $0.zone.id == id }) {
                throw CLIError("cluster InvalidZone (0x05): motion zone \(id) has no polygon; give it with --zone \(id):x1,y1,x2,y2")
            }
        }
        return t
    }

    /// `value` of `flag` in the cluster's range for its field, stated once here (the help text says the same): one
    /// message whether it was written `--initial 0`, `--initial -5` or `--initial=-5`.
    static func narrow(_ value: Int, _ flag: String, _ range: ClosedRange<Int>, _ unit: String) throws -> UInt16 {
        guard range.contains(value), let narrowed = UInt16(exactly: value) else {
            throw CLIError("CONSTRAINT_ERROR (0x87): \(flag) must be \(range.lowerBound)…\(range.upperBound) \(unit), got \(value)")
        }
        return narrowed
    }

    /// Zones and sensitivity (rule 1 and the cluster's PERZONESENS rules), from the flags over the --transport document.
    ///
    /// A camera either has per-zone sensitivity (every zone entry carries its own and `motionSensitivity` is absent) or
    /// not (no zone entry carries one; `motionSensitivity` is required). `--zone` flags replace the document's zones;
    /// if any of them has its own `:sensitivity`, the recorder acts as a PERZONESENS camera and every other zone gets
    /// `--sensitivity` (default 5). Without per-zone sensitivity, `--sensitivity` (default: the document's, else 5)
    /// applies to every zone. A document that mixes both is refused as the cluster refuses it.
    func applyZones(to triggers: inout TransportTriggerOptionsStruct) throws {
        if !zone.isEmpty {
            let perZone = zone.contains { $0.zone.sensitivity != nil }
            let fallback = sensitivity ?? triggers.motionSensitivity?.value.map(Int.init) ?? 5
            triggers.motionZones = .value(zone.map {
                TransportZoneOptionsStruct(
                    zone: .value($0.zone.id),
                    sensitivity: perZone ? UInt8(clamping: $0.zone.sensitivity ?? fallback) : nil)
            })
            if perZone {
                triggers.motionSensitivity = nil
                return
            }
        }
        if triggers.motionZones == nil { triggers.motionZones = .null }
        let perZone = (triggers.motionZones?.value ?? []).contains { $0.sensitivity != nil }
        if let sensitivity {
            if perZone {
                throw CLIError("INVALID_COMMAND (0x85): --sensitivity: the --transport document gives per-zone sensitivities; "
                    + "set them in its motionZones or with --zone ID:…:sensitivity")
            }
            triggers.motionSensitivity = .value(UInt8(sensitivity))
        } else if triggers.motionSensitivity == nil && !perZone {
            triggers.motionSensitivity = .value(5)
        }
    }
}

/// Matter statuses as a controller shows them: `CONSTRAINT_ERROR (0x87)`, `cluster InvalidPreRollLength (0x0C)`.
enum MatterStatusText {
    static func describe(_ error: TransportCommandError) -> String {
        switch error.status {
        case .interactionModel(let s):
            let name = "\(s)".reduce(into: "") { $0 += $1.isUppercase ? "_\($1)" : $1.uppercased() }
            return "\(name) (0x\(String(s.rawValue, radix: 16, uppercase: true))): \(error.message)"
        case .cluster(let s):
            let name = "\(s)".prefix(1).uppercased() + "\(s)".dropFirst()
            return "cluster \(name) (0x\(String(format: "%02X", s.rawValue))): \(error.message)"
        }
    }
}
