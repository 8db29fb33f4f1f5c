import Testing
@testable import CMAF

func parse(_ session: SessionSpec, segment index: Int = 0) throws -> (CMAFHeader, CMAFSegment, [UInt8]) {
    let header = try CMAFHeader(bytes: session.header.bytes())
    let bytes = session.segments[index].bytes()
    return (header, try CMAFSegment(bytes: bytes, fileName: session.segments[index].name, header: header), bytes)
}

@Suite struct SegmentTests {
    @Test func ffmpegShapedVideoSegment() throws {
        var session = SessionSpec.video()
        session.segments[1].stypBrands = ["cmfs", "cmfc"]
        let (_, segment, bytes) = try parse(session, segment: 1)
        #expect(segment.topLevelTypes == ["styp", "prft", "moof", "mdat"])
        #expect(segment.segmentType?.compatibleBrands == ["cmfs", "cmfc"])
        #expect(segment.producerReferenceTimes.map(\.referenceTrackID) == [1])
        #expect(segment.producerReferenceTimes.first?.boxIndex == 1)
        #expect(segment.producerReferenceTimes.first?.mediaTime == 25600)
        #expect(segment.chunkCount == 1)
        let chunk = try #require(segment.chunks.first)
        #expect(chunk.sequenceNumber == 2)
        #expect(chunk.moofChildTypes == ["mfhd", "traf"])
        #expect(chunk.trafChildTypes == ["tfhd", "tfdt", "trun"])
        let tfhd = try #require(chunk.trackFragmentHeader)
        #expect(tfhd.flags == 0x02_003a)
        #expect(tfhd.isDefaultBaseMoof && !tfhd.hasBaseDataOffset)
        #expect(tfhd.sampleDescriptionIndex == 1)
        #expect(tfhd.defaultSampleDuration == 512)
        #expect(tfhd.defaultSampleFlags == .nonSyncSample)
        #expect(chunk.decodeTimeVersion == 1)
        #expect(chunk.baseMediaDecodeTime == 25600)
        let run = try #require(chunk.runs.first)
        #expect(run.version == 1 && run.flags == 0xe01 && run.sampleCount == 50)
        #expect(run.durationSource == .trackFragmentHeader)
        #expect(run.sizeSource == .trackRun && run.flagsSource == .trackRun)
        #expect(run.dataOffset == Int32(chunk.moof.size + 8))

        #expect(segment.sampleCount == 50)
        #expect(segment.startDecodeTime == 25600)
        #expect(segment.startSeconds == 2.0)
        #expect(segment.duration == 25600)
        #expect(segment.durationSeconds == 2.0)
        #expect(segment.sequenceNumbers == [2])
        #expect(segment.earliestPresentationTime == 25600)
        #expect(segment.usesTrackRunVersion1)
        let samples = segment.samples
        #expect(samples.map(\.decodeTime) == (0 ..< 50).map { 25600 + UInt64($0) * 512 })
        #expect(samples[0].flags.isSync && samples[0].flags.dependsOn == 2)
        #expect(samples[1].flags.isNonSyncSample && samples[25].flags.isSync)
        #expect(samples[1].compositionOffset == 1024 && samples[2].compositionOffset == -512)
        #expect(samples[2].presentationTime == 25600 + 512)
        // Byte ranges land on the payloads written into the mdat, back to back.
        let mdat = try #require(chunk.mdat)
        #expect(samples[0].byteRange.lowerBound == mdat.payloadRange.lowerBound)
        #expect(samples.last?.byteRange.upperBound == mdat.payloadRange.upperBound)
        #expect(Array(bytes[samples[1].byteRange]) == nalSample([NAL.avcNonIDR]))
        #expect(segment.firstSampleIsSync == true)
        #expect(segment.firstSampleRandomAccess == .idr)
        #expect(segment.firstSampleIsIDR)
    }

    @Test func trexDefaultsApplyWhenTfhdAndTrunAreSilent() throws {
        var session = SessionSpec.audio()
        session.header.trexDefaultDuration = 1024
        session.segments[0].chunks[0].tfhdFlags = 0x02_0000
        session.segments[0].chunks[0].trunFlags = 0x201
        let (_, segment, _) = try parse(session)
        let run = try #require(segment.chunks.first?.runs.first)
        #expect(run.durationSource == .trackExtends)
        #expect(run.flagsSource == .trackExtends)
        #expect(run.sizeSource == .trackRun)
        #expect(segment.samples.allSatisfy { $0.duration == 1024 && $0.size == 3 && $0.flags.rawValue == 0 })
        #expect(segment.duration == 94 * 1024)
        #expect(segment.firstSampleRandomAccess == nil)
    }

    @Test func missingDefaultsGiveZeroDurationAndMissingSource() throws {
        var session = SessionSpec.audio()
        session.header.includeMvex = false
        session.segments[0].chunks[0].tfhdFlags = 0x02_0000
        session.segments[0].chunks[0].trunFlags = 0x201
        let (_, segment, _) = try parse(session)
        #expect(segment.chunks.first?.runs.first?.durationSource == .missing)
        #expect(segment.duration == 0)
    }

    @Test func tfdtVersion0AndSecondsFromTheHeaderTimescale() throws {
        var session = SessionSpec.audio()
        session.segments[2].chunks[0].tfdtVersion = 0
        let (_, segment, _) = try parse(session, segment: 2)
        #expect(segment.chunks.first?.decodeTimeVersion == 0)
        #expect(segment.startDecodeTime == 2 * 94 * 1024)
        #expect(segment.durationSeconds == Double(94 * 1024) / 48000)
    }

    @Test func chunksAreListedInOrder() throws {
        let (_, segment, _) = try parse(SessionSpec.video(chunksPerSegment: 2), segment: 1)
        #expect(segment.chunkCount == 2)
        #expect(segment.sequenceNumbers == [3, 4])
        #expect(segment.chunks.map(\.baseMediaDecodeTime) == [25600, 38400])
        #expect(segment.chunks[0].endDecodeTime == 38400)
        #expect(segment.sampleCount == 50)
        #expect(segment.chunks[1].samples.first?.flags.isSync == false)
    }

    @Test func secondTrunWithoutDataOffsetContinuesAfterTheFirst() throws {
        let header = try CMAFHeader(bytes: HeaderSpec.audio.bytes())
        let payloadA: [UInt8] = [1, 2, 3]
        let payloadB: [UInt8] = [4, 5]
        func moof(dataOffset: Int32) -> [UInt8] {
            let tfhd = fullBox("tfhd", flags: 0x02_0008, payload { $0.u32(1); $0.u32(1024) })
            let tfdt = fullBox("tfdt", version: 1, payload { $0.u64(0) })
            let first = fullBox("trun", flags: 0x201, payload { $0.u32(1); $0.i32(dataOffset); $0.u32(3) })
            let second = fullBox("trun", flags: 0x200, payload { $0.u32(1); $0.u32(2) })
            return box("moof", children: [fullBox("mfhd", payload { $0.u32(1) }), box("traf", children: [tfhd, tfdt, first, second])])
        }
        let size = moof(dataOffset: 0).count
        let bytes = moof(dataOffset: Int32(size + 8)) + box("mdat", payloadA + payloadB)
        let segment = try CMAFSegment(bytes: bytes, fileName: "s", header: header)
        #expect(segment.chunks.first?.runs.count == 2)
        #expect(segment.samples.map { Array(bytes[$0.byteRange]) } == [payloadA, payloadB])
        #expect(segment.samples.map(\.decodeTime) == [0, 1024])
    }

    @Test(arguments: [
        (UInt8(19), UInt8(1), RandomAccessPicture.idr, 0),
        (20, 1, .idr, 0),
        (21, 8, .cra, 1),
        (21, 1, .cra, 0),
        (16, 1, .bla, 0),
        (1, 1, .nonRandomAccess, 0),
    ])
    func hevcFirstPictureKind(first: UInt8, following: UInt8, kind: RandomAccessPicture, rasl: Int) throws {
        let (header, segment, _) = try parse(hevc(firstPicture: first, followingPicture: following))
        #expect(header.isHEVC)
        #expect(segment.firstSampleRandomAccess == kind)
        #expect(segment.leadingSkippedPictureCount == rasl)
    }

    @Test func twoByteNALLengthsFollowTheAVCC() throws {
        var session = SessionSpec.video(segments: 1)
        session.header.configBox = ConfigBox.avcC(lengthSizeMinusOne: 1)
        session.segments[0].chunks[0].samples[0].payload = [0, 4] + NAL.avcSPS + [0, 4] + NAL.avcIDR
        #expect(try parse(session).1.firstSampleRandomAccess == .idr)
        // The same bytes read with 4-byte prefixes do not tile the sample.
        session.header.configBox = ConfigBox.avcC(lengthSizeMinusOne: 3)
        #expect(try parse(session).1.firstSampleRandomAccess == .unparseable)
    }

    @Test(arguments: [
        ([UInt8(0), 0, 0, 2, 0x65, 0], [UInt8(5)]),
        ([0, 0, 0, 1, 0x67, 0, 0, 0, 1, 0x65], [7, 5]),
        ([0, 0, 0, 9, 0x65], nil),
        ([0, 0, 0, 0, 0x65], nil),
        ([0, 0, 1], nil),
    ] as [([UInt8], [UInt8]?)])
    func nalUnitTypesRequireExactTiling(sample: [UInt8], types: [UInt8]?) {
        #expect(NALUnits.unitTypes(in: sample, range: 0 ..< sample.count, lengthSize: 4, isHEVC: false) == types)
    }

    @Test func nalRangeOutsideTheFileIsNotRead() {
        #expect(NALUnits.unitTypes(in: [0, 0, 0, 1, 0x65], range: 2 ..< 9, lengthSize: 4, isHEVC: false) == nil)
        #expect(NALUnits.unitTypes(in: [0, 0, 0, 1, 0x65], range: -1 ..< 3, lengthSize: 4, isHEVC: false) == nil)
    }

    @Test func absurdSampleCountIsRejectedNotLooped() throws {
        let header = try CMAFHeader(bytes: HeaderSpec.audio.bytes())
        let trun = fullBox("trun", flags: 0x001, payload { $0.u32(.max); $0.i32(0) })
        let moof = box("moof", children: [fullBox("mfhd", payload { $0.u32(1) }),
                                          box("traf", children: [fullBox("tfhd", flags: 0x02_0000, payload { $0.u32(1) }), trun])])
        #expect(throws: CMAFError.self) { try CMAFSegment(bytes: moof + box("mdat"), fileName: "s", header: header) }
    }

    @Test(arguments: [
        (UInt32(0x0200_0000), true, UInt8(2), UInt8(0)),
        (0x0101_0000, false, 1, 0),
        (0x0c00_0000, true, 0, 3),
        (0x0001_0000, false, 0, 0),
    ])
    func sampleFlagFields(raw: UInt32, sync: Bool, dependsOn: UInt8, leading: UInt8) {
        let flags = SampleFlags(rawValue: raw)
        #expect(flags.isSync == sync)
        #expect(flags.dependsOn == dependsOn)
        #expect(flags.isLeading == leading)
    }
}
