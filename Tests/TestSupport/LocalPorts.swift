import Foundation

/// Loopback ports nobody uses right now (bound and released; the caller binds them again right away).
public enum LocalPorts {
    public static func freeTCPPort(excluding: Set<Int> = []) throws -> Int {
        for _ in 0..<20 {
            let port = try bindEphemeral(type: SOCK_STREAM)
            if !excluding.contains(port) { return port }
        }
        throw LocalPortsError("no free TCP port")
    }

    /// The first of `count` consecutive UDP ports (an even one, as RTP wants) that are all free.
    public static func freeUDPRange(count: Int) throws -> Int {
        for _ in 0..<50 {
            let base = try bindEphemeral(type: SOCK_DGRAM) & ~1
            guard base + count < 65536 else { continue }
            if (base..<(base + count)).allSatisfy({ canBind(port: $0, type: SOCK_DGRAM) }) { return base }
        }
        throw LocalPortsError("no \(count) consecutive free UDP ports")
    }

    public static func isListening(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private static func bindEphemeral(type: __socket_type) throws -> Int {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw LocalPortsError("cannot bind a loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func canBind(port: Int, type: __socket_type) -> Bool {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

public struct LocalPortsError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
