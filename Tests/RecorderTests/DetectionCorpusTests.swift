import Foundation
import MediaIO
import Motion
import Synchronization
import Testing
import TestSupport

/// The detector on the labelled corpus (`TestMedia/detection`, made by `Scripts/make-detection-corpus`): the same
/// decode-and-scale path `pushav record` and `pushav serve` use (``LumaSampler`` at the analysis size, the detector's
/// own analysis rate), every clip analysed once, every sensitivity read from the per-picture lowest sensitivity.
///
/// The bounds are the goals of the detector (README, "Motion detection") and the corpus figures it reached: a change
/// that loses a crossing, triggers later or adds a false trigger fails here.
@Suite("Detection corpus")
struct DetectionCorpusTests {
    @Test func mediumIsQuietOnNuisanceAndSeesEveryCrossingWithinASecond() throws {
        let score = try Self.score()
        let medium = score.at(5)
        #expect(medium.nuisanceFalse == 0, "Medium false triggers on nuisance: \(medium.falseClips)")
        #expect(medium.crossingFalse == 0, "Medium false triggers outside the crossings: \(medium.falseClips)")
        #expect(medium.withinOneSecond == medium.crossings, "Medium crossings later than 1 s or missed: \(medium.latencies)")
        #expect(try #require(medium.medianLatency) <= 0.41, "Medium median latency \(medium.medianLatency ?? -1) s")
        #expect(try #require(medium.p95Latency) <= 0.51, "Medium p95 latency \(medium.p95Latency ?? -1) s")
    }

    /// High's goal is at most one false trigger per camera-hour; on this corpus it still fires once on the headlight
    /// sweep and once on the insect at the lens (README, "Motion detection"): those two are the bound, nothing more.
    @Test func highSeesEveryCrossingAtOnceAndLowStaysQuiet() throws {
        let score = try Self.score()
        let high = score.at(10)
        #expect(high.nuisanceFalse <= 2, "High: \(high.nuisanceFalse) false triggers in \(high.nuisanceSeconds) s: \(high.falseClips)")
        #expect(Set(high.falseClips.keys).isSubset(of: ["headlight.mp4", "insect.mp4"]), "High false triggers: \(high.falseClips)")
        #expect(high.crossingFalse == 0)
        #expect(try #require(high.medianLatency) <= 0.21, "High median latency \(high.medianLatency ?? -1) s")
        #expect(high.withinOneSecond == high.crossings, "High crossings later than 1 s or missed: \(high.latencies)")
        #expect(score.at(1).nuisanceFalse == 0)
    }

    /// After the IR switch the detector re-arms within 2 s: the figure entering 0.5 s after it is seen by then.
    @Test func reArmsWithinTwoSecondsOfAnIRSwitch() throws {
        let score = try Self.score()
        for sensitivity in [5, 10] {
            let latency = try #require(score.at(sensitivity).latencies["cross-light-30-ir.mp4"] ?? nil,
                                       "the crossing after the IR switch was missed at \(sensitivity)")
            let label = try #require(score.labels.first { $0.file == "cross-light-30-ir.mp4" })
            let rearm = try #require(label.rearm)
            #expect(label.motion[0].start + latency <= rearm + 2.01, "seen \(latency) s after entry at sensitivity \(sensitivity)")
        }
    }

    /// A higher sensitivity never triggers later, nor on fewer crossings.
    @Test func sensitivityIsMonotonic() throws {
        let score = try Self.score()
        for sensitivity in 1..<10 {
            let lower = score.at(sensitivity), higher = score.at(sensitivity + 1)
            for (clip, latency) in lower.latencies {
                guard let latency else { continue }
                let other = try #require(higher.latencies[clip] ?? nil, "\(clip) seen at \(sensitivity), not at \(sensitivity + 1)")
                #expect(other <= latency, "\(clip): \(latency) s at \(sensitivity), \(other) s at \(sensitivity + 1)")
            }
        }
    }

    // MARK: Corpus

    struct Label: Decodable, Sendable {
        struct Interval: Decodable, Sendable {
            var start: Double
            var end: Double
        }
        var file: String
        var kind: String
        var nuisance: String
        var duration: Double
        var motion: [Interval]
        var rearm: Double?
    }

    /// One sensitivity's figures over the corpus.
    struct Figures {
        var nuisanceFalse = 0
        var nuisanceSeconds = 0.0
        var crossingFalse = 0
        /// Per clip: the times of its false triggers.
        var falseClips: [String: [Double]] = [:]
        /// Per crossing clip: seconds from entry to the first motion, nil when missed.
        var latencies: [String: Double?] = [:]
        var crossings: Int { latencies.count }
        var withinOneSecond: Int { latencies.values.filter { ($0 ?? .infinity) <= 1 }.count }
        var falsePerHour: Double { Double(nuisanceFalse) * 3600 / nuisanceSeconds }
        var medianLatency: Double? {
            let found = latencies.values.compactMap { $0 }.sorted()
            return found.isEmpty ? nil : found[found.count / 2]
        }
        var p95Latency: Double? {
            let found = latencies.values.compactMap { $0 }.sorted()
            return found.isEmpty ? nil : found[min(found.count - 1, Int(0.95 * Double(found.count)))]
        }
    }

    struct Score: Sendable {
        var labels: [Label]
        /// Per clip: each analysed picture's time (0 = first picture) and the lowest sensitivity that saw motion.
        var pictures: [String: [(time: Double, lowest: Int?)]]

        /// A trigger is motion after at least a second without any (as a 1 s clip with no blind window records it).
        func at(_ sensitivity: Int) -> Figures {
            var figures = Figures()
            for label in labels {
                var onsets: [Double] = []
                var last: Double?
                for picture in pictures[label.file] ?? [] where (picture.lowest ?? 11) <= sensitivity {
                    if last == nil || picture.time - last! > 1 { onsets.append(picture.time) }
                    last = picture.time
                }
                let wrong = onsets.filter { t in !label.motion.contains { $0.start <= t && t <= $0.end + 1 } }
                if !wrong.isEmpty { figures.falseClips[label.file] = wrong }
                if label.motion.isEmpty {
                    figures.nuisanceFalse += wrong.count
                    figures.nuisanceSeconds += label.duration
                } else {
                    figures.crossingFalse += wrong.count
                    let interval = label.motion[0]
                    let first = pictures[label.file]?.first { ($0.lowest ?? 11) <= sensitivity && $0.time >= interval.start && $0.time <= interval.end + 1 }
                    figures.latencies.updateValue(first.map { $0.time - interval.start }, forKey: label.file)
                }
            }
            return figures
        }
    }

    static let corpus = TestPaths.media("detection")

    /// The corpus analysed once per test process (the four tests share it).
    static func score() throws -> Score {
        try cache.withLock { cached in
            if let cached { return cached }
            let labels = try JSONDecoder().decode([Label].self, from: Data(contentsOf: corpus.appendingPathComponent("labels.json")))
            var pictures: [String: [(time: Double, lowest: Int?)]] = [:]
            for label in labels { pictures[label.file] = try analyse(corpus.appendingPathComponent(label.file)) }
            let score = Score(labels: labels, pictures: pictures)
            print(table(score))
            cached = score
            return score
        }
    }

    private static let cache = Mutex<Score?>(nil)

    /// Decodes `url` and runs the default detector on it as the recorder does.
    static func analyse(_ url: URL) throws -> [(time: Double, lowest: Int?)] {
        let input = try MediaInput(url: url.path)
        let video = try #require(input.video)
        let width = try #require(video.width), height = try #require(video.height)
        let configuration = MotionDetectorConfiguration(sourceWidth: width, sourceHeight: height)
        var detector = MotionDetector(configuration: configuration)
        let sampler = try LumaSampler(input: input, width: configuration.analysisWidth, height: configuration.analysisHeight)
        var found: [(time: Double, lowest: Int?)] = []
        var origin: Double?
        func take(_ picture: DecodedPicture) throws {
            let seconds = picture.time.seconds
            origin = origin ?? seconds
            let t = seconds - origin!
            guard detector.wantsFrame(at: t) else { return }
            let luma = try picture.luma()
            let result = detector.analyseNow(LumaPlane(width: luma.width, height: luma.height, pixels: luma.pixels), at: t,
                                             isKeyframe: picture.isKeyframe)
            found.append((t, result.anywhere.lowestSensitivity))
        }
        let packet = try Packet()
        while try input.read(into: packet) {
            guard packet.streamIndex == video.index else { continue }
            try sampler.decode(packet, take)
        }
        try sampler.decode(nil, take)
        return found
    }

    /// The figures per sensitivity, as `Scripts/bench-detection` prints them.
    static func table(_ score: Score) -> String {
        var lines = ["detection corpus: sensitivity | false/h nuisance (count) | false in crossing clips | within 1 s | median | p95"]
        for s in 1...10 {
            let f = score.at(s)
            let median = f.medianLatency.map { String(format: "%.2f s", $0) } ?? "–"
            let p95 = f.p95Latency.map { String(format: "%.2f s", $0) } ?? "–"
            lines.append(String(format: "  %2d | %6.0f (%d) | %d | %d/%d | %@ | %@", s, f.falsePerHour, f.nuisanceFalse,
                                f.crossingFalse, f.withinOneSecond, f.crossings, median, p95))
            if [1, 5, 10].contains(s) {
                lines.append("      false: \(f.falseClips.sorted { $0.key < $1.key }.map { "\($0.key) at \($0.value.map { String(format: "%.1f", $0) }.joined(separator: "/")) s" }.joined(separator: ", "))")
                lines.append("      latency: \(f.latencies.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.map { String(format: "%.2f", $0) } ?? "missed")" }.joined(separator: ", "))")
            }
        }
        return lines.joined(separator: "\n")
    }
}
