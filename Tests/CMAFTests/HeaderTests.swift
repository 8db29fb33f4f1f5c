import Testing
@testable import CMAF

@Suite struct HeaderTests {
    @Test func ffmpegShapedVideoHeader() throws {
        let header = try CMAFHeader(bytes: HeaderSpec.video.bytes(), fileName: "video.init")
        #expect(header.fileName == "video.init")
        #expect(header.topLevelTypes == ["ftyp", "moov"])
        #expect(header.fileType == FileType(majorBrand: "iso6", minorVersion: 0x200, compatibleBrands: ["iso6", "cmfc", "mp41"]))
        #expect(header.moov?.childTypes == ["mvhd", "trak", "mvex", "udta"])
        #expect(header.trackCount == 1)
        #expect(header.trackID == 1)
        #expect(header.handler == "vide")
        #expect(header.isVideo && !header.isAudio && header.isAVC && !header.isHEVC)
        #expect(header.movieTimescale == 1000)
        #expect(header.mediaTimescale == 12800)
        #expect([header.movieDuration, header.trackDuration, header.mediaDuration] == [0, 0, 0])
        #expect(header.fragmentDuration == nil)
        #expect(header.editList == nil)
        #expect(header.language == "und")
        #expect(header.trackWidth == 320 && header.trackHeight == 240)
        let entry = try #require(header.sampleEntry)
        #expect(entry.type == "avc1")
        #expect(entry.width == 320 && entry.height == 240)
        #expect(entry.hasBitRateBox && entry.hasRequiredConfiguration)
        #expect(header.sampleEntryCount == 1)
        #expect(header.sampleTableCounts == SampleTableCounts(timeToSample: 0, sampleToChunk: 0, chunkOffset: 0, sampleSize: 0))
        #expect(header.trackExtends == [TrackExtendsDefaults(trackID: 1)])
        #expect(header.trackExtendsForTrack?.trackID == 1)
        #expect(header.nalLengthSize == 4)
        #expect(header.codecString == "avc1.64001f")
    }

    @Test func audioHeaderFields() throws {
        let header = try CMAFHeader(bytes: HeaderSpec.audio.bytes())
        #expect(header.handler == "soun")
        #expect(header.isAudio)
        #expect(header.mediaTimescale == 48000)
        #expect(header.sampleEntry?.channelCount == 2)
        #expect(header.sampleEntry?.sampleRate == 48000)
        #expect(header.sampleEntry?.width == nil)
        #expect(header.codecString == "mp4a.40.2")
    }

    @Test(arguments: [(UInt8(0), 1), (1, 2), (3, 4)])
    func nalLengthSizeComesFromAVCC(lengthSizeMinusOne: UInt8, expected: Int) throws {
        var spec = HeaderSpec.video
        spec.configBox = ConfigBox.avcC(lengthSizeMinusOne: lengthSizeMinusOne)
        #expect(try CMAFHeader(bytes: spec.bytes()).nalLengthSize == expected)
    }

    @Test func editListMehdAndTableCounts() throws {
        var spec = HeaderSpec.video
        spec.editList = [(duration: 0, mediaTime: 1024, rate: 1)]
        spec.mehd = 6000
        spec.tableCounts = (stts: 1, stsc: 2, stco: 3, stsz: 4)
        spec.trexTrackID = 9
        let header = try CMAFHeader(bytes: spec.bytes())
        #expect(header.editList == [EditListEntry(segmentDuration: 0, mediaTime: 1024, mediaRateInteger: 1, mediaRateFraction: 0)])
        #expect(header.fragmentDuration == 6000)
        #expect(header.sampleTableCounts == SampleTableCounts(timeToSample: 1, sampleToChunk: 2, chunkOffset: 3, sampleSize: 4))
        #expect(header.trackExtendsForTrack == nil)
        #expect(header.trackExtends.map(\.trackID) == [9])
    }

    @Test func version1TimesAre64Bit() throws {
        let big: UInt64 = 0x1_0000_0001
        let mvhd = fullBox("mvhd", version: 1, payload { $0.zeros(16); $0.u32(1000); $0.u64(big) })
        let tkhd = fullBox("tkhd", version: 1, payload { $0.zeros(16); $0.u32(5); $0.zeros(4); $0.u64(big); $0.zeros(52); $0.u32(0); $0.u32(0) })
        let mdhd = fullBox("mdhd", version: 1, payload { $0.zeros(16); $0.u32(90000); $0.u64(big); $0.u16(0x15c7); $0.u16(0) })
        let mehd = fullBox("mehd", version: 1, payload { $0.u64(big) })
        let moov = box("moov", children: [mvhd, box("trak", children: [tkhd, box("mdia", children: [mdhd])]), box("mvex", children: [mehd])])
        let header = try CMAFHeader(bytes: box("ftyp", Array("cmf2\0\0\0\0cmf2".utf8)) + moov)
        #expect(header.movieDuration == big)
        #expect(header.trackID == 5)
        #expect(header.trackDuration == big)
        #expect(header.mediaTimescale == 90000)
        #expect(header.mediaDuration == big)
        #expect(header.fragmentDuration == big)
        #expect(header.language == "eng")
        #expect(header.sampleEntry == nil)
        #expect(header.codecString == nil)
    }

    @Test func missingBoxesBecomeNilInsteadOfThrowing() throws {
        let header = try CMAFHeader(bytes: box("free"))
        #expect(header.fileType == nil)
        #expect(header.moov == nil)
        #expect(header.trackID == nil)
        #expect(header.trackCount == 0)
        #expect(header.mediaTimescale == nil)
    }

    @Test func truncatedFieldsThrow() {
        let shortTkhd = box("moov", children: [box("trak", children: [fullBox("tkhd", [0, 0, 0])])])
        #expect(throws: CMAFError.truncatedPayload(type: "tkhd", offset: 16)) { try CMAFHeader(bytes: shortTkhd) }
    }
}
