import XCTest
@testable import LoadTest

/// `HTTPResponseReader`, the framing of http mode's responses from the bytes as they arrive: the same steps
/// however the reads cut the bytes, every limit reported as its error, and the remembered head used only when
/// the bytes repeat it exactly.
final class HTTPResponseReaderTests: XCTestCase {
    typealias Step = HTTPResponseReader.Step

    /// Every step `reader` takes over `text`, fed in the pieces `cuts` makes (offsets into the bytes), ending
    /// with the first failure or with `needMore` if the last response is not whole.
    private func steps(
        _ text: String, cuts: [Int] = [], limits: HTTPResponseLimits = HTTPResponseLimits(),
        checks: ResponseChecks = ResponseChecks(), reader existing: inout HTTPResponseReader
    ) -> [Step] {
        let bytes = Array(text.utf8)
        var steps: [Step] = []
        var start = 0
        for end in cuts + [bytes.count] where end >= start {
            let done = bytes[start..<end].withUnsafeBytes { piece -> Bool in
                var input = piece
                while !input.isEmpty {
                    let step = existing.next(&input)
                    if step != .needMore { steps.append(step) }
                    if case .failed = step { return true }
                }
                return false
            }
            if done { return steps }
            start = end
        }
        if !existing.isBetweenResponses { steps.append(.needMore) }
        return steps
    }

    private func steps(
        _ text: String, cuts: [Int] = [], limits: HTTPResponseLimits = HTTPResponseLimits(),
        checks: ResponseChecks = ResponseChecks()
    ) -> [Step] {
        var reader = HTTPResponseReader(limits: limits, checks: checks)
        return steps(text, cuts: cuts, limits: limits, checks: checks, reader: &reader)
    }

    private func head(_ status: Int, length: Int? = nil, chunked: Bool = false, closes: Bool = false)
        -> HTTPResponseHead
    {
        HTTPResponseHead(status: status, contentLength: length, chunked: chunked, closes: closes)
    }

    private let plain = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    private let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n"

    func testAResponseInOnePiece() {
        XCTAssertEqual(steps(plain), [.response(head(200, length: 5), headBytes: 38, bodyBytes: 5, bodyPasses: true)])
        let chunkedHead = head(200, chunked: true)
        XCTAssertEqual(steps(chunked), [.response(chunkedHead, headBytes: 47, bodyBytes: 48, bodyPasses: true)])
    }

    func testTheSameStepsWhereverTheReadsCut() {
        for text in [plain, chunked, plain + chunked + plain, "HTTP/1.1 204 No Content\r\n\r\n" + plain] {
            let whole = steps(text)
            XCTAssertFalse(whole.isEmpty)
            for cut in 0...text.utf8.count {
                XCTAssertEqual(steps(text, cuts: [cut]), whole, "cut at \(cut) of \(text.debugDescription)")
            }
            // A byte at a time.
            XCTAssertEqual(steps(text, cuts: Array(0...text.utf8.count)), whole, "byte by byte")
        }
    }

    func testPipelinedResponsesInOneRead() {
        let three = steps(plain + plain + plain)
        XCTAssertEqual(three.count, 3)
        XCTAssertEqual(Set(three.map { "\($0)" }).count, 1, "the same response three times")
    }

    func testAHeadOverTheLimitFailsWhetherItArrivesWholeOrInPieces() {
        var limits = HTTPResponseLimits()
        limits.maxHead = 64
        let long = "HTTP/1.1 200 OK\r\nX-Long: " + String(repeating: "a", count: 80) + "\r\n\r\n"
        let expected: [Step] = [.failed(.headTooLarge, "a response head over --max-head (64 bytes)")]
        XCTAssertEqual(steps(long, limits: limits), expected)
        XCTAssertEqual(steps(long, cuts: [10, 20, 30], limits: limits), expected)
        // Exactly at the limit, CR LF CR LF included, it is a head.
        let fits = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 64 - 24) + "\r\n\r\n"
        XCTAssertEqual(fits.utf8.count, 64)
        XCTAssertEqual(steps(fits, cuts: [40], limits: limits).count, 1)
        if case .failed = steps(fits, limits: limits).first { XCTFail("a head of exactly --max-head failed") }
    }

    func testABodyOverTheLimitFailsBeforeItIsRead() {
        var limits = HTTPResponseLimits()
        limits.maxBody = 4
        XCTAssertEqual(steps(plain, limits: limits),
                       [.failed(.bodyTooLarge, "a response announced a body of 5 bytes, over --max-body (4 bytes)")])
        XCTAssertEqual(steps(chunked, limits: limits),
                       [.failed(.bodyTooLarge, "a chunked response body reached 5 bytes, over --max-body (4 bytes)")])
    }

    func testMalformedFraming() {
        XCTAssertEqual(steps("HTTP/1.1 2x0 OK\r\n\r\n").first.map { "\($0)" }?.contains("malformed"), true)
        let noCRLF = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"
        XCTAssertEqual(steps(noCRLF), [.failed(.badResponse, "a chunk was not followed by CRLF")])
        let badSize = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
        XCTAssertEqual(steps(badSize), [.failed(.badResponse, "chunk size line could not be used: zz\\x0D\\x0A")])
        let longLine = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "e", count: 9000)
        XCTAssertEqual(steps(longLine, cuts: [60, 4000]), [.failed(.badResponse, "a chunk size line over 8192 bytes")])
    }

    func testTrailersAreHeldToTheHeadLimit() {
        var limits = HTTPResponseLimits()
        limits.maxHead = 100
        let trailers = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
            + String(repeating: "X-T: 1234567890\r\n", count: 10) + "\r\n"
        XCTAssertEqual(steps(trailers, limits: limits),
                       [.failed(.headTooLarge, "trailer fields over --max-head (100 bytes)")])
    }

    func testABodyIsCheckedWholeOrInPieces() {
        var checks = ResponseChecks()
        checks.bodies = [Array("ell".utf8)]
        XCTAssertTrue(checks.inspectsBody)
        let passes: Step = .response(head(200, length: 5), headBytes: 38, bodyBytes: 5, bodyPasses: true)
        XCTAssertEqual(steps(plain, checks: checks), [passes])
        XCTAssertEqual(steps(plain, cuts: [40], checks: checks), [passes], "the needle across the cut")
        let other = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhallo"
        XCTAssertEqual(steps(other, cuts: [39], checks: checks),
                       [.response(head(200, length: 5), headBytes: 38, bodyBytes: 5, bodyPasses: false)])
    }

    func testTheRememberedHeadIsUsedOnlyForTheSameBytes() {
        var reader = HTTPResponseReader(limits: HTTPResponseLimits())
        XCTAssertEqual(steps(plain, reader: &reader).count, 1)
        // The same head again, then one that shares all but its last field's value: each parsed for what it is.
        let closes = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
        let longer = "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n" + String(repeating: "b", count: 50)
        XCTAssertEqual(steps(plain + closes + longer + plain, reader: &reader), [
            .response(head(200, length: 5), headBytes: 38, bodyBytes: 5, bodyPasses: true),
            .response(head(200, length: 5, closes: true), headBytes: 57, bodyBytes: 5, bodyPasses: true),
            .response(head(200, length: 50), headBytes: 39, bodyBytes: 50, bodyPasses: true),
            .response(head(200, length: 5), headBytes: 38, bodyBytes: 5, bodyPasses: true),
        ])
    }

    func testScanFindsTheHeadWhereParseDoes() {
        for text in [plain, chunked, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", "HTTP/1.1 200\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nA: \r\r\n\r\nrest"] {
            let bytes = Array(text.utf8)
            let end = bytes.withUnsafeBytes { $0.firstIndex(of: [13, 10, 13, 10]) }.map { $0 + 4 }
            let scanned = bytes.withUnsafeBytes { HTTPResponseHead.scan($0) }
            let parsed = bytes[..<(end ?? 0)].withUnsafeBytes { HTTPResponseHead.parse($0) }
            XCTAssertEqual(scanned, parsed.map { .head($0, length: end!) } ?? .malformed, text.debugDescription)
            // Cut anywhere before its end, the head is not there yet.
            for cut in 0..<(end ?? 0) {
                let partial = bytes[..<cut].withUnsafeBytes { HTTPResponseHead.scan($0) }
                XCTAssertNotEqual(partial.isHead, true, "cut at \(cut) of \(text.debugDescription)")
            }
        }
        XCTAssertEqual(Array("HTTP/1.1 200 OK\r\nno colon\r\n".utf8).withUnsafeBytes { HTTPResponseHead.scan($0) },
                       .malformed, "a line that arrived whole is judged before the head's end")
    }
}

extension HTTPResponseHead.Scan {
    fileprivate var isHead: Bool {
        if case .head = self { return true }
        return false
    }
}
