import FoundationEssentials
import XCTest
@testable import LoadTest

final class PayloadTests: XCTestCase {
    func testEchoMessagesCarryTheirSequenceAndAreChecked() {
        for size in [1, 7, 8, 9, 64, 16_384] {
            var message = [UInt8](repeating: 0, count: size)
            message.withUnsafeMutableBytes { Pattern.shared.fillMessage($0, sequence: 41, phase: 3) }
            message.withUnsafeBytes { bytes in
                XCTAssertTrue(Pattern.shared.checkMessage(bytes, sequence: 41, phase: 3), "size \(size)")
                XCTAssertFalse(Pattern.shared.checkMessage(bytes, sequence: 42, phase: 3), "size \(size)")
                if size > 8 { XCTAssertFalse(Pattern.shared.checkMessage(bytes, sequence: 41, phase: 4), "size \(size)") }
            }
            // One flipped byte anywhere is caught.
            message[size - 1] ^= 0x20
            message.withUnsafeBytes { XCTAssertFalse(Pattern.shared.checkMessage($0, sequence: 41, phase: 3)) }
        }
    }

    /// The cursor the echo connection keeps instead of dividing by the period: after any number of messages
    /// it points where ``Pattern/at(_:phase:)`` does, across the period's wrap, for sizes below and above it.
    func testCursorKeepsUpWithTheMessagesItSteps() {
        let pattern = Pattern.shared
        for size in [1, 64, 16_384, Pattern.period - 1, Pattern.period, Pattern.period + 3, 200_000] {
            for phase: UInt32 in [0, 7_919, UInt32(Pattern.period - 1)] {
                var cursor = Pattern.Cursor(size: size, phase: phase)
                for sequence: UInt64 in 0..<3_000 {
                    let expected = pattern.at(sequence &* UInt64(size), phase: phase)
                    guard cursor.start(in: pattern) == expected else {
                        return XCTFail("size \(size), phase \(phase): message \(sequence) starts elsewhere")
                    }
                    cursor.advance()
                }
            }
        }
    }

    /// A message filled and checked from the cursor's position is the one
    /// ``Pattern/fillMessage(_:sequence:phase:)`` makes.
    func testMessagesFromTheCursorMatchTheDividedOnes() {
        let pattern = Pattern.shared
        let size = 100
        var cursor = Pattern.Cursor(size: size, phase: 11)
        for sequence: UInt64 in 0..<700 {  // 700 · 100 bytes: past the period
            var fromCursor = [UInt8](repeating: 0, count: size)
            var divided = [UInt8](repeating: 1, count: size)
            let source = cursor.start(in: pattern)
            fromCursor.withUnsafeMutableBytes { pattern.fillMessage($0, sequence: sequence, from: source) }
            divided.withUnsafeMutableBytes { pattern.fillMessage($0, sequence: sequence, phase: 11) }
            XCTAssertEqual(fromCursor, divided, "message \(sequence)")
            fromCursor.withUnsafeBytes { bytes in
                XCTAssertTrue(pattern.checkMessagePart(bytes, at: 0, size: size, sequence: sequence, from: source))
                XCTAssertFalse(pattern.checkMessagePart(
                    bytes, at: 0, size: size, sequence: sequence &+ 1, from: source))
            }
            cursor.advance()
        }
    }

    func testStreamCheck() {
        let chunk = Pattern.shared.streamChunk(offset: 100_000, phase: 9, count: 65_536)
        chunk.withUnsafeBytes { bytes in
            XCTAssertTrue(Pattern.shared.checkStream(bytes, offset: 100_000, phase: 9))
            XCTAssertFalse(Pattern.shared.checkStream(bytes, offset: 100_001, phase: 9))
            XCTAssertTrue(Pattern.shared.checkStream(UnsafeRawBufferPointer(rebasing: bytes[10...]), offset: 100_010, phase: 9))
        }
    }

    func testHTTPResponseHeads() {
        func parse(_ text: String) -> HTTPResponseHead? {
            Array(text.utf8).withUnsafeBytes { HTTPResponseHead.parse($0) }
        }
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\n"),
                       HTTPResponseHead(status: 200, contentLength: 5, chunked: false, closes: false))
        XCTAssertEqual(parse("HTTP/1.1 404 Not Found\r\ncontent-length:0\r\nConnection: close\r\n\r\n"),
                       HTTPResponseHead(status: 404, contentLength: 0, chunked: false, closes: true))
        XCTAssertEqual(parse("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n")?.closes, true)
        XCTAssertEqual(parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n")?.closes, false)
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")?.chunked, true)
        XCTAssertEqual(parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n")?.bodyLength, 0)
        XCTAssertNil(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"))
        XCTAssertNil(parse("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"))
        XCTAssertNil(parse("SSH-2.0-OpenSSH\r\n\r\n"))
        XCTAssertNil(parse("HTTP/1.1 2000 OK\r\n\r\n"))
        XCTAssertNil(parse("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"))
        XCTAssertNil(parse(""))
    }

    /// Lines end at CRLF only: a lone CR is part of its line, a colon counts only within its own line, and a
    /// head cut after a CR has no last line end.
    func testHTTPResponseHeadLineEnds() {
        func parse(_ text: String) -> HTTPResponseHead? {
            Array(text.utf8).withUnsafeBytes { HTTPResponseHead.parse($0) }
        }
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 3\r\n\r\n")?.contentLength, 3)
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\r\nContent-Length: 4\r\n\r\n")?.contentLength, 4)
        XCTAssertNil(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\rX: y\r\n\r\n"))
        XCTAssertNil(parse("HTTP/1.1 200 OK\r\nno colon\r\nX: y\r\n\r\n"))
        XCTAssertNil(parse("HTTP/1.1 200 OK\r\nContent-Length: 7\r"))
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n")?.contentLength, 8)
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 000000000000000009\r\n\r\n")?.contentLength, 9)
        XCTAssertNil(parse("HTTP/1.1 200 OK\r\nContent-Length: 0000000000000000010\r\n\r\n"))
    }

    func testErrorClassification() {
        XCTAssertEqual(ErrorKind.classify(errno: .connectionRefused), .refused)
        XCTAssertEqual(ErrorKind.classify(errno: .connectionReset), .reset)
        XCTAssertEqual(ErrorKind.classify(errno: .brokenPipe), .reset)
        XCTAssertEqual(ErrorKind.classify(errno: .addressNotAvailable), .addressNotAvailable)
        XCTAssertEqual(ErrorKind.classify(errno: .tooManyOpenFiles), .tooManyFiles)
        var counts = ErrorCounts()
        counts.add(.refused, 2)
        counts.add(.mismatch)
        XCTAssertEqual(counts.total, 3)
        XCTAssertEqual(ErrorCounts(byName: counts.byName), counts)
        XCTAssertEqual(ErrorCounts(byName: ["no-such-kind": 4])[.other], 4)
    }

    func testFileLimitCheck() {
        let small = Limits.checkFileLimit(needed: 10)
        XCTAssertTrue(small.fits)
        let huge = Limits.checkFileLimit(needed: Int(Int32.max))
        XCTAssertFalse(huge.fits)
        XCTAssertTrue(Limits.advice(huge, connections: 1_000_000_000, perConnection: 1).contains("ulimit -n"))
    }
}
