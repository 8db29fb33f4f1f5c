import CFFmpeg

/// Tells whether a video packet really starts a closed GOP: an IDR (H.264 NAL type 5) or an IDR/BLA picture (HEVC
/// types 16…20). The container keyframe flag alone is not enough: H.264 recovery-point SEI frames and HEVC CRA
/// pictures with leading RASL pictures are flagged as keyframes, yet a CMAF segment starting there is not decodable
/// on its own (Chrome's MSE checks the payload, not only the flag).
struct RandomAccessProbe {
    enum Syntax { case annexB, lengthPrefixed(Int) }
    private let codec: AVCodecID
    private let syntax: Syntax

    init(parameters: CodecParameters) {
        codec = parameters.codecID
        let extra = parameters.extradata
        switch codec {
        case AV_CODEC_ID_H264 where extra.count >= 5 && extra[0] == 1:
            syntax = .lengthPrefixed(Int(extra[4] & 3) + 1)
        case AV_CODEC_ID_HEVC where extra.count >= 23 && extra[0] == 1:
            syntax = .lengthPrefixed(Int(extra[21] & 3) + 1)
        default:
            syntax = .annexB
        }
    }

    /// Whether `packet` can start a segment.
    func isRandomAccess(_ packet: Packet) -> Bool {
        guard packet.isKeyframe else { return false }
        switch codec {
        case AV_CODEC_ID_H264: return containsNAL(packet.payload) { $0 & 0x1f == 5 }
        case AV_CODEC_ID_HEVC: return containsNAL(packet.payload) { (16...20).contains(($0 >> 1) & 0x3f) }
        default: return true  // codecs we transcode produce keyframes that are sync samples by construction
        }
    }

    private func containsNAL(_ data: UnsafeBufferPointer<UInt8>, where matches: (UInt8) -> Bool) -> Bool {
        switch syntax {
        case .lengthPrefixed(let size):
            var p = 0
            while p + size < data.count {
                var length = 0
                for i in 0..<size { length = length << 8 | Int(data[p + i]) }
                if length == 0 || p + size + length > data.count { return false }
                if matches(data[p + size]) { return true }
                p += size + length
            }
            return false
        case .annexB:
            var zeros = 0
            var i = 0
            while i < data.count {
                let byte = data[i]
                if byte == 1 && zeros >= 2 && i + 1 < data.count {
                    if matches(data[i + 1]) { return true }
                    zeros = 0
                } else {
                    zeros = byte == 0 ? zeros + 1 : 0
                }
                i += 1
            }
            return false
        }
    }
}
