import Foundation
import Testing
@testable import CMAF

@Suite struct SummaryTests {
    func summary(_ session: SessionSpec, initFile: String = "video.init") throws -> InspectionSummary {
        let header = try CMAFHeader(bytes: session.header.bytes(), fileName: initFile)
        let segments = try session.segments.map { try CMAFSegment(bytes: $0.bytes(), fileName: $0.name, header: header) }
        return InspectionSummary(tracks: [.init(header: header, segments: segments)])
    }

    @Test func trackAndSegmentValues() throws {
        let track = try #require(try summary(SessionSpec.video(chunksPerSegment: 2)).tracks.first)
        #expect(track.trackID == 1 && track.handler == "vide" && track.codec == "avc1.64001f" && track.timescale == 12800)
        #expect(track.segments.map(\.file) == ["segment_1001.m4s", "segment_1002.m4s", "segment_1003.m4s"])
        let second = track.segments[1]
        #expect(second.sequenceNumbers == [3, 4])
        #expect(second.startTicks == 25600 && second.startSeconds == 2)
        #expect(second.durationTicks == 25600 && second.durationSeconds == 2)
        #expect(second.sampleCount == 50 && second.chunkCount == 2)
        #expect(second.firstSampleIsSync == true && second.firstSampleIsIDR == true)
        #expect(second.firstSampleRandomAccess == .idr)
    }

    @Test func audioHasNoIDRColumn() throws {
        let segment = try #require(try summary(SessionSpec.audio(), initFile: "audio.init").tracks.first?.segments.first)
        #expect(segment.firstSampleIsIDR == nil)
        #expect(segment.firstSampleIsSync == true)
    }

    @Test func jsonRoundTripsAndUsesStableKeys() throws {
        let original = try summary(SessionSpec.video())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(original)
        #expect(try JSONDecoder().decode(InspectionSummary.self, from: data) == original)
        let text = try #require(String(data: data, encoding: .utf8))
        for key in ["\"trackID\":1", "\"codec\":\"avc1.64001f\"", "\"firstSampleIsIDR\":true", "\"durationTicks\":25600", "\"sequenceNumbers\":[1]"] {
            #expect(text.contains(key), "missing \(key)")
        }
    }

    @Test func textTableIsAlignedAndComplete() throws {
        var session = SessionSpec.video()
        session.segments[2].chunks[0].samples.removeLast(10)
        let text = try summary(session).renderText()
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "video.init: track 1 vide avc1.64001f timescale 12800")
        #expect(lines.count == 5)
        let columns = lines.dropFirst().map { $0.split(separator: " ").map(String.init) }
        #expect(columns[0] == ["segment", "seq", "tfdt", "start", "s", "duration", "dur", "s", "samples", "chunks", "sync", "key"])
        #expect(columns[1] == ["segment_1001.m4s", "1", "0", "0.000", "25600", "2.000", "50", "1", "yes", "idr"])
        #expect(columns[3] == ["segment_1003.m4s", "3", "51200", "4.000", "20480", "1.600", "40", "1", "yes", "idr"])
        // Every cell is padded to its column width, so all table rows have the same length.
        #expect(Set(lines.dropFirst().map(\.count)).count == 1)
    }

    @Test func hugeDecodeTimesRenderWithoutTrapping() throws {
        var session = SessionSpec.audio(segments: 1)
        session.header.timescale = 1
        session.segments[0].chunks[0].decodeTime = UInt64.max - 10
        let text = try summary(session).renderText()
        #expect(text.contains(String(UInt64.max - 10)))
        #expect(text.contains("e+19"))
    }
}
