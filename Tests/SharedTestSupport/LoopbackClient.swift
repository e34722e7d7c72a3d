import Foundation
import Glibc

/// A blocking loopback (127.0.0.1) client for tests; every send and receive is bounded by `SO_SNDTIMEO` and
/// `SO_RCVTIMEO` (10 s), so no wait can hang.
public final class LoopbackClient {
    /// The socket.
    public let fd: Int32

    /// Connected to 127.0.0.1:`port`.
    public init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard Self.connect(fd, toPort: port) == 0 else {
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    deinit { Glibc.close(fd) }

    /// Connects the socket `fd` (a stream or a datagram one) to 127.0.0.1:`port`; `connect`'s result.
    public static func connect(_ fd: Int32, toPort port: UInt16) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// Sends all of `text`.
    public func send(_ text: String) throws { try send(Data(text.utf8)) }

    /// Sends all of `data`.
    public func send(_ data: Data) throws {
        var offset = 0
        try data.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                guard n > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                offset += n
            }
        }
    }

    /// Exactly `count` bytes (fewer only if the stream ends first).
    public func receive(_ count: Int) throws -> Data {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while result.count < count {
            let n = recv(fd, &buffer, min(buffer.count, count - result.count), 0)
            if n > 0 { result.append(contentsOf: buffer[0..<n]); continue }
            if n == 0 { break }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return result
    }

    /// Everything until the server closes (a reset counts as the end, and is returned as `reset`).
    public func receiveToEnd() throws -> (data: Data, reset: Bool) {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { result.append(contentsOf: buffer[0..<n]); continue }
            if n == 0 { return (result, false) }
            if errno == ECONNRESET { return (result, true) }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    /// What arrives until it ends with `end` (or the stream ends), as text, a byte at a time.
    public func receive(upTo end: String) throws -> String {
        var text = ""
        while !text.hasSuffix(end) {
            let byte = try receive(1)
            guard let first = byte.first else { break }
            text.unicodeScalars.append(Unicode.Scalar(first))
        }
        return text
    }
}
