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
        guard var head = statusLine(bytes, n) else { return nil }
        var line = lineEnd(bytes, from: 12)
        while line + 2 < n {
            let start = line + 2
            let end = lineEnd(bytes, from: start)
            if end == start { break }  // the empty line: end of the head
            guard field(bytes, start..<end, into: &head) else { return nil }
            line = end
        }
        return head
    }

    /// What ``scan(_:)`` found at the start of the bytes.
    package enum Scan: Equatable {
        /// A well-formed head, `length` bytes with its CRLF CRLF.
        case head(HTTPResponseHead, length: Int)
        /// No empty line yet: the head goes on in the bytes to come.
        case incomplete
        /// A line that has arrived whole is not what a response head may hold.
        case malformed
    }

    /// Finds the head at the start of `bytes` and parses it in the same pass over its lines (one search for
    /// each line's CRLF, where finding CRLF CRLF first and then parsing went over the bytes twice). The head
    /// ends at the first empty line, which is where the first CRLF CRLF is, and agrees with ``parse(_:)`` on
    /// it. A line is judged as soon as it has arrived whole, so a malformed head is known before its end.
    package static func scan(_ bytes: UnsafeRawBufferPointer) -> Scan {
        let n = bytes.count
        var line = lineEnd(bytes, from: 0)
        guard line < n else { return .incomplete }
        // No CRLF can come before byte 12 of a well-formed status line ("HTTP/1.x SSS").
        guard line >= 12, var head = statusLine(bytes, n) else { return .malformed }
        while true {
            let start = line + 2
            let end = lineEnd(bytes, from: start)
            if end >= n { return .incomplete }
            if end == start { return .head(head, length: end + 2) }
            guard field(bytes, start..<end, into: &head) else { return .malformed }
            line = end
        }
    }

    /// The status line at the start of the `n` bytes ("HTTP/1.x SSS" then a space, the reason phrase, or the
    /// line's end), as a head with no fields yet; nil if it is not one.
    @inline(__always)
    private static func statusLine(_ bytes: UnsafeRawBufferPointer, _ n: Int) -> HTTPResponseHead? {
        guard n >= 12, matches(bytes, 0..<7, "http/1."), bytes[8] == space,
              let status = digits(bytes, 9..<12), status >= 100,
              n == 12 || bytes[12] == space || bytes[12] == cr else { return nil }
        return HTTPResponseHead(status: status, contentLength: nil, chunked: false, closes: bytes[7] == zero)
    }

    /// Reads the header field on the line `range` (without its CRLF) into `head`; false if it is not a field or
    /// its value is one loadtest cannot use.
    @inline(__always)
    private static func field(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, into head: inout HTTPResponseHead
    ) -> Bool {
        let (start, end) = (range.lowerBound, range.upperBound)
        guard let colon = firstIndex(of: UInt8(ascii: ":"), in: bytes, start..<end) else { return false }
        var valueStart = colon + 1
        var valueEnd = end
        while valueStart < valueEnd && (bytes[valueStart] == space || bytes[valueStart] == tab) { valueStart += 1 }
        while valueEnd > valueStart && (bytes[valueEnd - 1] == space || bytes[valueEnd - 1] == tab) {
            valueEnd -= 1
        }
        let name = start..<colon
        let value = valueStart..<valueEnd
        if matches(bytes, name, "content-length") {
            guard !value.isEmpty, value.count <= 18, let length = digits(bytes, value) else { return false }
            if let earlier = head.contentLength, earlier != length { return false }
            head.contentLength = length
        } else if matches(bytes, name, "transfer-encoding") {
            if contains(bytes, value, "chunked") { head.chunked = true }
        } else if matches(bytes, name, "connection") {
            if contains(bytes, value, "close") { head.closes = true }
            // HTTP/1.0 closes unless it says keep-alive.
            if bytes[7] == zero && contains(bytes, value, "keep-alive") { head.closes = false }
        }
        return true
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
    private static let zero = UInt8(ascii: "0")

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
