import EpollLoop
import Foundation
import Glibc
import LoopSocket
import XCTest
@testable import LoadTest

/// What a hostile or broken HTTP server sends is bounded and counted: a body over `--max-body`, a head or trailers
/// over `--max-head`, replies that never come in a run shorter than `--timeout`; and what it says is printed
/// escaped.
final class HTTPHostileServerTests: XCTestCase {
    private func run(_ port: UInt16, duration: Double = 0.3, _ adjust: (inout LoadConfig) -> Void = { _ in }) throws
        -> RunResult
    {
        try shortRun(.http, port: port, connections: 2, duration: duration) {
            $0.hostHeader = "127.0.0.1:\(port)"
            adjust(&$0)
        }
    }

    /// The errors a run counted by kind and its first error's text; or, when every connection ended before a
    /// single reply and the run stopped, the runner's message (which names the kinds and the first error too).
    private func errors(_ port: UInt16, _ adjust: (inout LoadConfig) -> Void = { _ in }) -> String {
        do {
            let result = try run(port, adjust)
            XCTAssertEqual(result.requests, 0)
            return "\(result.errors.byKind) \(result.errors.first ?? "")"
        } catch {
            return "\(error)"
        }
    }

    /// `--max-head` and `--max-body` set the limits (with their suffixes), in http mode only, within their
    /// ranges; the defaults are nginx's.
    func testTheLimitsOnTheCommandLine() throws {
        guard case .run(let config) = try CommandLineParser.parse(
            ["http", "--url", "http://127.0.0.1:8080/", "--max-head", "16k", "--max-body", "10m"]) else {
            return XCTFail("not a run")
        }
        XCTAssertEqual(config.httpLimits.maxHead, 16 << 10)
        XCTAssertEqual(config.httpLimits.maxBody, 10 << 20)
        XCTAssertEqual(HTTPResponseLimits().maxHead, 8192)
        XCTAssertEqual(HTTPResponseLimits().maxBody, 1 << 20)
        for arguments in [["http", "--url", "http://127.0.0.1:8080/", "--max-head", "10"],
                          ["echo", "--port", "9000", "--max-body", "1m"]] {
            XCTAssertThrowsError(try CommandLineParser.parse(arguments), "\(arguments)")
        }
    }

    /// A body announced past `--max-body` is refused as soon as its head arrives, not read.
    func testAnAnnouncedBodyOverTheLimitIsBodyTooLarge() throws {
        let server = try FixedResponseHTTPServer("HTTP/1.1 200 OK\r\nContent-Length: 999999999999999999\r\n\r\n")
        defer { XCTAssertNoThrow(try server.stop()) }
        let text = errors(server.port)
        XCTAssertTrue(text.contains("body_too_large"), text)
        XCTAssertTrue(text.contains("over --max-body (1048576 bytes)"), text)
    }

    /// A chunked body that never ends is cut where its chunks pass `--max-body`.
    func testAnEndlessChunkedBodyIsCutAtTheLimit() throws {
        let chunk = String(repeating: "x", count: 0x10000)
        let server = try FixedResponseHTTPServer(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", stream: "10000\r\n" + chunk + "\r\n")
        defer { XCTAssertNoThrow(try server.stop()) }
        let text = errors(server.port) { $0.httpLimits.maxBody = 4 << 20 }
        XCTAssertTrue(text.contains("body_too_large"), text)
        XCTAssertTrue(text.contains("over --max-body (4194304 bytes)"), text)
    }

    /// A body longer than a read piece (300 KiB here) is read in pieces: it completes, its length is right,
    /// and a needle that straddles two pieces is found.
    func testALongBodyIsReadInPiecesAndChecked() throws {
        let seam = HTTPResponseLimits.piece
        let body = String(repeating: "a", count: seam - 3) + "needle" + String(repeating: "b", count: 300_000 - seam - 3)
        let server = try FixedResponseHTTPServer("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(server.port) {
            $0.checks.bodies = [Array("needle".utf8)]
            $0.checks.length = 300_000
        }
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
        XCTAssertGreaterThan(result.requests, 0)
        let failing = try run(server.port) { $0.checks.bodies = [Array("needles".utf8)] }
        XCTAssertGreaterThan(failing.errors.byKind["check"] ?? 0, 0, "\(failing.errors)")
    }

    /// A head longer than `--max-head` is its own kind of error, not `other`.
    func testAnOversizedHeadIsHeadTooLarge() throws {
        let big = "HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: 10_000) + "\r\nContent-Length: 0\r\n\r\n"
        let server = try FixedResponseHTTPServer(big)
        defer { XCTAssertNoThrow(try server.stop()) }
        let text = errors(server.port)
        XCTAssertTrue(text.contains("head_too_large") && text.contains("a response head over --max-head"), text)
        XCTAssertFalse(text.contains("other"), text)
        let raised = try run(server.port) { $0.httpLimits.maxHead = 16 << 10 }
        XCTAssertEqual(raised.errors.total, 0, "\(raised.errors)")
    }

    /// Trailers that never end (one short line after another) are cut at `--max-head` bytes.
    func testEndlessTrailersAreHeadTooLarge() throws {
        let server = try FixedResponseHTTPServer(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n", stream: "X-Trailer: more\r\n")
        defer { XCTAssertNoThrow(try server.stop()) }
        let text = errors(server.port)
        XCTAssertTrue(text.contains("head_too_large") && text.contains("trailer fields over --max-head"), text)
    }

    /// Replies still awaited when a run shorter than `--timeout` ends are errors (`unfinished`), not silence.
    func testRepliesStillAwaitedAtTheEndAreUnfinished() throws {
        let server = try SilentServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(server.port) { $0.timeout = 30 }
        XCTAssertEqual(result.requests, 0)
        XCTAssertEqual(result.errors.byKind["unfinished"], 2, "\(result.errors)")
        XCTAssertTrue(result.errors.first?.contains("no HTTP response when the run ended") ?? false, "\(result.errors)")
    }

    /// What the server said is printed escaped: an ESC sequence in a malformed head comes out as `\x1B`.
    func testServerTextIsEscaped() throws {
        let server = try FixedResponseHTTPServer("HTTP/1.1 2\u{1B}[31mX\r\n\r\n")
        defer { XCTAssertNoThrow(try server.stop()) }
        let text = errors(server.port)
        XCTAssertTrue(text.contains("HTTP/1.1 2\\x1B[31mX\\x0D\\x0A\\x0D\\x0A"), text)
        XCTAssertFalse(text.contains("\u{1B}"), text)
        XCTAssertEqual(ServerText.escaped(Array("a\\b\u{7F}é".utf8)), "a\\\\b\\x7F\\xC3\\xA9")
        XCTAssertEqual(ServerText.escaped(Array("abcdef".utf8), limit: 3), "abc…")
    }

    /// A body that may be long (`--max-body 1g`) and streams without end is read in pieces and dropped: the
    /// process's memory grows by far less than what the server streams meanwhile.
    func testAStreamedBodyIsNotHeld() throws {
        let server = try FixedResponseHTTPServer(
            "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n", stream: String(repeating: "z", count: 1 << 16))
        defer { XCTAssertNoThrow(try server.stop()) }
        try resetPeak()
        let before = try peakResidentKiB()
        let result = try run(server.port, duration: 1) { $0.httpLimits.maxBody = 1 << 30 }
        let grown = try peakResidentKiB() - before
        XCTAssertEqual(result.requests, 0)
        XCTAssertGreaterThan(server.streamed, 64 << 20, "the server did not stream enough to tell")
        XCTAssertLessThan(grown, 32 << 10, "KiB grown while \(server.streamed) bytes were streamed")
    }

    /// End to end, the binary against a server that announces an endless body and streams it: loadtest counts
    /// `body_too_large` and exits 1; against one that never answers, within a run shorter than `--timeout`, it
    /// counts `unfinished` and exits 1.
    func testTheBinaryCountsWhatAServerWithholdsOrFloods() throws {
        let server = try FixedResponseHTTPServer(
            "HTTP/1.1 200 OK\r\nContent-Length: 999999999999999999\r\n\r\n", stream: String(repeating: "z", count: 1 << 16))
        defer { XCTAssertNoThrow(try server.stop()) }
        let loadtest = ChildProcess.product("loadtest")
        let flooded = try ChildProcess.run(loadtest, [
            "http", "--url", "http://127.0.0.1:\(server.port)/", "-c", "2", "-d", "0.5s", "--warmup", "0.1s",
            "--loops", "1",
        ])
        XCTAssertNotEqual(flooded.status, 0, flooded.output + flooded.error)
        XCTAssertTrue((flooded.output + flooded.error).contains("body_too_large"), flooded.output + flooded.error)
        let silent = try SilentServer()
        defer { XCTAssertNoThrow(try silent.stop()) }
        let withheld = try ChildProcess.run(loadtest, [
            "http", "--url", "http://127.0.0.1:\(silent.port)/", "-c", "2", "-d", "0.5s", "--warmup", "0.1s",
            "--loops", "1", "--json", "-",
        ])
        XCTAssertEqual(withheld.status, 1, withheld.output + withheld.error)
        XCTAssertTrue(withheld.output.contains("\"unfinished\":2") || withheld.output.contains("\"unfinished\" : 2"),
                      withheld.output)
    }
}
