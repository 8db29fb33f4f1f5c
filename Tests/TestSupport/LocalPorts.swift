import Foundation
import Synchronization

/// Loopback ports nobody uses right now (bound and released; the caller binds them again right away).
public enum LocalPorts {
    public static func freeTCPPort(excluding: Set<Int> = []) throws -> Int {
        for _ in 0..<20 {
            let port = try bindEphemeral(type: SOCK_STREAM)
            if !excluding.contains(port) { return port }
        }
        throw LocalPortsError("no free TCP port")
    }

    /// A free loopback TCP port kept bound (not listening) until ``PortReservation/release()``: a client connecting
    /// meanwhile is refused, as by a server that is down, and no other test's server or outgoing connection can take
    /// the port. Why: a test whose ingest stays down for a minute before it starts must find its port still its own.
    public static func reserveTCPPort() throws -> PortReservation {
        let (fd, port) = try bindLoopback(type: SOCK_STREAM)
        return PortReservation(port: port, fd: fd)
    }

    /// The first of `count` consecutive UDP ports (an even one, as RTP wants) that are all free, chosen at random in
    /// `range`. The default lies above both the kernel's ephemeral ports (32768–60999) and the ports FFmpeg's RTSP
    /// clients pick for RTP (5000–65000), so no other test's client can take one between this probe and the bind.
    public static func freeUDPRange(count: Int, in range: ClosedRange<Int> = 65002...65534) throws -> Int {
        guard range.count > count else { throw LocalPortsError("\(range) is too small for \(count) ports") }
        for _ in 0..<50 {
            let base = Int.random(in: range.lowerBound...(range.upperBound - count)) & ~1
            if (base..<(base + count)).allSatisfy({ canBind(port: $0, type: SOCK_DGRAM) }) { return base }
        }
        throw LocalPortsError("no \(count) consecutive free UDP ports in \(range)")
    }

    /// Sends `request` to a loopback TCP port and returns what came back within `timeout` (until the peer closes,
    /// `complete` says the answer is whole, or the time is up); nil when nothing listens. Blocks: call off the pool.
    public static func exchange(port: Int, request: String, timeout: Duration = .seconds(2),
                                complete: (String) -> Bool) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var wait = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { return nil }
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else { return nil }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let received = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if received == 0 { break }
            if received > 0 {
                answer += buffer[0..<received]
                if complete(String(decoding: answer, as: UTF8.self)) { break }
            }
        }
        return String(decoding: answer, as: UTF8.self)
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
        let (fd, port) = try bindLoopback(type: type)
        close(fd)
        return port
    }

    /// A socket bound to a loopback port the kernel chose, and that port; the caller closes the socket.
    private static func bindLoopback(type: __socket_type) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { throw LocalPortsError("cannot open a socket") }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            throw LocalPortsError("cannot bind a loopback port")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
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

/// A loopback TCP port held by a bound socket; released (closed) once, at the latest when this goes away.
public final class PortReservation: @unchecked Sendable {  // the descriptor is closed once, under the lock
    public let port: Int
    private let fd: Mutex<Int32?>

    init(port: Int, fd: Int32) {
        self.port = port
        self.fd = Mutex(fd)
    }

    /// Frees the port for the server that is about to bind it.
    public func release() {
        if let fd = fd.withLock({ value -> Int32? in defer { value = nil }; return value }) { close(fd) }
    }

    deinit { release() }
}

public struct LocalPortsError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
