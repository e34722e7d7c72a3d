import Foundation
import Glibc
import SharedTestSupport

/// A blocking client connection the workloads drive, plaintext or TLS; each receive is bounded by the
/// socket's `SO_RCVTIMEO`, so no wait hangs.
protocol ByteStream: AnyObject {
    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8]) throws
    /// Receives what has arrived (at least a byte) into `buffer`; 0 at the end of the stream.
    func receiveSome(_ buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

extension ByteStream {
    /// Exactly `count` bytes, or an error if the stream ends first.
    func receive(exactly count: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = try result.withUnsafeMutableBytes { try receiveSome(UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            guard n > 0 else { throw StreamEnded(expected: count, got: filled) }
            filled += n
        }
        return result
    }

    /// One HTTP response with a Content-Length body, head and body, as text.
    func receiveHTTPResponse() throws -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let headEnd = text.range(of: "\r\n\r\n") {
                let head = text[..<headEnd.lowerBound].lowercased()
                let length = head.range(of: "content-length: ").flatMap { Int(head[$0.upperBound...].prefix { $0.isNumber }) } ?? 0
                if text.utf8.distance(from: text.startIndex, to: headEnd.upperBound) + length <= bytes.count { return text }
            }
            let n = try chunk.withUnsafeMutableBytes { try receiveSome($0) }
            guard n > 0 else { throw StreamEnded(expected: bytes.count + 1, got: bytes.count) }
            bytes += chunk[0..<n]
        }
    }
}

/// The peer closed before sending what a workload waits for.
struct StreamEnded: Error, CustomStringConvertible {
    let expected: Int
    let got: Int
    var description: String { "the server closed after \(got) of \(expected) bytes" }
}

/// The server answered, but not with what the workload expects (the bytes sent, a 200 "hello").
struct UnexpectedReply: Error, CustomStringConvertible {
    let sent: Int
    var reply = "other bytes"
    var description: String { "unexpected reply to \(sent) bytes: \(reply)" }
}

extension LoopbackClient: ByteStream {
    func send(_ bytes: [UInt8]) throws { try send(Data(bytes)) }

    func receiveSome(_ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        guard n >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return n
    }
}
