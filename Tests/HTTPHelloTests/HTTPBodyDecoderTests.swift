@testable import HTTPHello
import XCTest

final class HTTPBodyDecoderTests: XCTestCase {
    /// Feeds `text` in pieces of `step` bytes; returns the bytes used when the body ended, or the failure.
    private func decode(_ body: HTTPRequestHead.Body, _ text: String, step: Int = .max) -> (used: Int, outcome: HTTPBodyDecoder.Outcome) {
        var decoder = HTTPBodyDecoder(body)
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + step)
            let (used, outcome) = bytes[offset..<end].withUnsafeBufferPointer { decoder.consume($0) }
            offset += used
            if outcome != .needMore { return (offset, outcome) }
        }
        return (offset, .needMore)
    }

    func testContentLengthBodyEndsExactly() {
        XCTAssertEqual(decode(.length(8), "ab\r\n\r\ncdGET / HTTP/1.1").used, 8)
        XCTAssertEqual(decode(.length(8), "ab\r\n\r\ncdGET", step: 3).outcome, .done)
        XCTAssertEqual(decode(.length(8), "ab\r\n").outcome, .needMore)
    }

    /// h1spec's chunked case, whole and byte by byte, with the next request after it.
    func testChunkedBody() {
        let body = "c\r\nHellO world1\r\n0\r\n\r\n"
        for step in [1, 2, 5, .max] {
            let result = decode(.chunked, body + "GET / HTTP/1.1\r\n", step: step)
            XCTAssertEqual(result.outcome, .done, "step \(step)")
            XCTAssertEqual(result.used, body.utf8.count, "step \(step)")
        }
        // Extensions and trailers are read past.
        let fancy = "5;name=value\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n"
        XCTAssertEqual(decode(.chunked, fancy).used, fancy.utf8.count)
        XCTAssertEqual(decode(.chunked, fancy).outcome, .done)
    }

    func testMalformedChunkedBodies() {
        for bad in ["x\r\n", "\r\n", "5\r\nhelloX\r\n", "5\nhello\r\n", "0\r\nTrailer\n", "0\r\n\rX", "FFFFFFFFFFFFFFFFF\r\n"] {
            XCTAssertEqual(decode(.chunked, bad).outcome, .failed, bad.debugDescription)
        }
    }
}
