import Testing
import TestSupport
@testable import CMAF

@Suite struct BoxReaderTests {
    @Test func parsesNestedContainersWithAbsoluteOffsets() throws {
        let bytes = box("ftyp", Array("cmfc\0\0\0\0cmfc".utf8)) + box("moov", children: [fullBox("mvhd", [1, 2]), box("trak", children: [box("tkhd")])])
        let boxes = try BoxReader.parse(bytes)
        #expect(boxes.map(\.type) == ["ftyp", "moov"])
        let moov = boxes[1]
        #expect(moov.offset == 20)
        #expect(moov.childTypes == ["mvhd", "trak"])
        let tkhd = try #require(moov.descendant("trak", "tkhd"))
        #expect(tkhd.offset == 20 + 8 + 14 + 8)
        #expect(tkhd.size == 8)
        #expect(tkhd.payloadRange.isEmpty)
    }

    @Test func largesizeHeader() throws {
        let bytes = largeBox("mdat", [1, 2, 3]) + box("free")
        let boxes = try BoxReader.parse(bytes)
        #expect(boxes.map(\.type) == ["mdat", "free"])
        #expect(boxes[0].headerSize == 16)
        #expect(boxes[0].size == 19)
        #expect(Array(bytes[boxes[0].payloadRange]) == [1, 2, 3])
    }

    @Test func sizeZeroExtendsToTheEndOfTheContainer() throws {
        let bytes = box("free") + [0, 0, 0, 0] + Array("mdat".utf8) + [9, 9, 9, 9, 9]
        let boxes = try BoxReader.parse(bytes)
        #expect(boxes.last?.type == "mdat")
        #expect(boxes.last?.size == 13)
    }

    @Test func uuidBoxCarriesItsExtendedType() throws {
        let userType: [UInt8] = Array(0 ..< 16)
        let bytes = box("uuid", userType + [0xaa])
        let parsed = try #require(try BoxReader.parse(bytes).first)
        #expect(parsed.userType == userType)
        #expect(parsed.headerSize == 24)
        #expect(Array(bytes[parsed.payloadRange]) == [0xaa])
    }

    @Test func sampleEntryChildrenAndQuickTimeStyleMeta() throws {
        let header = HeaderSpec.video.bytes()
        let boxes = try BoxReader.parse(header)
        let entry = try #require(boxes[1].descendant("trak", "mdia", "minf", "stbl", "stsd", "avc1"))
        #expect(entry.childTypes == ["avcC", "btrt"])
        // FFmpeg's meta is a FullBox; QuickTime's is not. Both must expose hdlr as a child.
        #expect(boxes[1].descendant("udta", "meta")?.childTypes == ["hdlr", "ilst"])
        let quickTimeMeta = box("meta", children: [fullBox("hdlr", [0, 0, 0, 0]), box("ilst")])
        #expect(try BoxReader.parse(quickTimeMeta).first?.childTypes == ["hdlr", "ilst"])
    }

    @Test func audioSampleEntryVersion1SkipsTheQuickTimeExtension() throws {
        var fields = [UInt8](repeating: 0, count: 28)
        fields[9] = 1 // sound description version 1
        let entry = box("mp4a", fields + [UInt8](repeating: 0, count: 16) + ConfigBox.esds())
        #expect(try BoxReader.parse(entry).first?.childTypes == ["esds"])
    }

    struct MalformedCase: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let error: CMAFError
        var testDescription: String { name }
    }

    static let malformed: [MalformedCase] = [
        MalformedCase(name: "header cut after 5 bytes", bytes: [0, 0, 0, 16, 0x6d], error: .truncatedBoxHeader(offset: 0)),
        MalformedCase(name: "size smaller than header", bytes: box("free") + [0, 0, 0, 4] + Array("free".utf8),
                      error: .invalidBoxSize(type: "free", offset: 8, size: 4)),
        MalformedCase(name: "size past end of file", bytes: [0, 0, 0, 100] + Array("mdat".utf8) + [1, 2],
                      error: .boxExceedsParent(type: "mdat", offset: 0, size: 100, parentEnd: 10)),
        MalformedCase(name: "child overlaps the end of its container",
                      bytes: [0, 0, 0, 20] + Array("moov".utf8) + [0, 0, 0, 16] + Array("mvhd".utf8) + [0, 0, 0, 0],
                      error: .boxExceedsParent(type: "mvhd", offset: 8, size: 16, parentEnd: 20)),
        MalformedCase(name: "largesize header cut", bytes: [0, 0, 0, 1] + Array("mdat".utf8) + [0, 0],
                      error: .truncatedBoxHeader(offset: 0)),
        MalformedCase(name: "uuid header cut", bytes: [0, 0, 0, 12] + Array("uuid".utf8) + [0, 0, 0, 0],
                      error: .truncatedBoxHeader(offset: 0)),
        MalformedCase(name: "trailing bytes in a container", bytes: box("moov", children: [box("mvhd")]) + [0, 0, 0],
                      error: .truncatedBoxHeader(offset: 16)),
        MalformedCase(name: "stsd shorter than its entry_count", bytes: box("stsd", [0, 0, 0]),
                      error: .truncatedPayload(type: "stsd", offset: 0)),
    ]

    @Test(arguments: malformed)
    func malformedInputThrowsTheRightError(_ testCase: MalformedCase) {
        #expect(throws: testCase.error) { try BoxReader.parse(testCase.bytes) }
    }

    @Test func absurdNestingIsRefused() {
        var bytes = box("free")
        for _ in 0 ... BoxReader.maximumDepth + 1 { bytes = box("moov", bytes) }
        #expect(throws: CMAFError.self) { try BoxReader.parse(bytes) }
        var shallow = box("free")
        for _ in 0 ..< BoxReader.maximumDepth { shallow = box("moov", shallow) }
        #expect(throws: Never.self) { try BoxReader.parse(shallow) }
    }

    @Test func fourCCRendersUnprintableBytes() {
        #expect(FourCC(rawValue: 0x6d6f_6f76).description == "moov")
        #expect(FourCC(bytes: [0x00, 0x41, 0xff, 0x42])?.description == "\\x00A\\xffB")
        // A literal argument would become a FourCC literal (SE-0213); go through a String value.
        let tooLong = "toolong"
        #expect(FourCC(tooLong) == nil)
        let fine = "avc1"
        #expect(FourCC(fine) == "avc1")
        #expect(FourCC(bytes: [1, 2, 3]) == nil)
    }
}

/// Random truncations and bit flips of valid files must throw or parse, never trap.
@Suite struct FuzzTests {

    static let seeds: [UInt64] = [1, 2, 3, 4]

    @Test(arguments: seeds)
    func corruptedFilesNeverTrap(seed: UInt64) {
        var random = SeededGenerator(seed: seed)  // deterministic: a failure can be reproduced
        let session = seed.isMultiple(of: 2) ? SessionSpec.video(chunksPerSegment: 2) : hevc(firstPicture: 21, followingPicture: 8)
        let header = session.header.bytes()
        let segment = session.segments[1].bytes()
        let checker = CMAFConformance(expectations: session.expectations)
        var outcomes = (threw: 0, parsed: 0)
        for _ in 0 ..< 300 {
            var corruptHeader = header
            var corruptSegment = segment
            switch random.next() % 3 {
            case 0:
                corruptSegment.removeLast(Int(random.next() % UInt64(corruptSegment.count)))
            case 1:
                for _ in 0 ..< 1 + random.next() % 4 {
                    corruptSegment[Int(random.next() % UInt64(corruptSegment.count))] ^= 1 << UInt8(random.next() % 8)
                }
            default:
                corruptHeader[Int(random.next() % UInt64(corruptHeader.count))] ^= 1 << UInt8(random.next() % 8)
                corruptHeader.removeLast(Int(random.next() % 8))
            }
            // Every path that consumes bytes: box tree, header, segment, checker, summary.
            _ = checker.check(header: CMAFFile(name: "h", bytes: corruptHeader), segments: [CMAFFile(name: "s", bytes: corruptSegment)])
            do {
                let parsedHeader = try CMAFHeader(bytes: corruptHeader)
                let parsedSegment = try CMAFSegment(bytes: corruptSegment, fileName: "s", header: parsedHeader)
                _ = InspectionSummary(tracks: [.init(header: parsedHeader, segments: [parsedSegment])]).renderText()
                outcomes.parsed += 1
            } catch is CMAFError {
                outcomes.threw += 1
            } catch {
                Issue.record("unexpected error type \(error)")
            }
        }
        // Both outcomes occur, so the corruption really reaches the parser's error paths.
        #expect(outcomes.threw > 0)
        #expect(outcomes.parsed > 0)
    }
}
