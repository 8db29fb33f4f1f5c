import CFFmpeg

/// The linked libavformat version, e.g. "59.27.100".
public var libavformatVersion: String {
    let v = avformat_version()
    return "\(v >> 16).\((v >> 8) & 0xff).\(v & 0xff)"
}
