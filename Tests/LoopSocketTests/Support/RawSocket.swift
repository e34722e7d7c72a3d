import Foundation
import Glibc

/// A failed libc call in a test helper.
struct RawSocketError: Error, CustomStringConvertible {
    let call: String
    let errno: Int32
    var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

@discardableResult
func check(_ call: String, _ result: Int32) throws -> Int32 {
    if result < 0 { throw RawSocketError(call: call, errno: errno) }
    return result
}

/// A raw `sockaddr` for a numeric IPv4 or IPv6 host.
func rawAddress(_ host: String, port: UInt16) -> (storage: sockaddr_storage, length: socklen_t) {
    var storage = sockaddr_storage()
    var v4 = in_addr()
    if inet_pton(AF_INET, host, &v4) == 1 {
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr = v4
        withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: sin) { raw.copyMemory(from: $0) } }
        return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
    var v6 = in6_addr()
    precondition(inet_pton(AF_INET6, host, &v6) == 1, "not a numeric host: \(host)")
    var sin6 = sockaddr_in6()
    sin6.sin6_family = sa_family_t(AF_INET6)
    sin6.sin6_port = port.bigEndian
    sin6.sin6_addr = v6
    withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: sin6) { raw.copyMemory(from: $0) } }
    return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
}

/// A raw `sockaddr_un`.
func rawUnixAddress(_ path: String) -> (storage: sockaddr_un, length: socklen_t) {
    var sun = sockaddr_un()
    sun.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    precondition(bytes.count < MemoryLayout.size(ofValue: sun.sun_path))
    withUnsafeMutableBytes(of: &sun.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return (sun, socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1))
}

private func withSockAddr<R>(_ address: (storage: sockaddr_storage, length: socklen_t), _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var storage = address.storage
    return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, address.length) } }
}

private func setTimeouts(_ fd: Int32) {
    var tv = timeval(tv_sec: Int(testTimeout), tv_usec: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
}

/// A blocking socket the test drives by hand (the "peer"). Every receive and send is bounded by
/// `SO_RCVTIMEO`/`SO_SNDTIMEO` of 10 s, so no wait can hang.
final class RawSocket: @unchecked Sendable {
    private(set) var fd: Int32

    /// Adopts `fd` (blocking, with bounded timeouts).
    init(fd: Int32) {
        self.fd = fd
        setTimeouts(fd)
    }

    /// A TCP connection to `host:port` (blocking connect; on loopback it completes or fails at once).
    convenience init(connectTo host: String, port: UInt16, receiveBufferSize: Int32? = nil) throws {
        let address = rawAddress(host, port: port)
        let fd = try check("socket", socket(Int32(address.storage.ss_family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        if var size = receiveBufferSize {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let result = withSockAddr(address) { Glibc.connect(fd, $0, $1) }
        if result < 0 {
            let code = errno
            Glibc.close(fd)
            throw RawSocketError(call: "connect", errno: code)
        }
        self.init(fd: fd)
    }

    /// A connection to a Unix-domain socket at `path`.
    convenience init(connectToUnixPath path: String) throws {
        var address = rawUnixAddress(path)
        let fd = try check("socket", socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        let result = withUnsafePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        if result < 0 {
            let code = errno
            Glibc.close(fd)
            throw RawSocketError(call: "connect", errno: code)
        }
        self.init(fd: fd)
    }

    /// A connected pair of Unix stream sockets: (one for the test, the other's raw fd to hand over).
    static func pair() throws -> (RawSocket, Int32) {
        var fds: [Int32] = [-1, -1]
        try check("socketpair", socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds))
        return (RawSocket(fd: fds[0]), fds[1])
    }

    deinit { close() }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// `TCP_NODELAY`, so each small send leaves as its own segment.
    func setNoDelay() {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sends all of `data`.
    func send(_ data: Data) throws {
        var offset = 0
        try data.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw RawSocketError(call: "send", errno: errno)
                }
                offset += n
            }
        }
    }

    func send(_ text: String) throws { try send(Data(text.utf8)) }

    /// Receives exactly `count` bytes (throws on EOF, error or the 10 s timeout).
    func receive(exactly count: Int) throws -> Data {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while result.count < count {
            let want = min(buffer.count, count - result.count)
            let n = Glibc.recv(fd, &buffer, want, 0)
            if n < 0 {
                if errno == EINTR { continue }
                throw RawSocketError(call: "recv", errno: errno)
            }
            if n == 0 { throw RawSocketError(call: "recv (EOF after \(result.count) of \(count) bytes)", errno: 0) }
            result.append(contentsOf: buffer[0..<n])
        }
        return result
    }

    /// How the stream ended.
    enum End: Equatable {
        case eof
        case error(Int32)
    }

    /// Receives until end of stream (or an error such as `ECONNRESET`); throws only on the 10 s timeout.
    func receiveToEnd() throws -> (Data, End) {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = Glibc.recv(fd, &buffer, buffer.count, 0)
            if n > 0 {
                result.append(contentsOf: buffer[0..<n])
            } else if n == 0 {
                return (result, .eof)
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                throw TestTimeout(what: "end of stream (\(result.count) bytes so far)")
            } else {
                return (result, .error(errno))
            }
        }
    }

    /// `shutdown(SHUT_WR)`: the other side sees end of stream.
    func shutdownWrite() throws {
        try check("shutdown", Glibc.shutdown(fd, Int32(SHUT_WR)))
    }

    /// Closes with `SO_LINGER` 0, which sends a reset instead of a FIN.
    func resetClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Bytes waiting in the receive queue (`FIONREAD`), without consuming them.
    var bytesAvailable: Int32 {
        var count: Int32 = 0
        _ = ioctl(fd, UInt(FIONREAD), &count)
        return count
    }

    /// The local port.
    var localPort: UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return withUnsafeBytes(of: storage) { raw in
            storage.ss_family == sa_family_t(AF_INET6)
                ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
    }
}

/// A blocking TCP listener on a loopback address and an OS-chosen port.
final class RawListener: @unchecked Sendable {
    private(set) var fd: Int32
    let port: UInt16

    /// Binds `host:0`; listens with `backlog` unless `listen` is false (a bound port nobody listens on).
    init(host: String = "127.0.0.1", port: UInt16 = 0, backlog: Int32 = 16, listen: Bool = true, receiveBufferSize: Int32? = nil) throws {
        let address = rawAddress(host, port: port)
        let fd = try check("socket", socket(Int32(address.storage.ss_family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.storage.ss_family == sa_family_t(AF_INET6) {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        if var size = receiveBufferSize {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        do {
            try check("bind", withSockAddr(address) { Glibc.bind(fd, $0, $1) })
            if listen { try check("listen", Glibc.listen(fd, backlog)) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = withUnsafeBytes(of: storage) { raw in
            storage.ss_family == sa_family_t(AF_INET6)
                ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Accepts one connection, waiting at most 10 s.
    func accept() throws -> RawSocket {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, Int32(testTimeout * 1000))
        guard ready == 1 else { throw TestTimeout(what: "a connection to accept") }
        let child = try check("accept", Glibc.accept(fd, nil, nil))
        _ = fcntl(child, F_SETFD, FD_CLOEXEC)
        return RawSocket(fd: child)
    }

    /// The accept queue's length (`TCP_INFO`'s `tcpi_unacked` on a listening socket).
    var acceptQueueLength: Int {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return -1 }
        return Int(info.tcpi_unacked)
    }
}

/// A directory under the system temp dir for Unix socket files, removed by `remove()`.
final class TempDirectory: @unchecked Sendable {
    let path: String

    init() throws {
        var template = Array("/tmp/lsock-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw RawSocketError(call: "mkdtemp", errno: errno) }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}
