import Testing
@testable import CMAF

/// One synthetic session and the checklist item it is about.
struct ConformanceCase: Sendable, CustomTestStringConvertible {
    let item: Int
    let name: String
    /// Further items the same defect legitimately triggers (e.g. a base offset also misplaces the samples).
    let alsoReported: Set<Int>
    let session: @Sendable () -> SessionSpec

    init(_ item: Int, _ name: String, alsoReported: Set<Int> = [], _ session: @escaping @Sendable () -> SessionSpec) {
        self.item = item
        self.name = name
        self.alsoReported = alsoReported
        self.session = session
    }

    var testDescription: String { "item \(item): \(name)" }
}

func video(_ change: (inout SessionSpec) -> Void = { _ in }) -> SessionSpec {
    var session = SessionSpec.video()
    change(&session)
    return session
}

func audio(_ change: (inout SessionSpec) -> Void = { _ in }) -> SessionSpec {
    var session = SessionSpec.audio()
    change(&session)
    return session
}

func hevc(firstPicture: UInt8, followingPicture: UInt8) -> SessionSpec {
    video {
        $0.header.sampleEntryType = "hvc1"
        $0.header.configBox = ConfigBox.hvcC()
        for segment in $0.segments.indices {
            for index in $0.segments[segment].chunks[0].samples.indices {
                $0.segments[segment].chunks[0].samples[index].payload = nalSample(
                    [index % 25 == 0 ? NAL.hevc(firstPicture) : NAL.hevc(index % 25 == 1 ? followingPicture : 1)])
            }
        }
    }
}

/// Rewrites every sample's presentation offset.
func withSamples(_ session: inout SessionSpec, _ change: (inout SampleSpec, Int) -> Void) {
    for segment in session.segments.indices {
        for chunk in session.segments[segment].chunks.indices {
            for index in session.segments[segment].chunks[chunk].samples.indices {
                change(&session.segments[segment].chunks[chunk].samples[index], index)
            }
        }
    }
}

let failingCases: [ConformanceCase] = [
    ConformanceCase(1, "free box before ftyp") { video { $0.header.topLevelBefore = [box("free", [0, 0])] } },
    ConformanceCase(1, "mdat after moov") { video { $0.header.topLevelAfter = [box("mdat", [1, 2, 3])] } },
    ConformanceCase(2, "no cmfc/cmf2 brand") { video { $0.header.compatibleBrands = ["iso6", "mp41"] } },
    ConformanceCase(2, "major brand not compatible") { video { $0.header.majorBrand = "isom" } },
    ConformanceCase(2, "cmfc major with minor_version 1") { video { $0.header.majorBrand = "cmfc"; $0.header.minorVersion = 1 } },
    ConformanceCase(3, "two trak boxes") { video { $0.header.trakCount = 2 } },
    ConformanceCase(3, "no mvex", alsoReported: [15]) { video { $0.header.includeMvex = false } },
    ConformanceCase(3, "trex for another track") { video { $0.header.trexTrackID = 2 } },
    ConformanceCase(4, "stts has an entry") { video { $0.header.tableCounts.stts = 1 } },
    ConformanceCase(4, "stsz counts samples") { video { $0.header.tableCounts.stsz = 3 } },
    ConformanceCase(5, "mvhd duration without mehd") { video { $0.header.movieDuration = 6000 } },
    ConformanceCase(5, "mehd not the total duration") { video { $0.header.mehd = 9999 } },
    ConformanceCase(6, "two elst entries") { video { $0.header.editList = [(0, 0, 1), (0, 512, 1)] } },
    ConformanceCase(6, "elst media_rate 2") { video { $0.header.editList = [(0, 512, 2)] } },
    ConformanceCase(6, "cmf2 video with elst") {
        video { $0.header.compatibleBrands += ["cmf2"]; $0.header.editList = [(0, 512, 1)] }
    },
    ConformanceCase(7, "unsupported sample entry", alsoReported: [8, 19]) {
        video { $0.header.sampleEntryType = "mp4v"; $0.header.configBox = nil }
    },
    ConformanceCase(7, "avc1 without avcC", alsoReported: [8, 19]) { video { $0.header.configBox = nil } },
    ConformanceCase(8, "advertised codec differs") { video { $0.expectations.advertisedCodecString = "avc1.42e01e" } },
    ConformanceCase(8, "AudioObjectType 0 gives a malformed codec string") {
        audio { $0.header.configBox = ConfigBox.esds(audioSpecificConfig: [0x01, 0x90]) }
    },
    ConformanceCase(9, "video timescale differs from the configured one") { video { $0.expectations.timescale = 90000 } },
    ConformanceCase(9, "audio timescale differs from the sample rate") {
        audio { $0.header.timescale = 44100; $0.expectations.segmentDuration = nil }
    },
    ConformanceCase(10, "free box in a segment") { video { $0.segments[1].extraTopLevel = [box("free")] } },
    ConformanceCase(10, "moof without mdat", alsoReported: [14, 19]) { video { $0.segments[1].chunks[0].omitMdat = true } },
    ConformanceCase(10, "emsg after moof") { video { $0.segments[0].emsgAfterMoof = true } },
    ConformanceCase(11, "unknown styp brand") { video { $0.segments[0].stypBrands = ["cmfs", "abcd"] } },
    ConformanceCase(11, "lmsg on a middle segment") { video { $0.segments[1].stypBrands = ["cmfs", "lmsg"] } },
    ConformanceCase(12, "two traf in a moof") { video { $0.segments[2].chunks[0].trafCount = 2 } },
    ConformanceCase(12, "trun before tfdt") { video { $0.segments[0].chunks[0].swapTfdtAndTrun = true } },
    ConformanceCase(12, "no tfdt", alsoReported: [17, 21]) { video { $0.segments[1].chunks[0].decodeTime = nil } },
    ConformanceCase(13, "tfhd track_ID 2") { video { $0.segments[0].chunks[0].trackID = 2 } },
    ConformanceCase(13, "not default-base-is-moof") { video { $0.segments[0].chunks[0].tfhdFlags = 0x3a } },
    ConformanceCase(13, "base-data-offset present", alsoReported: [14, 19]) { video { $0.segments[0].chunks[0].tfhdFlags = 0x02_003b } },
    ConformanceCase(14, "trun without data_offset", alsoReported: [19]) { video { $0.segments[0].chunks[0].trunFlags = 0xe00 } },
    ConformanceCase(14, "data_offset past the mdat", alsoReported: [19]) { video { $0.segments[2].chunks[0].dataOffsetAdjustment = 40 } },
    ConformanceCase(15, "zero sample duration", alsoReported: [17, 20]) {
        video { $0.segments[0].chunks[0].trunFlags = 0xf01; $0.segments[0].chunks[0].samples[3].duration = 0 }
    },
    ConformanceCase(15, "cmf2 durations only in trex") {
        video {
            $0.header.compatibleBrands += ["cmf2"]
            $0.header.trexDefaultDuration = 512
            for index in $0.segments.indices { $0.segments[index].chunks[0].tfhdFlags = 0x02_0032 }
        }
    },
    ConformanceCase(16, "sequence number repeats") { video { $0.segments[2].chunks[0].sequenceNumber = 2 } },
    ConformanceCase(17, "segment missing: gap") { video { $0.segments.remove(at: 1) } },
    ConformanceCase(17, "overlapping tfdt", alsoReported: [21]) {
        video { $0.segments[2].chunks[0].decodeTime! -= 512 }
    },
    ConformanceCase(18, "first sample presented late") { video { $0.segments[1].chunks[0].samples[0].compositionOffset = 512 } },
    ConformanceCase(19, "first sample flagged non-sync") { video { $0.segments[1].chunks[0].samples[0].flags = 0x0101_0000 } },
    ConformanceCase(19, "sync flag on a non-IDR picture") { video { $0.segments[1].chunks[0].samples[0].payload = nalSample([NAL.avcNonIDR]) } },
    ConformanceCase(19, "HEVC CRA followed by RASL") { hevc(firstPicture: 21, followingPicture: 8) },
    ConformanceCase(19, "HEVC BLA_W_LP followed by RASL") { hevc(firstPicture: 16, followingPicture: 9) },
    ConformanceCase(20, "video segment of 3 s for 2 s target and 1 s GOP") { SessionSpec.video(framesPerSegment: 75) },
    ConformanceCase(20, "video segment shorter than target") { SessionSpec.video(framesPerSegment: 25) },
    ConformanceCase(20, "audio segment off by more than one frame") { audio { $0.expectations.segmentDuration = 1.9 } },
    ConformanceCase(21, "no prft") { video { $0.segments[1].prftTrackID = nil } },
    ConformanceCase(21, "prft after the moof") { video { $0.segments[1].prftAfterMoof = true } },
    ConformanceCase(21, "prft for another track") { audio { $0.segments[0].prftTrackID = 7 } },
    ConformanceCase(22, "chunks not configured but present") {
        var session = SessionSpec.video(chunksPerSegment: 2)
        session.expectations.chunks = false
        return session
    },
    ConformanceCase(22, "gap between chunks", alsoReported: [17]) {
        var session = SessionSpec.video(chunksPerSegment: 2)
        session.segments[0].chunks[1].decodeTime! += 512
        return session
    },
]

let passingCases: [ConformanceCase] = [
    // A keyframe may fall on a later chunk boundary (GOP shorter than the segment); only the first chunk must be sync.
    ConformanceCase(22, "second chunk starts with a sync sample") {
        var session = SessionSpec.video(chunksPerSegment: 2)
        session.segments[1].chunks[1].samples[0].flags = 0x0200_0000
        return session
    },
    ConformanceCase(1, "ftyp, moov only") { video() },
    ConformanceCase(2, "major cmfc, minor 0") { video { $0.header.majorBrand = "cmfc"; $0.header.minorVersion = 0; $0.header.compatibleBrands = ["cmfc", "iso6"] } },
    ConformanceCase(2, "cmf2 only") { video { $0.header.majorBrand = "cmf2"; $0.header.minorVersion = 0; $0.header.compatibleBrands = ["cmf2"] } },
    ConformanceCase(3, "one trak, trex matches track 7") {
        video {
            $0.header.trackID = 7
            $0.header.trexTrackID = 7
            for index in $0.segments.indices { $0.segments[index].chunks[0].trackID = 7; $0.segments[index].prftTrackID = 7 }
        }
    },
    ConformanceCase(4, "all tables empty") { audio() },
    ConformanceCase(5, "durations equal mehd") {
        video { $0.header.mehd = 6000; $0.header.movieDuration = 6000; $0.header.trackDuration = 6000; $0.header.mediaDuration = 76800 }
    },
    ConformanceCase(6, "one elst entry at rate 1") { video { $0.header.editList = [(0, 0, 1)] } },
    ConformanceCase(7, "hvc1 with hvcC") { hevc(firstPicture: 19, followingPicture: 1) },
    ConformanceCase(7, "Opus with dOps") { audio { $0.header.sampleEntryType = "Opus"; $0.header.configBox = ConfigBox.dOps() } },
    ConformanceCase(8, "advertised codec matches ignoring case") { video { $0.expectations.advertisedCodecString = "avc1.64001F" } },
    ConformanceCase(9, "audio timescale = sample rate, configured") { audio { $0.expectations.timescale = 48000 } },
    ConformanceCase(10, "emsg before the moof, styp first") {
        video { $0.segments[0].extraTopLevel = [fullBox("emsg", [0, 0, 0, 0])]; $0.segments[0].stypBrands = ["cmfs"] }
    },
    ConformanceCase(11, "lmsg on the last segment") {
        video { for index in $0.segments.indices { $0.segments[index].stypBrands = index == 2 ? ["cmfs", "lmsg"] : ["cmfs", "cmfc"] } }
    },
    ConformanceCase(12, "FFmpeg layout, tfdt v0") { video { for index in $0.segments.indices { $0.segments[index].chunks[0].tfdtVersion = 0 } } },
    ConformanceCase(13, "explicit sample description index absent") {
        video { for index in $0.segments.indices { $0.segments[index].chunks[0].tfhdFlags = 0x02_0038 } }
    },
    ConformanceCase(14, "all per-sample fields in trun") { video { for index in $0.segments.indices { $0.segments[index].chunks[0].trunFlags = 0xf01 } } },
    ConformanceCase(15, "cmf2 with tfhd defaults") { video { $0.header.compatibleBrands += ["cmf2"] } },
    ConformanceCase(16, "sequence numbers with gaps still increase") {
        video { for index in $0.segments.indices { $0.segments[index].chunks[0].sequenceNumber = UInt32(10 * index + 5) } }
    },
    ConformanceCase(17, "session starting at 10 s") {
        video { for index in $0.segments.indices { $0.segments[index].chunks[0].decodeTime! += 128_000 } }
    },
    ConformanceCase(18, "trun v0 without composition offsets") {
        video {
            for index in $0.segments.indices { $0.segments[index].chunks[0].trunVersion = 0; $0.segments[index].chunks[0].trunFlags = 0x601 }
        }
    },
    ConformanceCase(19, "HEVC IDR_W_RADL") { hevc(firstPicture: 19, followingPicture: 1) },
    ConformanceCase(19, "HEVC CRA without RASL (SAP 1, x265's open GOP)") { hevc(firstPicture: 21, followingPicture: 1) },
    ConformanceCase(19, "HEVC CRA with RADL only (SAP 2)") { hevc(firstPicture: 21, followingPicture: 7) },
    ConformanceCase(19, "HEVC BLA_N_LP") { hevc(firstPicture: 18, followingPicture: 1) },
    ConformanceCase(20, "short last video segment") { video { $0.segments[2].chunks[0].samples.removeLast(20) } },
    ConformanceCase(20, "audio 2.005 s for a 2 s target") { audio() },
    ConformanceCase(21, "prft for the audio track") { audio() },
    ConformanceCase(22, "two chunks per segment") { SessionSpec.video(chunksPerSegment: 2) },
]

@Suite struct ConformanceTests {
    @Test(arguments: failingCases)
    func defectIsReportedUnderItsItem(_ testCase: ConformanceCase) {
        let errors = testCase.session().violations().filter { $0.severity == .error }
        #expect(errors.contains { $0.item == testCase.item }, "expected item \(testCase.item), got \(errors)")
        let unexpected = errors.filter { $0.item != testCase.item && !testCase.alsoReported.contains($0.item) }
        #expect(unexpected.isEmpty, "unexpected: \(unexpected)")
    }

    @Test(arguments: passingCases)
    func conformingVariantHasNoErrors(_ testCase: ConformanceCase) {
        let errors = testCase.session().violations().filter { $0.severity == .error }
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func everyChecklistItemHasAPassingAndAFailingCase() {
        #expect(Set(failingCases.map(\.item)) == Set(1 ... 22))
        #expect(Set(passingCases.map(\.item)) == Set(1 ... 22))
    }

    @Test func missingBitRateBoxIsOnlyAWarning() {
        let violations = video { $0.header.includeBitRate = false }.violations()
        #expect(violations.map(\.item) == [7])
        #expect(violations.first?.severity == .warning)
    }

    /// A CRA or BLA without RASL pictures is SAP 1/2, as valid a segment start as an IDR: not even a warning.
    @Test(arguments: [(UInt8(21), UInt8(1)), (21, 6), (16, 1), (17, 7), (18, 1)])
    func cleanCRAOrBLAIsARandomAccessPoint(first: UInt8, following: UInt8) throws {
        let session = hevc(firstPicture: first, followingPicture: following)
        #expect(session.violations().filter { $0.item == 19 }.isEmpty)
        let header = try CMAFHeader(bytes: session.headerFile.bytes)
        for file in session.segmentFiles {
            let segment = try CMAFSegment(bytes: file.bytes, fileName: file.name, header: header)
            #expect(segment.firstSampleIsRandomAccessPoint == true)
            #expect(InspectionSummary.Segment(segment).firstSampleIsRandomAccessPoint == true)
        }
    }

    @Test func craFollowedByRASLIsNoRandomAccessPoint() throws {
        let session = hevc(firstPicture: 21, followingPicture: 8)
        let header = try CMAFHeader(bytes: session.headerFile.bytes)
        let segment = try CMAFSegment(bytes: session.segmentFiles[1].bytes, fileName: "s", header: header)
        #expect(segment.firstSampleIsRandomAccessPoint == false)
        #expect(segment.firstSampleIsIDR == false)
    }

    @Test func unparseableFilesAreReportedNotThrown() {
        let session = SessionSpec.video()
        var broken = session.segmentFiles
        broken[1].bytes.removeLast(100)
        let violations = CMAFConformance(expectations: session.expectations).check(header: session.headerFile, segments: broken)
        #expect(violations.contains { $0.item == 10 && $0.file == "segment_1002.m4s" && $0.message.contains("does not parse") })

        let headerOnly = CMAFConformance().check(header: CMAFFile(name: "bad.init", bytes: [0, 0, 0, 9, 0x66]), segments: [])
        #expect(headerOnly.map(\.item) == [1])
    }

    @Test func violationsNameTheFile() {
        let violations = video { $0.segments[1].prftTrackID = nil }.violations()
        #expect(violations == [Violation(item: 21, file: "segment_1002.m4s", message: "no prft")])
    }

    @Test func audioToleranceCanBeConfigured() {
        let strict = audio { $0.expectations.audioDurationTolerance = 0.001 }.violations()
        // All three are 5.3 ms too long; "may be short" does not excuse the last one for being long.
        #expect(strict.filter { $0.item == 20 }.count == 3)
        let lenient = audio { $0.expectations.audioDurationTolerance = 0.01 }.violations()
        #expect(lenient.isEmpty)
    }

    @Test func lastSegmentMustBeFullWhenConfigured() {
        let short = video { $0.segments[2].chunks[0].samples.removeLast(20) }
        #expect(short.violations().isEmpty)
        var strict = short
        strict.expectations.lastSegmentMayBeShort = false
        #expect(strict.violations().map(\.item) == [20])
    }

    @Test(arguments: [Double.nan, -1, .infinity, 1e300])
    func absurdExpectationsSkipItem20InsteadOfTrapping(seconds: Double) {
        let violations = video {
            $0.expectations.segmentDuration = seconds
            $0.expectations.keyFrameInterval = seconds
        }.violations()
        #expect(violations.isEmpty)
    }
}
