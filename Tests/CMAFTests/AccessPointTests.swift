import CMAF
import Testing

/// Which pictures may start a segment: SAP 1/2 only (ISO/IEC 14496-12 Annex I), decided from NAL unit types in
/// decode order.
@Suite struct AccessPointTests {
    @Test(arguments: [
        ([UInt8(7), 8, 5], false, AccessPointKind.closed),  // AVC SPS, PPS, IDR slice
        ([6, 1], false, .other),  // AVC SEI (e.g. a recovery point) + non-IDR slice
        ([32, 33, 34, 20], true, .closed),  // HEVC VPS, SPS, PPS, IDR_N_LP
        ([19], true, .closed),  // IDR_W_RADL
        ([17], true, .closed),  // BLA_W_RADL: no RASL by definition
        ([18], true, .closed),  // BLA_N_LP
        ([39, 21], true, .open),  // prefix SEI + CRA
        ([16], true, .open),  // BLA_W_LP
        ([8], true, .skippedLeading),
        ([9], true, .skippedLeading),
        ([6], true, .decodableLeading),
        ([7], true, .decodableLeading),
        ([1], true, .other),  // TRAIL_R
        ([22], true, .other),  // reserved IRAP type: not something we can vouch for
    ] as [([UInt8], Bool, AccessPointKind)])
    func pictureKindFromNALTypes(types: [UInt8], isHEVC: Bool, kind: AccessPointKind) {
        #expect(NALUnits.accessPoint(types, isHEVC: isHEVC) == kind)
    }

    /// A stream in decode order, one letter per picture, and which pictures are SAP 1/2 once the stream has ended:
    /// I = IDR, C = CRA, L = RASL, D = RADL, t = trailing picture.
    @Test(arguments: [
        ("ItttCtttCttt", "100010001000", "x265 defaults with bframes=0: every CRA is SAP 1"),
        ("ItttCLLtttCLLt", "10000000000000", "open GOP with B-frames: a CRA with RASL pictures is SAP 3"),
        ("ItttCDDttt", "1000100000", "RADL pictures only: SAP 2"),
        ("ItttCDLttt", "1000000000", "a RASL after a RADL still makes it SAP 3"),
        ("ItttCCttt", "100011000", "a CRA right after a CRA ends the first one's leading pictures"),
        ("IttC", "1001", "the stream ends after a CRA: nothing undecodable follows it"),
        ("CtttCLt", "1000000", "a stream that starts on a CRA"),
        ("tttCLtt", "0000000", "no usable picture at all"),
    ])
    func verdictsInDecodeOrder(stream: String, expected: String, because: String) {
        var lookahead = AccessPointLookahead<Int>()
        var verdicts: [(Int, Bool)] = []
        let kinds: [Character: AccessPointKind] = ["I": .closed, "C": .open, "L": .skippedLeading, "D": .decodableLeading, "t": .other]
        for (index, letter) in stream.enumerated() {
            verdicts += lookahead.add(index, kinds[letter]!).map { ($0.item, $0.isAccessPoint) }
        }
        verdicts += lookahead.flush().map { ($0.item, $0.isAccessPoint) }
        #expect(verdicts.map(\.0) == Array(0 ..< stream.count), "every picture once, in decode order (\(because))")
        #expect(String(verdicts.map { $0.1 ? "1" : "0" }) == expected, "\(because)")
        #expect(lookahead.isEmpty)
    }

    @Test func picturesAreHeldOnlyWhileACRAIsUndecided() {
        var lookahead = AccessPointLookahead<Int>()
        #expect(lookahead.add(0, .closed).count == 1)
        #expect(lookahead.add(1, .other).count == 1)
        #expect(lookahead.add(2, .open).isEmpty)
        #expect(lookahead.count == 1)
        #expect(lookahead.add(3, .decodableLeading).isEmpty)
        let released = lookahead.add(4, .other)
        #expect(released.map(\.item) == [2, 3, 4])
        #expect(released.map(\.isAccessPoint) == [true, false, false])
    }

    @Test func holdingIsBounded() {
        var lookahead = AccessPointLookahead<Int>(limit: 4)
        #expect(lookahead.add(0, .open).isEmpty)
        for index in 1 ... 3 { #expect(lookahead.add(index, .decodableLeading).isEmpty) }
        let released = lookahead.add(4, .decodableLeading)
        #expect(released.map(\.item) == [0, 1, 2, 3, 4])
        #expect(released.allSatisfy { !$0.isAccessPoint }, "an undecided CRA past the bound is refused, not guessed")
        #expect(lookahead.isEmpty)
    }
}
