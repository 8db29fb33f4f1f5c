import Ingest

/// Bytes that pass for a spool object in tests that store made-up payloads: the spool's recovery checks an object's
/// box structure (see `SpoolFileCheck`), so a payload alone would be dropped as damaged at the next open.
public enum SpoolObjectBytes {
    /// `payload` as a whole object of `object`'s kind, as the recorder writes them and as spool recovery checks them
    /// (a power failure can cut an object written without its fsync short): a header is `ftyp` + `moov`, a segment
    /// `moof` + `mdat`, each box's payload `payload`; a manifest is `<MPD>…</MPD>` around `payload` in decimal.
    public static func whole(_ object: UploadObject, _ payload: [UInt8]) -> [UInt8] {
        if object.isManifest { return Array("<MPD>\(payload.map(String.init).joined(separator: ","))</MPD>".utf8) }
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + body.count)
            return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
                + Array(type.utf8) + body
        }
        return object.isHeader ? box("ftyp", []) + box("moov", payload) : box("moof", []) + box("mdat", payload)
    }
}
