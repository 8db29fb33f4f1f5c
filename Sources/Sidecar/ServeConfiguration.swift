import Foundation
import Ingest
import Motion
import TransportModel
import Yams
#if canImport(Glibc)
import Domain
import Glibc
#endif

/// `pushav serve --config serve.yaml`: the control API's address and access control, the state folder, the spool's
/// size and the cameras.
///
/// Parsed strictly: an unknown key, a missing required key or an invalid value is a start-up error that names the key
/// (`cameras[0].zones[1].sensitivity: must be 1…10, got 12`), never a default silently applied in its place.
public struct ServeConfiguration: Sendable, Hashable {
    /// Where the control API listens; loopback by default.
    public var listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 8080)
    /// A file holding the bearer token every API request must carry (`Authorization: Bearer …`); nil for none.
    public var tokenFile: String?
    /// Mutual TLS on the control API; nil serves plain HTTP.
    public var tls: APITLSFiles?
    /// Web origins (`https://controller.example:8443`) whose pages may call the API; every other page in a browser is
    /// refused (see `BrowserRequestPolicy`). Empty by default: only the API's own origin (the status page).
    public var allowedOrigins: [String] = []
    /// The SQLite store (connections, registries, session numbers, TLS material) and the spool live here.
    public var state: String
    public var spoolCapacityMiB: Int = 1024
    /// How long a retired destination (its connection modified to another ingest, deallocated, or its TLS endpoint
    /// replaced) keeps trying to deliver what it holds before that is given up (logged, counted). Default an hour.
    public var retiredDeliveryPatienceSeconds: Int = 3600
    /// The longest pause between two upload attempts of an object (the backoff doubles from a second up to it).
    /// Default a minute; a shorter one finds a returning ingest sooner at the cost of more attempts while it is gone.
    public var uploadMaxBackoffMs: Int = 60_000
    /// How much of the spool keeps delivered recordings for the status page (their video track, which the page
    /// plays; no second copy is written). The oldest go first, and before anything undelivered when space runs low.
    public var recentRecordingsMiB: Int = 256
    public var cameras: [CameraConfiguration]

    public init(
        listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 8080), tokenFile: String? = nil,
        tls: APITLSFiles? = nil, allowedOrigins: [String] = [], state: String, spoolCapacityMiB: Int = 1024,
        retiredDeliveryPatienceSeconds: Int = 3600, uploadMaxBackoffMs: Int = 60_000, recentRecordingsMiB: Int = 256,
        cameras: [CameraConfiguration]
    ) {
        self.listen = listen
        self.tokenFile = tokenFile
        self.tls = tls
        self.allowedOrigins = allowedOrigins
        self.state = state
        self.spoolCapacityMiB = spoolCapacityMiB
        self.retiredDeliveryPatienceSeconds = retiredDeliveryPatienceSeconds
        self.uploadMaxBackoffMs = uploadMaxBackoffMs
        self.recentRecordingsMiB = recentRecordingsMiB
        self.cameras = cameras
    }

    /// Parses and checks a YAML document.
    public init(yaml: String) throws(ConfigurationError) {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigurationError(key: "", message: "not valid YAML: \(error)")
        }
        guard let root else { throw ConfigurationError(key: "", message: "the document is empty") }
        let top = try ConfigurationMapping(root, path: "", known: ["listen", "tokenFile", "tls", "allowedOrigins", "state", "spoolCapacityMiB",
                                                                       "retiredDeliveryPatienceSeconds", "uploadMaxBackoffMs", "recentRecordingsMiB",
                                                                       "cameras"])
        listen = try top.optional("listen") { node, path throws(ConfigurationError) in try ListenAddress(node.text(path), key: path) }
            ?? ListenAddress(host: "127.0.0.1", port: 8080)
        tokenFile = try top.optional("tokenFile") { node, path throws(ConfigurationError) in try node.nonEmptyText(path) }
        tls = try top.optional("tls") { node, path throws(ConfigurationError) in try APITLSFiles(node, path: path) }
        allowedOrigins = try top.optional("allowedOrigins") { node, path throws(ConfigurationError) in
            try node.list(path) { item, itemPath throws(ConfigurationError) in
                let origin = try item.nonEmptyText(itemPath)
                // An origin is scheme://host[:port], nothing more: no path, no trailing slash (browsers send exactly that).
                guard let url = URL(string: origin), ["http", "https"].contains(url.scheme ?? ""), url.host != nil,
                      url.path.isEmpty, url.query == nil, url.fragment == nil, url.user == nil else {
                    throw ConfigurationError(key: itemPath, message: "an origin is http(s)://host[:port] without a path, got \"\(origin)\"")
                }
                return origin
            }
        } ?? []
        state = try top.required("state") { node, path throws(ConfigurationError) in try node.nonEmptyText(path) }
        spoolCapacityMiB = try top.optional("spoolCapacityMiB") { node, path throws(ConfigurationError) in
            try node.integer(path, in: 1...1_048_576)
        } ?? 1024
        retiredDeliveryPatienceSeconds = try top.optional("retiredDeliveryPatienceSeconds") { node, path throws(ConfigurationError) in
            try node.integer(path, in: 1...604_800)
        } ?? 3600
        uploadMaxBackoffMs = try top.optional("uploadMaxBackoffMs") { node, path throws(ConfigurationError) in
            try node.integer(path, in: 100...600_000)
        } ?? 60_000
        recentRecordingsMiB = try top.optional("recentRecordingsMiB") { node, path throws(ConfigurationError) in
            try node.integer(path, in: 0...1_048_576)
        } ?? 256
        cameras = try top.required("cameras") { node, path throws(ConfigurationError) in
            try node.list(path) { item, itemPath throws(ConfigurationError) in try CameraConfiguration(item, path: itemPath) }
        }
        guard !cameras.isEmpty else { throw ConfigurationError(key: "cameras", message: "at least one camera is needed") }
        var seen: Set<String> = []
        for (index, camera) in cameras.enumerated() where !seen.insert(camera.id).inserted {
            throw ConfigurationError(key: "cameras[\(index)].id", message: "\"\(camera.id)\" is used by an earlier camera")
        }
    }

    /// Refuses a control API that anyone on the network could drive: on a non-loopback address it needs a bearer
    /// token or mutual TLS. Checked after command-line overrides (`--listen`, `--token-file`), not while parsing.
    public func checkAPIAccess() throws(ConfigurationError) {
        guard !listen.isLoopback, tokenFile == nil, tls == nil else { return }
        throw ConfigurationError(
            key: "listen",
            message: "\(listen) is not a loopback address; the control API needs a bearer token (tokenFile, or --token-file) or mutual TLS (tls) there")
    }

    /// Reads and parses `path`.
    public static func load(path: String) throws(ConfigurationError) -> ServeConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: "", message: "cannot read \(path): \(UnreadableFile.reason(path))")
        }
        do {
            return try ServeConfiguration(yaml: String(decoding: data, as: UTF8.self))
        } catch {
            throw ConfigurationError(key: error.key, message: error.message, file: path)
        }
    }
}

/// `host:port` (IPv6 as `[::1]:8080`).
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public init(_ text: String, key: String) throws(ConfigurationError) {
        guard let colon = text.lastIndex(of: ":") else {
            throw ConfigurationError(key: key, message: "expected host:port, got \"\(text)\"")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            throw ConfigurationError(key: key, message: "expected host:port with a port 1…65535, got \"\(text)\"")
        }
        self.init(host: host, port: port)
    }

    /// Whether only this machine can reach the address: `localhost`, an IPv4 address in 127.0.0.0/8 or `::1` (in any
    /// spelling). Any other name could resolve to a public address, so it is not loopback.
    public var isLoopback: Bool {
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1 }
        }
        return false
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The control API's mutual TLS: its certificate chain and private key, and the CA that client certificates must
/// chain to (PEM files). A client without such a certificate cannot complete the handshake.
public struct APITLSFiles: Sendable, Hashable {
    public var certificate: String
    public var key: String
    public var clientCA: String

    public init(certificate: String, key: String, clientCA: String) {
        self.certificate = certificate
        self.key = key
        self.clientCA = clientCA
    }

    init(_ node: Node, path: String) throws(ConfigurationError) {
        let map = try ConfigurationMapping(node, path: path, known: ["certificate", "key", "clientCA"])
        certificate = try map.required("certificate") { node, path throws(ConfigurationError) in try node.nonEmptyText(path) }
        key = try map.required("key") { node, path throws(ConfigurationError) in try node.nonEmptyText(path) }
        clientCA = try map.required("clientCA") { node, path throws(ConfigurationError) in try node.nonEmptyText(path) }
    }
}

/// The control API's bearer token, as a token file holds it.
public enum APIToken {
    /// Shorter tokens are refused: the token is the only thing between the network and the cameras.
    public static let minimumLength = 16

    /// The token in `path` (surrounding whitespace, such as the final newline, dropped). It must be an RFC 6750
    /// token (`A–Z a–z 0–9 - . _ ~ + /`, then `=` padding) of at least ``minimumLength`` characters; `key` names the
    /// setting in errors. Blocking: call it off the cooperative pool.
    public static func read(path: String, key: String) throws(ConfigurationError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: key, message: "cannot read the token file \(path): \(UnreadableFile.reason(path))")
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let body = token.prefix { $0 != "=" }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/")
        guard !body.isEmpty, body.allSatisfy(allowed.contains), token.dropFirst(body.count).allSatisfy({ $0 == "=" }) else {
            throw ConfigurationError(
                key: key, message: "\(path) must hold one bearer token of A–Z, a–z, 0–9, -._~+/ (e.g. from `openssl rand -hex 32`)")
        }
        guard token.count >= minimumLength else {
            throw ConfigurationError(
                key: key, message: "the token in \(path) is shorter than \(minimumLength) characters (e.g. use `openssl rand -hex 32`)")
        }
        return token
    }
}

/// One camera: one Matter endpoint with its own Push AV Stream Transport cluster instance.
public struct CameraConfiguration: Sendable, Hashable {
    /// Names the camera in the API (`/v1/cameras/{id}/…`): letters, digits, `-` and `_`.
    public var id: String
    /// Anything libavformat opens: a camera URL, or a file.
    public var source: String
    /// For files: paced at real time and looped, so a file stands in for a camera.
    public var live: Bool = true
    /// The AllocatedVideoStream this camera provides.
    public var videoStreamID: UInt16 = 1
    /// The AllocatedAudioStream, if the camera has audio.
    public var audioStreamID: UInt16?
    /// The camera's Zone Management zones, in the video's pixel coordinates.
    public var zones: [MotionZone] = []
    /// The video stream's KeyFrameInterval in milliseconds (its GOP): segment durations must be multiples of it.
    public var keyFrameInterval: Int = 2000
    /// Which pictures motion analysis decodes.
    public var analysis: MotionAnalysisMode = .all
    /// A low-resolution stream of the same camera (its substream) that motion is analysed on instead of `source`,
    /// which is then only copied: the decode analysis needs costs a fraction of the main stream's.
    public var analysisSource: String?
    /// The cluster's PERZONESENS feature (FeatureMap bit 0): each motion zone of a transport carries its own
    /// sensitivity, and `motionSensitivity` is refused. Off by default: Google Home sets `motionSensitivity`.
    public var perZoneSensitivity: Bool = false

    public init(
        id: String, source: String, live: Bool = true, videoStreamID: UInt16 = 1, audioStreamID: UInt16? = nil,
        zones: [MotionZone] = [], keyFrameInterval: Int = 2000, analysis: MotionAnalysisMode = .all,
        analysisSource: String? = nil, perZoneSensitivity: Bool = false
    ) {
        self.id = id
        self.source = source
        self.live = live
        self.videoStreamID = videoStreamID
        self.audioStreamID = audioStreamID
        self.zones = zones
        self.keyFrameInterval = keyFrameInterval
        self.analysis = analysis
        self.analysisSource = analysisSource
        self.perZoneSensitivity = perZoneSensitivity
    }

    /// `cameras[].analysis`.
    public enum MotionAnalysisMode: String, Sendable, Hashable, CaseIterable {
        /// Every reference picture (non-reference pictures and the loop filter are skipped).
        case all
        /// Key pictures only: one decode per GOP, for low-power hosts; motion is seen up to one keyframe interval late.
        case keyframes
    }

    init(_ node: Node, path: String) throws(ConfigurationError) {
        let map = try ConfigurationMapping(node, path: path,
                                           known: ["id", "source", "live", "videoStreamID", "audioStreamID", "zones", "keyFrameInterval", "analysis", "analysisSource",
                                                   "perZoneSensitivity"])
        id = try map.required("id") { node, path throws(ConfigurationError) in
            let id = try node.nonEmptyText(path)
            guard id.utf8.count <= 64, id.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "-" || $0 == "_" }) else {
                throw ConfigurationError(key: path, message: "use 1…64 of A–Z, a–z, 0–9, - and _ (it is part of API paths), got \"\(id)\"")
            }
            return id
        }
        source = try map.required("source") { node, path throws(ConfigurationError) in try node.nonEmptyText(path) }
        live = try map.optional("live") { node, path throws(ConfigurationError) in try node.boolean(path) } ?? true
        videoStreamID = try map.optional("videoStreamID") { node, path throws(ConfigurationError) in
            UInt16(try node.integer(path, in: 0...65534))
        } ?? 1
        audioStreamID = try map.optional("audioStreamID") { node, path throws(ConfigurationError) in
            UInt16(try node.integer(path, in: 0...65534))
        }
        if let audioStreamID, audioStreamID == videoStreamID {
            throw ConfigurationError(key: "\(path).audioStreamID", message: "must differ from videoStreamID \(videoStreamID)")
        }
        keyFrameInterval = try map.optional("keyFrameInterval") { node, path throws(ConfigurationError) in
            try node.integer(path, in: 1...65535)
        } ?? 2000
        analysis = try map.optional("analysis") { node, path throws(ConfigurationError) in
            let text = try node.nonEmptyText(path)
            guard let mode = MotionAnalysisMode(rawValue: text) else {
                throw ConfigurationError(key: path, message: "must be all or keyframes, got \"\(text)\"")
            }
            return mode
        } ?? .all
        analysisSource = try map.optional("analysisSource") { node, path throws(ConfigurationError) in try node.nonEmptyText(path) }
        perZoneSensitivity = try map.optional("perZoneSensitivity") { node, path throws(ConfigurationError) in try node.boolean(path) } ?? false
        zones = try map.optional("zones") { node, path throws(ConfigurationError) in
            try node.list(path) { item, itemPath throws(ConfigurationError) in try Self.zone(item, path: itemPath) }
        } ?? []
        guard zones.count <= Self.maxZones else {
            throw ConfigurationError(key: "\(path).zones", message: "at most \(Self.maxZones) zones (the camera's MaxZones), got \(zones.count)")
        }
        var seen: Set<UInt16> = []
        for (index, zone) in zones.enumerated() where !seen.insert(zone.id).inserted {
            throw ConfigurationError(key: "\(path).zones[\(index)].id", message: "zone \(zone.id) is listed twice")
        }
    }

    /// How many zones a camera holds (its Zone Management MaxZones, which the cluster reports and counts user zones
    /// against): serve.yaml's zones may not exceed it.
    public static let maxZones = Int(TransportCapabilities().maxZones)

    static func zone(_ node: Node, path: String) throws(ConfigurationError) -> MotionZone {
        let map = try ConfigurationMapping(node, path: path, known: ["id", "name", "polygon", "sensitivity"])
        let id = try map.required("id") { node, path throws(ConfigurationError) in UInt16(try node.integer(path, in: 0...65534)) }
        let name = try map.optional("name") { node, path throws(ConfigurationError) in
            let name = try node.text(path)
            guard name.utf8.count <= 32 else {
                throw ConfigurationError(key: path, message: "at most 32 bytes (a Zone Management zone name), got \(name.utf8.count)")
            }
            return name
        } ?? ""
        let polygon = try map.required("polygon") { node, path throws(ConfigurationError) in
            try node.list(path) { point, pointPath throws(ConfigurationError) in
                let xy = try point.list(pointPath) { value, valuePath throws(ConfigurationError) in try value.number(valuePath) }
                // A Zone Management vertex is two uint16: anything beyond is no picture's pixel (and would overflow).
                guard xy.count == 2, xy.allSatisfy({ $0 >= 0 && $0 <= 65535 }) else {
                    throw ConfigurationError(key: pointPath, message: "a point is [x, y] in video pixels, both 0…65535")
                }
                return ZonePoint(x: xy[0], y: xy[1])
            }
        }
        guard (3...12).contains(polygon.count) else {
            throw ConfigurationError(key: "\(path).polygon", message: "a polygon has 3…12 points (a Zone Management zone), got \(polygon.count)")
        }
        let sensitivity = try map.optional("sensitivity") { node, path throws(ConfigurationError) in try node.integer(path, in: 1...10) }
        return MotionZone(id: id, name: name, polygon: polygon, sensitivity: sensitivity)
    }
}
