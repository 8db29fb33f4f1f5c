import CFFmpeg
import CMAF

/// Tells what a video packet offers for random access, from its NAL unit types (``AccessPointKind``). The container
/// keyframe flag alone is not enough: H.264 recovery-point SEI frames and HEVC CRA pictures with leading RASL pictures
/// are flagged as keyframes, yet a CMAF segment starting there is not decodable on its own (Chrome's MSE checks the
/// payload, not only the flag); and an HEVC CRA is a clean random access point when no RASL picture follows it, which
/// ``AccessPointLookahead`` decides from the packets after it.
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

    /// What `packet` offers for random access.
    func accessPoint(_ packet: Packet) -> AccessPointKind {
        switch codec {
        case AV_CODEC_ID_H264:
            // Only keyframe-flagged packets are looked into, as before: H.264 has no leading-picture question.
            return packet.isKeyframe && nalHeaders(packet.payload).contains { $0 & 0x1f == 5 } ? .closed : .other
        case AV_CODEC_ID_HEVC:
            // Every packet: the flag may be missing on a CRA, and the pictures after a CRA decide whether it is SAP 1/2.
            return NALUnits.accessPoint(nalHeaders(packet.payload).map { ($0 >> 1) & 0x3f }, isHEVC: true)
        default:
            return packet.isKeyframe ? .closed : .other  // codecs we transcode: keyframes are sync samples by construction
        }
    }

    /// The first byte of every NAL unit in the packet (stops at the first length prefix that does not fit).
    private func nalHeaders(_ data: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var headers: [UInt8] = []
        switch syntax {
        case .lengthPrefixed(let size):
            var p = 0
            while p + size < data.count {
                var length = 0
                for i in 0..<size { length = length << 8 | Int(data[p + i]) }
                if length == 0 || p + size + length > data.count { break }
                headers.append(data[p + size])
                p += size + length
            }
        case .annexB:
            var zeros = 0
            var i = 0
            while i < data.count {
                let byte = data[i]
                if byte == 1 && zeros >= 2 && i + 1 < data.count {
                    headers.append(data[i + 1])
                    zeros = 0
                } else {
                    zeros = byte == 0 ? zeros + 1 : 0
                }
                i += 1
            }
        }
        return headers
    }
}
