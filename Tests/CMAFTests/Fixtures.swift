@testable import CMAF

/// Everything that varies in a synthetic CMAF header.
struct HeaderSpec: Sendable {
    var topLevelBefore: [[UInt8]] = []
    var topLevelAfter: [[UInt8]] = []
    var majorBrand = "iso6"
    var minorVersion: UInt32 = 0x200
    var compatibleBrands = ["iso6", "cmfc", "mp41"]
    var includeFtyp = true
    var movieTimescale: UInt32 = 1000
    var movieDuration: UInt32 = 0
    var trackID: UInt32 = 1
    var trackDuration: UInt32 = 0
    var mediaDuration: UInt32 = 0
    var trakCount = 1
    var handler = "vide"
    var timescale: UInt32 = 12800
    var editList: [(duration: UInt32, mediaTime: Int32, rate: Int16)]?
    var sampleEntryType = "avc1"
    var configBox: [UInt8]? = ConfigBox.avcC()
    var includeBitRate = true
    var width: UInt16 = 320
    var height: UInt16 = 240
    var channels: UInt16 = 2
    var sampleRate: UInt32 = 48000
    var tableCounts: (stts: UInt32, stsc: UInt32, stco: UInt32, stsz: UInt32) = (0, 0, 0, 0)
    var includeMvex = true
    var trexTrackID: UInt32? = 1
    var trexDefaultDuration: UInt32 = 0
    var mehd: UInt32?
    var udta = true

    static let video = HeaderSpec()
    static let audio: HeaderSpec = {
        var spec = HeaderSpec()
        spec.handler = "soun"
        spec.timescale = 48000
        spec.sampleEntryType = "mp4a"
        spec.configBox = ConfigBox.esds()
        return spec
    }()

    func sampleEntry() -> [UInt8] {
        var children: [[UInt8]] = []
        if let configBox { children.append(configBox) }
        if includeBitRate { children.append(box("btrt", payload { $0.u32(0); $0.u32(400_000); $0.u32(300_000) })) }
        let fields = payload {
            $0.zeros(6)
            $0.u16(1)
            if handler == "soun" {
                $0.zeros(8)
                $0.u16(channels)
                $0.u16(16)
                $0.zeros(4)
                $0.u32(sampleRate << 16)
            } else {
                $0.zeros(16)
                $0.u16(width)
                $0.u16(height)
                $0.u32(0x0048_0000)
                $0.u32(0x0048_0000)
                $0.zeros(4)
                $0.u16(1)
                $0.zeros(32)
                $0.u16(0x18)
                $0.i16(-1)
            }
        }
        return box(sampleEntryType, fields + children.flatMap { $0 })
    }

    func bytes() -> [UInt8] {
        let mvhd = fullBox("mvhd", payload {
            $0.zeros(8)
            $0.u32(movieTimescale)
            $0.u32(movieDuration)
            $0.u32(0x0001_0000)
            $0.u16(0x0100)
            $0.zeros(10)
            $0.zeros(36)
            $0.zeros(24)
            $0.u32(trackID + 1)
        })
        let tkhd = fullBox("tkhd", flags: 3, payload {
            $0.zeros(8)
            $0.u32(trackID)
            $0.zeros(4)
            $0.u32(trackDuration)
            $0.zeros(16)
            $0.zeros(36)
            $0.u32(handler == "vide" ? UInt32(width) << 16 : 0)
            $0.u32(handler == "vide" ? UInt32(height) << 16 : 0)
        })
        let mdhd = fullBox("mdhd", payload {
            $0.zeros(8)
            $0.u32(timescale)
            $0.u32(mediaDuration)
            $0.u16(0x55c4) // "und"
            $0.u16(0)
        })
        let hdlr = fullBox("hdlr", payload { $0.zeros(4); $0.fourCC(handler); $0.zeros(12); $0.append(Array("Handler\0".utf8)) })
        let stsd = fullBox("stsd", payload { $0.u32(1); $0.append(sampleEntry()) })
        func table(_ type: String, _ count: UInt32, leading: UInt32? = nil) -> [UInt8] {
            fullBox(type, payload {
                if let leading { $0.u32(leading) }
                $0.u32(count)
            })
        }
        let stbl = box("stbl", children: [stsd, table("stts", tableCounts.stts), table("stsc", tableCounts.stsc),
                                          table("stsz", tableCounts.stsz, leading: 0), table("stco", tableCounts.stco)])
        let dinf = box("dinf", children: [fullBox("dref", payload { $0.u32(1); $0.append(fullBox("url ", flags: 1)) })])
        let mediaHeader = handler == "soun" ? fullBox("smhd", [0, 0, 0, 0]) : fullBox("vmhd", flags: 1, [UInt8](repeating: 0, count: 8))
        let minf = box("minf", children: [mediaHeader, dinf, stbl])
        let mdia = box("mdia", children: [mdhd, hdlr, minf])
        var trakChildren = [tkhd]
        if let editList {
            let elst = fullBox("elst", payload {
                $0.u32(UInt32(editList.count))
                for entry in editList {
                    $0.u32(entry.duration)
                    $0.i32(entry.mediaTime)
                    $0.i16(entry.rate)
                    $0.i16(0)
                }
            })
            trakChildren.append(box("edts", children: [elst]))
        }
        trakChildren.append(mdia)
        let trak = box("trak", children: trakChildren)
        var moovChildren = [mvhd] + Array(repeating: trak, count: trakCount)
        if includeMvex {
            var mvexChildren: [[UInt8]] = []
            if let mehd { mvexChildren.append(fullBox("mehd", payload { $0.u32(mehd) })) }
            if let trexTrackID {
                mvexChildren.append(fullBox("trex", payload {
                    $0.u32(trexTrackID)
                    $0.u32(1)
                    $0.u32(trexDefaultDuration)
                    $0.u32(0)
                    $0.u32(0)
                }))
            }
            moovChildren.append(box("mvex", children: mvexChildren))
        }
        if udta {
            let meta = fullBox("meta", fullBox("hdlr", payload { $0.zeros(4); $0.fourCC("mdir"); $0.fourCC("appl"); $0.zeros(9) }) + box("ilst"))
            moovChildren.append(box("udta", children: [meta]))
        }
        var top = topLevelBefore
        if includeFtyp {
            top.append(box("ftyp", payload {
                $0.fourCC(majorBrand)
                $0.u32(minorVersion)
                for brand in compatibleBrands { $0.fourCC(brand) }
            }))
        }
        top.append(box("moov", children: moovChildren))
        return (top + topLevelAfter).flatMap { $0 }
    }
}

struct SampleSpec: Sendable {
    var duration: UInt32
    var flags: UInt32
    var compositionOffset: Int32 = 0
    var payload: [UInt8]
}

/// One moof + mdat, written the way FFmpeg 5.1 `+cmaf` does (tfhd 0x02003a, trun v1 0xe01) unless changed.
struct ChunkSpec: Sendable {
    var sequenceNumber: UInt32
    var trackID: UInt32 = 1
    var tfhdFlags: UInt32 = 0x02_003a
    var baseDataOffset: UInt64 = 0
    var decodeTime: UInt64?
    var tfdtVersion: UInt8 = 1
    var trunVersion: UInt8 = 1
    /// Per-sample fields written in trun; others come from tfhd defaults (taken from the first sample).
    var trunFlags: UInt32 = 0xe01
    var dataOffsetAdjustment: Int32 = 0
    var samples: [SampleSpec]
    var extraMoofChildren: [[UInt8]] = []
    var trafCount = 1
    var swapTfdtAndTrun = false
    var omitMdat = false

    func bytes(moofOffset: Int) -> (moof: [UInt8], mdat: [UInt8]) {
        let first = samples.first ?? SampleSpec(duration: 0, flags: 0, payload: [])
        let tfhd = fullBox("tfhd", flags: tfhdFlags, payload {
            $0.u32(trackID)
            if tfhdFlags & 0x01 != 0 { $0.u64(baseDataOffset) }
            if tfhdFlags & 0x02 != 0 { $0.u32(1) }
            if tfhdFlags & 0x08 != 0 { $0.u32(first.duration) }
            if tfhdFlags & 0x10 != 0 { $0.u32(UInt32(first.payload.count)) }
            // FFmpeg puts the non-sync flags in tfhd and overrides the first sample's in trun.
            if tfhdFlags & 0x20 != 0 { $0.u32(samples.count > 1 ? samples[1].flags : first.flags) }
        })
        let tfdt = decodeTime.map { time in
            fullBox("tfdt", version: tfdtVersion, payload { if tfdtVersion == 1 { $0.u64(time) } else { $0.u32(UInt32(truncatingIfNeeded: time)) } })
        }
        func trun(dataOffset: Int32) -> [UInt8] {
            fullBox("trun", version: trunVersion, flags: trunFlags, payload {
                $0.u32(UInt32(samples.count))
                if trunFlags & 0x001 != 0 { $0.i32(dataOffset) }
                if trunFlags & 0x004 != 0 { $0.u32(first.flags) }
                for sample in samples {
                    if trunFlags & 0x100 != 0 { $0.u32(sample.duration) }
                    if trunFlags & 0x200 != 0 { $0.u32(UInt32(sample.payload.count)) }
                    if trunFlags & 0x400 != 0 { $0.u32(sample.flags) }
                    if trunFlags & 0x800 != 0 { $0.i32(sample.compositionOffset) }
                }
            })
        }
        func moof(dataOffset: Int32) -> [UInt8] {
            var trafChildren = [tfhd]
            if swapTfdtAndTrun {
                trafChildren += [trun(dataOffset: dataOffset)] + (tfdt.map { [$0] } ?? [])
            } else {
                trafChildren += (tfdt.map { [$0] } ?? []) + [trun(dataOffset: dataOffset)]
            }
            let traf = box("traf", children: trafChildren)
            let mfhd = fullBox("mfhd", payload { $0.u32(sequenceNumber) })
            return box("moof", children: [mfhd] + Array(repeating: traf, count: trafCount) + extraMoofChildren)
        }
        // The data offset depends on the moof size, which does not depend on the offset's value.
        let moofSize = moof(dataOffset: 0).count
        let mdat = box("mdat", samples.flatMap(\.payload))
        return (moof(dataOffset: Int32(moofSize + 8) + dataOffsetAdjustment), omitMdat ? [] : mdat)
    }
}

struct SegmentSpec: Sendable {
    var name: String
    var stypBrands: [String]?
    var prftTrackID: UInt32? = 1
    var prftAfterMoof = false
    var emsgAfterMoof = false
    var extraTopLevel: [[UInt8]] = []
    var chunks: [ChunkSpec]

    func bytes() -> [UInt8] {
        var out: [UInt8] = []
        if let stypBrands {
            out += box("styp", payload {
                $0.fourCC(stypBrands.first ?? "cmfs")
                $0.u32(0)
                for brand in stypBrands { $0.fourCC(brand) }
            })
        }
        let prft = prftTrackID.map { id in
            fullBox("prft", version: 1, payload { $0.u32(id); $0.u64(0xe8f0_0000_0000_0000); $0.u64(chunks.first?.decodeTime ?? 0) })
        }
        let emsg = fullBox("emsg", payload { $0.append(Array("urn:x\0\0".utf8)); $0.u32(12800); $0.zeros(12) })
        if let prft, !prftAfterMoof { out += prft }
        out += extraTopLevel.flatMap { $0 }
        for chunk in chunks {
            let (moof, mdat) = chunk.bytes(moofOffset: out.count)
            out += moof + mdat
        }
        if let prft, prftAfterMoof { out += prft }
        if emsgAfterMoof { out += emsg }
        return out
    }
}

/// A whole track: header, segments and what the checker should expect.
struct SessionSpec: Sendable {
    var header: HeaderSpec
    var segments: [SegmentSpec]
    var expectations: CMAFConformance.Expectations

    var headerFile: CMAFFile { CMAFFile(name: "video.init", bytes: header.bytes()) }
    var segmentFiles: [CMAFFile] { segments.map { CMAFFile(name: $0.name, bytes: $0.bytes()) } }

    func violations() -> [Violation] {
        CMAFConformance(expectations: expectations).check(header: headerFile, segments: segmentFiles)
    }

    /// 25 fps at 12800 (512 ticks a frame), keyframe every 25 frames, `segments` × 2 s, numbered 1001….
    static func video(segments count: Int = 3, framesPerSegment: Int = 50, chunksPerSegment: Int = 1) -> SessionSpec {
        var segments: [SegmentSpec] = []
        var frame = 0
        var sequence: UInt32 = 1
        for index in 0 ..< count {
            var chunks: [ChunkSpec] = []
            let perChunk = framesPerSegment / chunksPerSegment
            for _ in 0 ..< chunksPerSegment {
                let samples = (0 ..< perChunk).map { offset -> SampleSpec in
                    let number = frame + offset
                    let isKey = number % framesPerSegment == 0 || (chunksPerSegment == 1 && number % 25 == 0)
                    // I P B pattern: the B frame is presented before the P frame, so its offset is negative.
                    let cts: Int32 = isKey ? 0 : (number % 2 == 1 ? 1024 : -512)
                    return SampleSpec(duration: 512, flags: isKey ? 0x0200_0000 : 0x0101_0000, compositionOffset: cts,
                                      payload: nalSample(isKey ? [NAL.avcSPS, NAL.avcIDR] : [NAL.avcNonIDR]))
                }
                chunks.append(ChunkSpec(sequenceNumber: sequence, decodeTime: UInt64(frame) * 512, samples: samples))
                sequence += 1
                frame += perChunk
            }
            segments.append(SegmentSpec(name: "segment_\(1001 + index).m4s", chunks: chunks))
        }
        return SessionSpec(header: .video, segments: segments,
                           expectations: .init(segmentDuration: 2, chunks: chunksPerSegment > 1, timescale: 12800))
    }

    /// AAC-LC 48 kHz, 1024-sample frames, 94 frames (2.005 s) per segment.
    static func audio(segments count: Int = 3) -> SessionSpec {
        var segments: [SegmentSpec] = []
        for index in 0 ..< count {
            let samples = (0 ..< 94).map { _ in SampleSpec(duration: 1024, flags: 0x0200_0000, payload: [0x21, 0x10, 0x04]) }
            segments.append(SegmentSpec(name: "segment_\(1001 + index).m4s",
                                        chunks: [ChunkSpec(sequenceNumber: UInt32(index + 1), decodeTime: UInt64(index * 94 * 1024), samples: samples)]))
        }
        return SessionSpec(header: .audio, segments: segments, expectations: .init(segmentDuration: 2))
    }
}
