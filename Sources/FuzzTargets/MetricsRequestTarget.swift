import LoadTest
import LoopSocket

/// The metrics endpoint's request reader (LoopMetricsServer's `MetricsRequest`): what the socket delivers (the
/// bytes up to and with the first CRLF CRLF, within the head limit) goes to the reader, and its answer is built.
///
/// Input: a client's bytes. Properties: the response is one well-formed HTTP/1.1 response, as loadtest's own
/// response parser reads it (status 200, 400, 404 or 405; `Content-Length` the body's length, or for a `HEAD`
/// the length a `GET` would get, with no body); a connection that closes says `Connection: close`; a 400 closes.
enum MetricsRequestTarget {
    static let headEnd: [UInt8] = Array("\r\n\r\n".utf8)

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        // The read the endpoint queues: to CRLF CRLF within the head limit, or nothing (the read fails).
        guard let end = firstRange(of: headEnd, in: data), end <= MetricsRequestReader.maxHead else { return }
        let (bytes, keepOpen, headOnly) = MetricsRequestReader.response(to: UnsafeRawBufferPointer(rebasing: data[0..<end]))
        let response = String(decoding: bytes, as: UTF8.self)
        guard let responseHeadEnd = firstRange(of: headEnd, in: bytes) else {
            throw PropertyFailure("a response without an end to its head: \(response.prefix(200))")
        }
        let parsed = bytes.withUnsafeBytes { HTTPResponseHead.parse($0.bytes(upTo: responseHeadEnd)) }
        guard let parsed else { throw PropertyFailure("a response loadtest cannot parse: \(response.prefix(200))") }
        try check([200, 400, 404, 405].contains(parsed.status), "status \(parsed.status)")
        let body = bytes.count - responseHeadEnd
        if headOnly {
            try check(body == 0, "a response to HEAD with a body of \(body) bytes")
        } else {
            try check(parsed.contentLength == body,
                      "Content-Length \(String(describing: parsed.contentLength)), body \(body) bytes")
        }
        try check(parsed.closes == !keepOpen, "keepOpen \(keepOpen), the response says closes \(parsed.closes)")
        if parsed.status == 400 { try check(!keepOpen, "a 400 that keeps the connection open") }
        if parsed.status == 200 && !headOnly {
            try check(response.hasSuffix(MetricsRequestReader.page), "a 200 without the page")
        }
    }

    /// The index just past the first occurrence of `needle` in `bytes`, or nil.
    static func firstRange(of needle: [UInt8], in bytes: some RandomAccessCollection<UInt8>) -> Int? {
        let array = Array(bytes)
        guard array.count >= needle.count else { return nil }
        for start in 0...(array.count - needle.count) where array[start..<start + needle.count].elementsEqual(needle) {
            return start + needle.count
        }
        return nil
    }
}
