// The checklist's segment items (10–22): sequence numbers, decode times, durations, chunking.
extension CMAFConformance {
    func checkSegments(_ segments: [CMAFSegment], header: CMAFHeader, into report: inout Report) {
        var previousSequence: UInt32?
        var previousEnd: UInt64?
        let gop = header.isVideo ? keyFrameIntervalTicks(segments, header: header) : nil
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            checkLayout(segment, isLast: isLast, into: &report)
            for chunk in segment.chunks {
                checkChunk(chunk, in: segment, header: header, into: &report)
                if let sequence = chunk.sequenceNumber {
                    if let previous = previousSequence, sequence <= previous {
                        report.fail(16, segment.fileName, "mfhd sequence_number \(sequence) does not increase (previous \(previous))")
                    }
                    previousSequence = sequence
                }
            }
            if let start = segment.startDecodeTime, let previous = previousEnd, start != previous {
                let kind = start > previous ? "gap" : "overlap"
                report.fail(17, segment.fileName, "tfdt \(start) ≠ previous segment end \(previous) (\(kind) of \(start > previous ? start - previous : previous - start) ticks)")
            }
            // Samples carry decode times even where a tfdt is missing (that is item 12's business).
            if let last = segment.samples.last { previousEnd = last.decodeTime &+ UInt64(last.duration) }
            if segment.usesTrackRunVersion1, let start = segment.startDecodeTime, let earliest = segment.earliestPresentationTime,
               earliest != Int64(bitPattern: start) {
                report.fail(18, segment.fileName, "earliest presentation time \(earliest) ≠ tfdt \(start) (trun v1)")
            }
            if header.isVideo { checkRandomAccess(segment, into: &report) }
            checkDuration(segment, isLast: isLast, header: header, gop: gop, into: &report)
            if header.isVideo || header.isAudio { checkProducerReferenceTime(segment, header: header, into: &report) }
            checkChunking(segment, header: header, into: &report)
        }
    }

    private func checkLayout(_ segment: CMAFSegment, isLast: Bool, into report: inout Report) {
        let file = segment.fileName
        let types = segment.topLevelTypes
        let unexpected = types.filter { !Self.allowedSegmentTopLevelBoxes.contains($0) }
        report.require(unexpected.isEmpty, 10, file, "unexpected top-level boxes \(list(unexpected))")
        report.require(types.contains("moof"), 10, file, "no moof")
        for (index, type) in types.enumerated() {
            if type == "moof", index + 1 >= types.count || types[index + 1] != "mdat" {
                report.fail(10, file, "moof at box \(index) is not immediately followed by mdat")
            }
            if type == "mdat", index == 0 || types[index - 1] != "moof" {
                report.fail(10, file, "mdat at box \(index) does not follow a moof")
            }
        }
        if let firstMoof = types.firstIndex(of: "moof"), let lastEmsg = types.lastIndex(of: "emsg") {
            report.require(lastEmsg < firstMoof, 10, file, "emsg must precede the first moof")
        }
        if types.contains("moof") {
            report.require(segment.sampleCount > 0, 10, file, "segment contains no samples")
        }

        if let styp = segment.segmentType {
            let brands = styp.allBrands
            let unknown = brands.filter { !Self.allowedSegmentBrands.contains($0) && !$0.description.hasPrefix("iso") }
            report.require(unknown.isEmpty, 11, file, "unexpected styp brands \(list(unknown.sorted()))")
            report.require(isLast || !brands.contains("lmsg"), 11, file, "lmsg brand on a segment that is not the last")
        }
    }

    private func checkChunk(_ chunk: CMAFChunk, in segment: CMAFSegment, header: CMAFHeader, into report: inout Report) {
        let file = segment.fileName
        let at = "moof@\(chunk.moof.offset)"
        report.require(chunk.moofChildTypes == ["mfhd", "traf"], 12, file, "\(at) children must be mfhd, traf; found \(list(chunk.moofChildTypes))")
        report.require(Array(chunk.trafChildTypes.prefix(3)) == ["tfhd", "tfdt", "trun"], 12, file,
                       "\(at) traf must start with tfhd, tfdt, trun; found \(list(chunk.trafChildTypes))")

        if let tfhd = chunk.trackFragmentHeader {
            report.require(tfhd.trackID == header.trackID, 13, file,
                           "\(at) tfhd track_ID \(tfhd.trackID) ≠ header track_ID \(header.trackID.map(String.init) ?? "none")")
            report.require(tfhd.isDefaultBaseMoof, 13, file, "\(at) tfhd default-base-is-moof is not set (flags 0x\(String(tfhd.flags, radix: 16)))")
            report.require(!tfhd.hasBaseDataOffset, 13, file, "\(at) tfhd has base-data-offset-present")
        }

        for run in chunk.runs where run.dataOffset == nil {
            report.fail(14, file, "\(at) trun (flags 0x\(String(run.flags, radix: 16))) has no data_offset")
        }
        if let mdat = chunk.mdat, let outside = chunk.samples.firstIndex(where: { !$0.byteRange.isEmpty && !mdat.payloadRange.contains($0.byteRange) }) {
            let range = chunk.samples[outside].byteRange
            report.fail(14, file, "\(at) sample \(outside) bytes \(range.lowerBound)..<\(range.upperBound) outside mdat payload \(mdat.payloadRange.lowerBound)..<\(mdat.payloadRange.upperBound)")
        }

        if let zero = chunk.samples.firstIndex(where: { $0.duration == 0 }) {
            report.fail(15, file, "\(at) sample \(zero) has zero or no duration")
        }
        if header.fileType?.allBrands.contains("cmf2") == true {
            for run in chunk.runs where run.sampleCount > 0 {
                for (field, source) in [("duration", run.durationSource), ("size", run.sizeSource), ("flags", run.flagsSource)]
                where source == .trackExtends || source == .missing {
                    report.fail(15, file, "\(at) sample \(field) comes from \(source == .missing ? "nowhere" : "trex only"); cmf2 requires tfhd/trun")
                }
            }
        }
    }

    private func checkRandomAccess(_ segment: CMAFSegment, into report: inout Report) {
        let file = segment.fileName
        guard let first = segment.firstSample else { return }
        report.require(first.flags.isSync && first.flags.dependsOn == 2, 19, file,
                       "first sample flags \(first.flags): expected sample_is_non_sync_sample=0 and sample_depends_on=2")
        switch segment.firstSampleRandomAccess {
        case .idr?:
            break
        case .cra?, .bla?:
            let kind = segment.firstSampleRandomAccess == .cra ? "CRA" : "BLA"
            // Without RASL pictures a CRA/BLA is SAP 1 or 2, a random access point like an IDR (x265's open GOPs).
            if segment.leadingSkippedPictureCount > 0 {
                report.fail(19, file, "first sample is a \(kind) followed by \(segment.leadingSkippedPictureCount) RASL picture(s) (SAP 3, not a random access point for MSE)")
            }
        case .nonRandomAccess?:
            report.fail(19, file, "first sample contains no IDR, CRA or BLA NAL unit (not a random access point)")
        case .unparseable?:
            report.fail(19, file, "first sample NAL units cannot be parsed (length prefixes do not tile the sample, or it lies outside the file)")
        case nil:
            report.fail(19, file, "cannot look for an IDR: no NAL length size (no avcC/hvcC)")
        }
    }

    /// Item 20's "one GOP": the configured keyframe interval, else the shortest sync-to-sync distance seen,
    /// capped at the target (Matter requires SegmentDuration to be a multiple of the keyframe interval).
    private func keyFrameIntervalTicks(_ segments: [CMAFSegment], header: CMAFHeader) -> UInt64? {
        guard let timescale = header.mediaTimescale, let target = expectations.segmentDuration,
              let targetTicks = Self.ticks(target, timescale: timescale).map(UInt64.init) else { return nil }
        if let interval = expectations.keyFrameInterval { return Self.ticks(interval, timescale: timescale).map(UInt64.init) }
        let syncTimes = segments.flatMap(\.samples).filter(\.flags.isSync).map(\.decodeTime)
        let shortest = zip(syncTimes, syncTimes.dropFirst()).map { $1 &- $0 }.filter { $0 > 0 }.min()
        return min(shortest ?? targetTicks, targetTicks)
    }

    private func checkDuration(_ segment: CMAFSegment, isLast: Bool, header: CMAFHeader, gop: UInt64?, into report: inout Report) {
        guard let timescale = header.mediaTimescale, let target = expectations.segmentDuration,
              let targetTicks = Self.ticks(target, timescale: timescale) else { return }
        let file = segment.fileName
        let duration = Int64(clamping: segment.duration)
        let seconds = { (ticks: Int64) in String(Double(ticks) / Double(timescale)) }
        let mayBeShort = isLast && expectations.lastSegmentMayBeShort
        if header.isVideo {
            let upper = targetTicks + Int64(clamping: gop ?? UInt64(targetTicks))
            if duration >= upper {
                report.fail(20, file, "duration \(seconds(duration)) s ≥ target \(target) s + one GOP (\(seconds(upper - targetTicks)) s)")
            } else if duration < targetTicks && !mayBeShort {
                report.fail(20, file, "duration \(seconds(duration)) s is shorter than the target \(target) s")
            }
        } else {
            let frame = Int64(segment.samples.map(\.duration).max() ?? 0)
            let tolerance = expectations.audioDurationTolerance.flatMap { Self.ticks($0, timescale: timescale) } ?? frame
            let tooLong = duration - targetTicks > tolerance
            let tooShort = targetTicks - duration > tolerance && !mayBeShort
            if tooLong || tooShort {
                report.fail(20, file, "duration \(seconds(duration)) s differs from the target \(target) s by more than \(seconds(tolerance)) s")
            }
        }
    }

    private func checkProducerReferenceTime(_ segment: CMAFSegment, header: CMAFHeader, into report: inout Report) {
        let file = segment.fileName
        guard let prft = segment.producerReferenceTimes.first else {
            report.fail(21, file, "no prft")
            return
        }
        if let firstMoof = segment.topLevelTypes.firstIndex(of: "moof") {
            report.require(prft.boxIndex < firstMoof, 21, file, "prft must precede the first moof")
        }
        report.require(prft.referenceTrackID == header.trackID, 21, file,
                       "prft reference_track_ID \(prft.referenceTrackID) ≠ track_ID \(header.trackID.map(String.init) ?? "none")")
    }

    /// Only a segment's first chunk must start with a sync sample (item 19 checks it); a later chunk may start
    /// with one too, e.g. where the GOP is shorter than the segment and a keyframe falls on a chunk boundary.
    private func checkChunking(_ segment: CMAFSegment, header: CMAFHeader, into report: inout Report) {
        let file = segment.fileName
        guard expectations.chunks else {
            report.require(segment.chunkCount <= 1, 22, file, "\(segment.chunkCount) chunks, but chunks are not configured")
            return
        }
        for (previous, chunk) in zip(segment.chunks, segment.chunks.dropFirst()) {
            if let end = previous.endDecodeTime, let start = chunk.baseMediaDecodeTime, end != start {
                report.fail(22, file, "chunk moof@\(chunk.moof.offset) tfdt \(start) ≠ previous chunk end \(end)")
            }
        }
    }
}
