import Foundation
import Glibc
import SharedTestSupport

/// A UDP socket connected to 127.0.0.1:`port`, receives bounded by `SO_RCVTIMEO` (10 s).
final class UDPClient {
    private let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard LoopbackClient.connect(fd, toPort: port) == 0 else {
            let failure = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
        }
    }

    deinit { close(fd) }

    /// Sends `datagram` and waits for the one that comes back; an error if it differs.
    func echo(_ datagram: [UInt8]) throws {
        guard datagram.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == datagram.count else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var reply = [UInt8](repeating: 0, count: datagram.count + 1)
        let n = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard reply[0..<n].elementsEqual(datagram) else { throw UnexpectedReply(sent: datagram.count, reply: "\(n) bytes") }
    }
}
