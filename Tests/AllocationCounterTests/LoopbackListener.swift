import Foundation
import Glibc

/// A blocking listening socket on 127.0.0.1 and a free port, for a client program to connect to; `accept`
/// and every receive are bounded (`SO_RCVTIMEO`, 20 s).
final class LoopbackListener {
    private let fd: Int32
    /// The port it listens on.
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        SocketStream.bound(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let failure = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }

    /// The next connection (an error after 20 s without one).
    func accept() throws -> SocketStream {
        let accepted = Glibc.accept(fd, nil, nil)
        guard accepted >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return SocketStream(accepted)
    }
}

/// An accepted connection, closed when released.
final class SocketStream: ByteStream {
    private let fd: Int32

    /// Takes `fd`, bounding its sends and receives.
    init(_ fd: Int32) {
        self.fd = fd
        Self.bound(fd)
    }

    deinit { close(fd) }

    /// Sets 20 s send and receive timeouts on `fd` (on a listener, the receive timeout bounds `accept`).
    static func bound(_ fd: Int32) {
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            offset += n
        }
    }

    func receiveSome(_ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        guard n >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return n
    }
}
