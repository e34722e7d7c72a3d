import EpollLoop
import Foundation
import LoopSocket
import XCTest
@testable import LoadTest

/// An HTTP/1.1 server that answers every request head with one fixed response; with `stream`, it then sends
/// `stream` again and again while the client reads (a body or trailers without end), up to `cap` bytes a
/// connection so that a test that fails still ends.
final class FixedResponseHTTPServer: GCDAsyncSocketDelegate, @unchecked Sendable {
    let group: EventLoopGroup
    let listener: GCDAsyncSocket
    let response: Data
    private let stream: Data?
    private let cap: Int
    private let lock = NSLock()
    private var streamedBytes = 0
    var port: UInt16 { listener.localPort }
    /// The bytes of `stream` written so far, on every connection.
    var streamed: Int { lock.withLock { streamedBytes } }

    init(_ response: String, stream: String? = nil, cap: Int = 256 << 20) throws {
        self.response = Data(response.utf8)
        self.stream = stream.map { Data($0.utf8) }
        self.cap = cap
        group = try EventLoopGroup(numberOfLoops: 1, name: "fixed-http")
        listener = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: group.loops[0], group: group)
        listener.delegate = self
        try listener.accept(onInterface: "127.0.0.1", port: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        newSocket.readData(to: Data("\r\n\r\n".utf8), withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        sock.write(response, withTimeout: -1, tag: 0)
        guard let stream else { return sock.readData(to: Data("\r\n\r\n".utf8), withTimeout: -1, tag: 0) }
        sock.write(stream, withTimeout: -1, tag: stream.count)
    }

    /// Streaming: each piece written queues the next (the tag counts the bytes streamed), until the cap.
    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) {
        guard tag > 0, let stream else { return }
        lock.withLock { streamedBytes += stream.count }
        if tag < cap { sock.write(stream, withTimeout: -1, tag: tag + stream.count) }
    }

    func stop() throws {
        listener.disconnect()
        try group.shutdownGracefully(timeout: .seconds(10))
    }
}

/// Chunked responses (`Transfer-Encoding: chunked`), which real servers send, are read chunk by chunk, with
/// chunk extensions and trailers, and count as responses, not errors.
final class HTTPChunkedTests: XCTestCase {
    func testChunkSizeLines() {
        func size(_ line: String) -> Int? { Array(line.utf8).withUnsafeBytes { HTTPChunkLine.size($0) } }
        XCTAssertEqual(size("5\r\n"), 5)
        XCTAssertEqual(size("1a\r\n"), 26)
        XCTAssertEqual(size("1A \r\n"), 26, "whitespace before the end")
        XCTAssertEqual(size("ff;name=value\r\n"), 255, "an extension is ignored")
        XCTAssertEqual(size("10 ; a=1;b=\"x y\"\r\n"), 16)
        XCTAssertEqual(size("0\r\n"), 0)
        XCTAssertEqual(size("000\r\n"), 0)
        for bad in ["\r\n", "zz\r\n", "5", "5\n", "-5\r\n", "5 x\r\n", "0x5\r\n", "ffffffffffffffffff\r\n", "5;a\rb\r\n"] {
            XCTAssertNil(size(bad), bad.debugDescription)
        }
        XCTAssertNil(size(String(HTTPChunkLine.maxChunkSize + 1, radix: 16) + "\r\n"), "too big to read")
        XCTAssertTrue(Array("\r\n".utf8).withUnsafeBytes { HTTPChunkLine.endsTrailers($0) })
        XCTAssertFalse(Array("X: y\r\n".utf8).withUnsafeBytes { HTTPChunkLine.endsTrailers($0) })
    }

    func testHeadsWithChunkedBodies() {
        func parse(_ text: String) -> HTTPResponseHead? { Array(text.utf8).withUnsafeBytes { HTTPResponseHead.parse($0) } }
        let chunked = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 9\r\n\r\n")
        XCTAssertEqual(chunked?.hasChunkedBody, true)
        XCTAssertEqual(chunked?.bodyLength, 0, "chunked wins over Content-Length")
        XCTAssertEqual(parse("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n")?.hasChunkedBody, false)
        XCTAssertEqual(parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")?.hasChunkedBody, false)
    }

    /// Several chunks, one with an extension and one with whitespace after its size, then two trailer fields:
    /// every response counts, none is an error, and the bytes received are the whole responses.
    func testChunkedResponsesCountAsResponses() throws {
        let response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
            + "5;name=value\r\nhello\r\n1A \r\nabcdefghijklmnopqrstuvwxyz\r\n1\r\n\n\r\n0\r\nX-Trailer: yes\r\nX-Other: 1\r\n\r\n"
        let server = try FixedResponseHTTPServer(response)
        defer { XCTAssertNoThrow(try server.stop()) }
        for pipeline in [1, 3] {
            let result = try shortRun(.http, port: server.port, connections: 2, duration: 0.3) {
                $0.hostHeader = "127.0.0.1:\(server.port)"
                $0.pipeline = pipeline
            }
            XCTAssertEqual(result.errors.total, 0, "pipeline \(pipeline): \(result.errors)")
            XCTAssertGreaterThan(result.requests, 0)
            XCTAssertEqual(result.bytes, result.requests * UInt64(response.utf8.count), "pipeline \(pipeline)")
        }
    }

    /// A malformed chunk size is a bad response (and the connection is dropped), not a hang.
    func testAMalformedChunkIsABadResponse() throws {
        let server = try FixedResponseHTTPServer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
        defer { XCTAssertNoThrow(try server.stop()) }
        do {
            let result = try shortRun(.http, port: server.port, connections: 1, duration: 0.2) {
                $0.hostHeader = "127.0.0.1:\(server.port)"
            }
            XCTAssertEqual(result.requests, 0)
            XCTAssertGreaterThan(result.errors.byKind["bad_response"] ?? 0, 0, "\(result.errors)")
        } catch {
            XCTAssertTrue("\(error)".contains("chunk size line"), "\(error)")
        }
    }

    /// `--expect-body` and `--expect-length` read a chunked body as its chunks joined: a substring that spans
    /// two chunks passes, one only in a chunk-size line or a trailer fails, and the length is the data's.
    func testBodyChecksSeeTheChunkedBodyJoined() throws {
        let response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;ext=abc\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: zzz\r\n\r\n"
        let server = try FixedResponseHTTPServer(response)
        defer { XCTAssertNoThrow(try server.stop()) }
        for (body, length, passes) in [("lo wo", 11, true), ("abc", nil, false), ("zzz", nil, false), ("hello", 10, false)] as [(String, Int?, Bool)] {
            let result = try shortRun(.http, port: server.port, connections: 1, duration: 0.2) {
                $0.hostHeader = "127.0.0.1:\(server.port)"
                $0.checks.body = Array(body.utf8)
                $0.checks.length = length
            }
            XCTAssertGreaterThan(result.requests + result.errors.total, 0, body)
            if passes {
                XCTAssertEqual(result.errors.total, 0, "\(body): \(result.errors)")
            } else {
                XCTAssertGreaterThan(result.errors.byKind["check"] ?? 0, 0, "\(body): \(result.errors)")
            }
        }
    }

    /// A chunked body is checked piece by piece: a needle split over pieces (down to a byte each) is found,
    /// the length is the data's, and what is kept between pieces never exceeds the needle (a server may
    /// stream a chunked body without end).
    func testBodyScanFindsANeedleAcrossPiecesAndKeepsOnlyItsLength() {
        var checks = ResponseChecks()
        checks.body = Array("needle".utf8)
        func scan(_ pieces: [String]) -> ResponseChecks.BodyScan {
            var scan = ResponseChecks.BodyScan()
            for piece in pieces {
                Array(piece.utf8).withUnsafeBytes { scan.feed($0, needle: checks.body) }
                XCTAssertLessThanOrEqual(scan.keptBytes, 5)
            }
            return scan
        }
        XCTAssertTrue(scan(["a needle here"]).passes(checks))
        XCTAssertTrue(scan(["a nee", "dle"]).passes(checks))
        XCTAssertTrue(scan(["n", "e", "e", "d", "l", "e"]).passes(checks))
        XCTAssertTrue(scan(["xxn", "", "ee", "dlexx"]).passes(checks))
        XCTAssertFalse(scan(["needl", "x", "e"]).passes(checks))
        XCTAssertFalse(scan([]).passes(checks))
        XCTAssertEqual(scan(Array(repeating: "0123456789", count: 1_000)).bytes, 10_000)
        checks.body = nil
        checks.length = 7
        XCTAssertTrue(scan(["abc", "defg"]).passes(checks))
        XCTAssertFalse(scan(["abc", "def"]).passes(checks))
    }
}
