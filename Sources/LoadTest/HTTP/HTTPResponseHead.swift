import Glibc

/// The parts of an HTTP/1.x response head that a load generator needs, parsed straight from the bytes (no
/// strings, no allocation: this runs once per response).
package struct HTTPResponseHead: Equatable, Sendable {
    /// The status code.
    package var status: Int
    /// The body length from `Content-Length`; nil when absent.
    package var contentLength: Int?
    /// `Transfer-Encoding: chunked`: the body comes in chunks (``HTTPChunkLine``), whatever Content-Length says.
    package var chunked: Bool
    /// The server will close the connection after this response (`Connection: close`, or HTTP/1.0 without
    /// keep-alive).
    package var closes: Bool

    /// Parses a head ending in CRLF CRLF; nil if it is not a well-formed HTTP/1.x response head.
    package static func parse(_ bytes: UnsafeRawBufferPointer) -> HTTPResponseHead? {
        let n = bytes.count
        // "HTTP/1.x SSS" then a space (reason phrase) or the end of the line.
        guard n >= 12, matches(bytes, 0..<7, "http/1."), bytes[8] == space,
              let status = digits(bytes, 9..<12), status >= 100,
              n == 12 || bytes[12] == space || bytes[12] == cr else { return nil }
        let http10 = bytes[7] == UInt8(ascii: "0")
        var head = HTTPResponseHead(status: status, contentLength: nil, chunked: false, closes: http10)
        var line = lineEnd(bytes, from: 12)
        while line + 2 < n {
            let start = line + 2
            let end = lineEnd(bytes, from: start)
            if end == start { break }  // the empty line: end of the head
            guard let colon = firstIndex(of: UInt8(ascii: ":"), in: bytes, start..<end) else { return nil }
            var valueStart = colon + 1
            var valueEnd = end
            while valueStart < valueEnd && (bytes[valueStart] == space || bytes[valueStart] == tab) { valueStart += 1 }
            while valueEnd > valueStart && (bytes[valueEnd - 1] == space || bytes[valueEnd - 1] == tab) {
                valueEnd -= 1
            }
            let name = start..<colon
            let value = valueStart..<valueEnd
            if matches(bytes, name, "content-length") {
                guard !value.isEmpty, value.count <= 18, let length = digits(bytes, value) else { return nil }
                if let earlier = head.contentLength, earlier != length { return nil }
                head.contentLength = length
            } else if matches(bytes, name, "transfer-encoding") {
                if contains(bytes, value, "chunked") { head.chunked = true }
            } else if matches(bytes, name, "connection") {
                if contains(bytes, value, "close") { head.closes = true }
                if http10 && contains(bytes, value, "keep-alive") { head.closes = false }
            }
            line = end
        }
        return head
    }

    /// The body length to read: 0 for 1xx, 204 and 304 responses and when no length is given (and for a
    /// chunked body, read by ``hasChunkedBody`` instead).
    package var bodyLength: Int {
        if status < 200 || status == 204 || status == 304 || chunked { return 0 }
        return contentLength ?? 0
    }

    /// Whether a chunked body follows the head (1xx, 204 and 304 responses have no body whatever they say).
    package var hasChunkedBody: Bool {
        chunked && !(status < 200 || status == 204 || status == 304)
    }

    // MARK: Bytes

    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
    private static let cr = UInt8(ascii: "\r")

    /// The index of the CR of the next CRLF at or after `from` (or the end of the bytes). The CRs are found by
    /// `memchr`: this runs for every line of every response, and a byte-at-a-time loop was most of the parse.
    private static func lineEnd(_ bytes: UnsafeRawBufferPointer, from: Int) -> Int {
        guard let base = bytes.baseAddress else { return bytes.count }
        var i = from
        while i + 1 < bytes.count {
            guard let found = memchr(base + i, Int32(cr), bytes.count - 1 - i) else { break }
            let at = base.distance(to: UnsafeRawPointer(found))
            if bytes[at + 1] == UInt8(ascii: "\n") { return at }
            i = at + 1
        }
        return bytes.count
    }

    private static func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        guard let base = bytes.baseAddress, !range.isEmpty,
              let found = memchr(base + range.lowerBound, Int32(byte), range.count) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// Decimal digits only, as a number.
    private static func digits(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        var value = 0
        var i = range.lowerBound
        while i < range.upperBound {
            let d = Int(bytes[i]) &- 48
            guard d >= 0 && d <= 9 else { return nil }
            value = value &* 10 &+ d
            i &+= 1
        }
        return value
    }

    /// Whether the bytes in `range` equal `lowercase` ignoring ASCII case.
    private static func matches(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString) -> Bool
    {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let literal = lowercase.utf8Start
        var k = 0
        while k < range.count {
            guard bytes[range.lowerBound &+ k] | 0x20 == literal[k] else { return false }
            k &+= 1
        }
        return true
    }

    /// Whether `lowercase` occurs in the bytes in `range`, ignoring ASCII case.
    private static func contains(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString
    ) -> Bool {
        let length = lowercase.utf8CodeUnitCount
        guard range.count >= length else { return false }
        for start in range.lowerBound...(range.upperBound - length)
        where matches(bytes, start..<(start + length), lowercase) {
            return true
        }
        return false
    }
}
