@testable import HTTPHello
import XCTest

/// The request-head parser, on its own: the HTTP/1.1 conformance cases of uNetworking's h1spec suite
/// (https://github.com/uNetworking/h1spec, http_test.ts), restated here, plus RFC 9112's framing rules.
final class HTTPHeadParserTests: XCTestCase {
    private func parse(_ text: String, maxLength: Int = 8192) -> HTTPHeadParser.Outcome {
        Array(text.utf8).withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: maxLength) }
    }

    private func head(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> HTTPRequestHead? {
        guard case .complete(let head, let length) = parse(text) else {
            XCTFail("not a complete head: \(parse(text))", file: file, line: line)
            return nil
        }
        XCTAssertEqual(length, text.utf8.count, "the head is all of the text", file: file, line: line)
        return head
    }

    /// h1spec's fragmented requests: the server must wait for more (here: the parser says incomplete).
    func testFragmentsAreIncomplete() {
        for fragment in [
            "G", "GET ", "GET /hello", "GET /hello ", "GET /hello HTTP", "GET /hello HTTP/1.1", "GET /hello HTTP/1.1\r",
            "GET /hello HTTP/1.1\r\n", "GET /hello HTTP/1.1\r\nHos", "GET /hello HTTP/1.1\r\nHost:",
            "GET /hello HTTP/1.1\r\nHost: ", "GET /hello HTTP/1.1\r\nHost: localhost", "GET /hello HTTP/1.1\r\nHost: localhost\r",
            "GET /hello HTTP/1.1\r\nHost: localhost\r\n", "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r",
        ] {
            XCTAssertEqual(parse(fragment), .incomplete, fragment.debugDescription)
        }
    }

    /// h1spec's requests that must be answered 2xx.
    func testValidRequests() {
        XCTAssertEqual(head("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), HTTPRequestHead())
        XCTAssertNotNil(head("GET / HTTP/1.1\r\nhoSt:\texample.com\r\nempty:\r\n\r\n"))
        XCTAssertNotNil(head("GET / HTTP/1.1\r\nHost: example.com\r\nX-Empty-Header: \r\n\r\n"))
        XCTAssertEqual(head("POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\n")?.body, .length(5))
        XCTAssertEqual(head("POST / HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n")?.body, .chunked)
        // Expect without a body: nothing to continue.
        XCTAssertEqual(head("GET / HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\n\r\n")?.expectsContinue, false)
    }

    /// h1spec's requests that must be refused with a 4xx (or, for the version, 5xx).
    func testRefusedRequests() {
        let cases: [(String, HTTPFailure)] = [
            ("GET / \r\n\r\n", .badRequest),  // no version
            ("GET / HTTP/1.1\r\nHost: example.com\r\nX-Invalid[]: test\r\n\r\n", .badRequest),
            ("GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", .badRequest),  // no Host
            ("GET / HTTP/1.1\r\nHost: example.com\r\nHost: example.org\r\n\r\n", .badRequest),
            ("GET / HTTP/1.1\r\nHost: example.com\r\nContent-Length: -123456789123456789123456789\r\n\r\n", .badRequest),
            ("GET / HTTP/1.1\r\nHost: example.com\r\nContent-Length: -1234\r\n\r\n", .badRequest),
            ("GET / HTTP/1.1\r\nHost: example.com\r\nContent-Length: abc\r\n\r\n", .badRequest),
            ("GET / HTTP/1.1\r\nHost: example.com\r\nX-Bad-Control-Char: test\u{07}\r\n\r\n", .badRequest),
            ("GET / HTTP/9.9\r\nHost: example.com\r\n\r\n", .versionNotSupported),
            ("Extra lineGET / HTTP/1.1\r\nHost: example.com\r\n\r\n", .badRequest),
            ("GET / HTTP/1.1\r\nHost: example.com\r\n\rSome-Header: Test\r\n\r\n", .badRequest),
            // h1spec allows 400 or 2xx for both framings at once; refusing is the safe choice.
            ("POST / HTTP/1.1\r\nHost: example.com\r\ncontent-LengtH: 5\r\nTransFer-Encoding: chunked\r\n\r\n", .badRequest),
        ]
        for (request, failure) in cases {
            XCTAssertEqual(parse(request), .failed(failure), request.debugDescription)
        }
    }

    /// RFC 9112's other rules this server keeps.
    func testFramingAndPersistenceRules() {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost : x\r\n\r\n"), .failed(.badRequest), "whitespace before the colon")
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"), .failed(.badRequest), "obsolete line folding")
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"), .failed(.badRequest))
        // A repeated Content-Length is refused even with the same value, as nginx does.
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"), .failed(.badRequest))
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ncontent-length:5\r\n\r\n"), .failed(.badRequest))
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"), .failed(.notImplemented))
        XCTAssertEqual(parse("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), .failed(.badRequest))
        XCTAssertEqual(head("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")?.body, HTTPRequestHead.Body.none)
        // Persistence: HTTP/1.1 unless close; HTTP/1.0 only with keep-alive.
        XCTAssertEqual(head("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?.keepAlive, false)
        XCTAssertEqual(head("GET / HTTP/1.1\r\nHost: x\r\nConnection: TE, Close\r\n\r\n")?.keepAlive, false)
        XCTAssertEqual(head("GET / HTTP/1.0\r\n\r\n")?.keepAlive, false)
        let keptAlive = head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
        XCTAssertEqual(keptAlive?.keepAlive, true)
        XCTAssertEqual(keptAlive?.isHTTP10, true)
        XCTAssertEqual(head("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")?.isHead, true)
        XCTAssertEqual(head("HEADER / HTTP/1.1\r\nHost: x\r\n\r\n")?.isHead, false)
        XCTAssertEqual(head("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\n")?.expectsContinue, true)
        // Empty lines before the request line are skipped (RFC 9112 §2.2) and counted in the length.
        XCTAssertNotNil(head("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"))
    }

    /// A bare LF ends a line as CRLF does (RFC 9112 §2.2 lets a recipient accept it; nginx does), with any
    /// mix of the two; a CR that is not followed by an LF is still refused.
    func testBareLineFeedsEndLines() {
        XCTAssertEqual(head("GET / HTTP/1.0\n\n")?.isHTTP10, true)
        XCTAssertEqual(head("GET / HTTP/1.1\nHost: x\n\n"), HTTPRequestHead())
        XCTAssertEqual(head("POST / HTTP/1.1\r\nHost: x\nContent-Length: 5\r\n\n")?.body, .length(5))
        XCTAssertEqual(head("GET / HTTP/1.1\nHost: x\n\r\n"), HTTPRequestHead())
        XCTAssertNotNil(head("\n\r\nGET / HTTP/1.1\nHost: x\n\n"), "empty lines before the request line")
        for fragment in ["GET / HTTP/1.1\n", "GET / HTTP/1.1\nHost: x\n", "GET / HTTP/1.1\nHost: x\n\r"] {
            XCTAssertEqual(parse(fragment), .incomplete, fragment.debugDescription)
        }
        XCTAssertEqual(parse("GET / HTTP/1.1\nHost: x\rY: z\n\n"), .failed(.badRequest), "a bare CR")
        // Pipelined heads with bare LFs: the first ends at its own empty line.
        let one = "GET /1 HTTP/1.1\nHost: x\n\n"
        guard case .complete(_, let length) = parse(one + "GET /2 HTTP/1.1\nHost: x\n\n") else { return XCTFail() }
        XCTAssertEqual(length, one.utf8.count)
    }

    /// A request line that is not HTTP is refused as soon as its line end arrives, before the rest of a head
    /// (which may never come); a valid one still waits for the rest.
    func testABadRequestLineIsRefusedWhenItEnds() {
        let garbage = String(repeating: "A", count: 300)
        for request in [garbage + "\n", garbage + "\r\n", "GET /\r\n", "GET / HTTP/1.1 extra\n", "\r\nGET\tx HTTP/1.1\n"] {
            XCTAssertEqual(parse(request), .failed(.badRequest), request.debugDescription)
        }
        XCTAssertEqual(parse("GET / HTTP/2.0\r\n"), .failed(.versionNotSupported))
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost"), .incomplete)
        XCTAssertEqual(parse(garbage), .incomplete, "no line end yet: it may still become a request line")
    }

    /// A head longer than the limit is refused with 431, complete or not.
    func testOversizedHeads() {
        let big = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 200)
        XCTAssertEqual(parse(big, maxLength: 100), .failed(.headerTooLarge))
        XCTAssertEqual(parse(big + "\r\n\r\n", maxLength: 100), .failed(.headerTooLarge))
        XCTAssertEqual(parse(String(big.prefix(90)), maxLength: 100), .incomplete)
    }

    /// Empty lines before the request line count toward the limit: a parse of nothing but empty lines is
    /// bounded like any other head.
    func testEmptyLinesBeforeTheRequestLineCountTowardTheLimit() {
        XCTAssertEqual(parse(String(repeating: "\r\n", count: 60), maxLength: 100), .failed(.headerTooLarge))
        XCTAssertEqual(parse(String(repeating: "\n", count: 101), maxLength: 100), .failed(.headerTooLarge))
        XCTAssertEqual(parse(String(repeating: "\r\n", count: 50), maxLength: 100), .incomplete)
        let request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        XCTAssertEqual(parse(String(repeating: "\r\n", count: 40) + request, maxLength: 100), .failed(.headerTooLarge))
        guard case .complete(_, let length) = parse(String(repeating: "\r\n", count: 10) + request, maxLength: 100)
        else { return XCTFail() }
        XCTAssertEqual(length, 20 + request.utf8.count)
    }

    /// More header fields than the limit get 431; the limit itself is allowed.
    func testHeaderFieldCountLimit() {
        func request(fields: Int) -> String {
            "GET / HTTP/1.1\r\nHost: x\r\n" + (1..<fields).map { "X-\($0): y\r\n" }.joined() + "\r\n"
        }
        XCTAssertNotNil(head(request(fields: 100)), "100 fields, Host among them: the default limit")
        XCTAssertEqual(parse(request(fields: 101)), .failed(.tooManyFields))
        let few = Array(request(fields: 4).utf8).withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: 8192, maxFields: 3) }
        XCTAssertEqual(few, .failed(.tooManyFields))
        XCTAssertEqual(HTTPFailure.tooManyFields.statusLine, "431 Request Header Fields Too Large")
    }

    /// A head fed in pieces, each parse resuming from the last one's scan, ends the same way as a head parsed
    /// whole, for every split: complete, refused at its request line, too large, or refused in its fields.
    func testResumedParsesAgreeWithWholeParses() {
        let heads = [
            "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n\r\n",
            "\r\n\nGET / HTTP/1.0\n\n",
            "GET / HTTP/1.1\nHost: x\n\r\n",
            "GET /\r\nHost: x\r\n\r\n",
            "GET / HTTP/9.9\r\nHost: x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\nBad[]: y\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 120) + "\r\n\r\n",
        ]
        for text in heads {
            let bytes = Array(text.utf8)
            let whole = bytes.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: 100) }
            for first in 1..<bytes.count {
                for second in first..<bytes.count {
                    var scan = HTTPHeadParser.Scan()
                    var outcome = HTTPHeadParser.Outcome.incomplete
                    for end in [first, second, bytes.count] where outcome == .incomplete {
                        outcome = bytes[..<end].withUnsafeBufferPointer {
                            HTTPHeadParser.parse($0, maxLength: 100, maxFields: 100, resuming: &scan)
                        }
                    }
                    XCTAssertEqual(outcome, whole, "\(text.debugDescription) split at \(first), \(second)")
                }
            }
        }
    }

    /// A resumed parse searches only the bytes after the scanned ones (and the two before them, where an
    /// empty line may begin): told that a head's first bytes were searched, it does not find the end there.
    func testAResumedParseDoesNotSearchTheScannedBytesAgain() {
        let bytes = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\nmore".utf8)
        var scan = HTTPHeadParser.Scan(scanned: UInt32(bytes.count - 4), requestLineEnded: true)
        let outcome = bytes.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: 8192, maxFields: 100, resuming: &scan) }
        XCTAssertEqual(outcome, .incomplete)
        XCTAssertEqual(scan.scanned, UInt32(bytes.count))
        // And a head whose last two scanned bytes begin its empty line is found.
        let split = Array("GET / HTTP/1.1\r\nHost: x\r\n\r".utf8)
        var partial = HTTPHeadParser.Scan()
        XCTAssertEqual(split.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: 8192, maxFields: 100, resuming: &partial) }, .incomplete)
        XCTAssertTrue(partial.requestLineEnded)
        guard case .complete = (split + [0x0A]).withUnsafeBufferPointer({
            HTTPHeadParser.parse($0, maxLength: 8192, maxFields: 100, resuming: &partial)
        }) else { return XCTFail("the head's end was not found") }
    }

    /// The parse stops at the end of the first head: the next request's bytes are not its business.
    func testPipelinedHeadsParseOneAtATime() {
        let one = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
        guard case .complete(_, let length) = parse(one + "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n") else { return XCTFail() }
        XCTAssertEqual(length, one.utf8.count)
    }
}
