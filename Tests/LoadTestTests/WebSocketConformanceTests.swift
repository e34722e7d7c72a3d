import Glibc
import XCTest

@testable import LoadTest

/// `ws` mode against the scripted peer (Benchmarks/ws-peer.py script), which breaks the protocol on purpose
/// (after one good message, so that the run goes on to report rather than stopping at a dead server):
/// each case ends the connection with its error kind and the close code RFC 6455 calls for, and a flood of
/// one endless message leaves memory bounded. Every case runs over both transports: `ws://`'s own and
/// GCDAsyncSocket (the one `wss://` takes), each against a fresh peer (whose printed findings the case reads).
final class WebSocketConformanceTests: XCTestCase {
    private var peer: WebSocketPeer!
    /// Whether the connections go over GCDAsyncSocket (``WebSocketSettings/socketTransport``).
    private var socketTransport = false

    /// Runs `body` over `ws://`'s own transport, then over GCDAsyncSocket against a new peer.
    private func onEachTransport(_ body: () throws -> Void) throws {
        for socket in [false, true] {
            if socket {
                peer.stop()
                peer = try WebSocketPeer("script")
            }
            socketTransport = socket
            try body()
        }
    }

    private var transportName: String { socketTransport ? "over GCDAsyncSocket" : "over the loop transport" }

    override func setUpWithError() throws {
        peer = try WebSocketPeer("script")
    }

    override func tearDown() {
        peer?.stop()
    }

    /// One receive-only connection to the scenario at `path`.
    private func run(_ path: String, duration: Double = 0.3, _ adjust: (inout LoadConfig) -> Void = { _ in }) throws -> RunResult {
        try shortRun(.ws, port: peer.port, connections: 1, duration: duration) { config in
            config.path = path
            config.hostHeader = "127.0.0.1:\(peer.port)"
            config.ws.workload = .receive
            config.ws.socketTransport = socketTransport
            adjust(&config)
        }
    }

    /// Asserts the run counted one error, of `kind`, and the peer saw the client's close with `code`.
    private func assertFailed(_ result: RunResult, _ kind: ErrorKind, scenario: String, closeCode: UInt16?,
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.errors.byKind, [kind.rawValue: 1], "\(transportName): \(result.errors.first ?? "")",
                       file: file, line: line)
        let expected = closeCode.map { "\(scenario): client close \($0)\n" } ?? "\(scenario): client gone without a close frame"
        XCTAssertTrue(peer.waitFor(expected), peer.child.standardOutput, file: file, line: line)
    }

    func testFragmentsAndPingsBetweenThem() throws {
        try onEachTransport {
            let result = try run("/fragments")
            XCTAssertEqual(result.errors.total, 0, result.errors.first ?? "")
            // Two messages per round, every 10 ms: a mis-joined fragment would have failed the connection.
            XCTAssertGreaterThan(result.requests, 10)
            XCTAssertTrue(peer.waitFor("fragments: pong p1\n"), peer.child.standardOutput)
            XCTAssertFalse(peer.child.standardOutput.contains("UNMASKED"))
        }
    }

    func testHeadersAndSubprotocol() throws {
        try onEachTransport {
            let result = try run("/headers") { config in
                config.http.headers = ["X-Token: abc", "Origin: http://example.com"]
                config.ws.subprotocols = ["chat", "superchat"]
            }
            XCTAssertEqual(result.errors.total, 0, result.errors.first ?? "")
            XCTAssertTrue(peer.waitFor("headers: x-token=abc protocols=chat, superchat origin=http://example.com\n"),
                          peer.child.standardOutput)
            // A quiet server hears the client's close at the end of the run (one still sending may not: a socket
            // closed with bytes unread resets the connection, and the close frame can be lost with it).
            XCTAssertTrue(peer.waitFor("headers: client close 1000\n"), "a polite close at the end: " + peer.child.standardOutput)
        }
    }

    func testMaskedServerFrame() throws {
        try onEachTransport {
            assertFailed(try run("/masked"), .wsMasked, scenario: "masked", closeCode: 1002)
        }
    }

    func testReservedBits() throws {
        try onEachTransport {
            assertFailed(try run("/reserved"), .wsMalformed, scenario: "reserved", closeCode: 1002)
        }
    }

    func testInvalidUTF8() throws {
        try onEachTransport {
            assertFailed(try run("/utf8"), .wsUTF8, scenario: "utf8", closeCode: 1007)
        }
    }

    func testServerCloseWithACode() throws {
        try onEachTransport {
            // The code is echoed back (section 5.5.1), and counted.
            let result = try run("/close")
            assertFailed(result, .wsClose, scenario: "close", closeCode: 4000)
            XCTAssertTrue(result.errors.first?.contains("4000: bye") == true, result.errors.first ?? "")
        }
    }

    func testNormalCloseReconnects() throws {
        try onEachTransport {
            let result = try run("/normal")
            XCTAssertEqual(result.errors.total, 0, result.errors.first ?? "")
            // Closed at once, every time, and each time a new connection took its place.
            XCTAssertTrue(peer.waitFor("normal: client close 1000\nnormal: client close 1000\n"), peer.child.standardOutput)
        }
    }

    func testWrongAcceptFailsTheHandshake() throws {
        try onEachTransport {
            // No connection could be made: the run stops, saying why.
            XCTAssertThrowsError(try run("/bad-accept")) { error in
                XCTAssertTrue("\(error)".contains("(ws_handshake 1): WebSocket handshake failed: Sec-WebSocket-Accept is"), "\(error)")
            }
            XCTAssertTrue(peer.waitFor("bad-accept: client gone without a close frame\n"), peer.child.standardOutput)
        }
    }

    func testReceivedSendTimesAreTimed() throws {
        try onEachTransport {
            let result = try run("/timestamps")
            XCTAssertEqual(result.errors.total, 0, result.errors.first ?? "")
            XCTAssertGreaterThan(result.requests, 20)
            XCTAssertEqual(result.latencyUs.count, result.requests, "every message carried its send time")
            // Loopback, one process each side: well under a second, and more than nothing.
            XCTAssertGreaterThan(result.latencyUs.p50, 0)
            XCTAssertLessThan(result.latencyUs.p99, 1_000_000)
        }
    }

    // MARK: Memory against a flood

    /// 64 MiB of one message that never ends, in 64 KiB fragments (or one frame announcing 64 MiB): the
    /// connection ends with `ws_too_large` once the message passes 1 MiB, the peer could push little more
    /// than that (and the kernel's buffers), and the process's peak memory grew by far less than the flood.
    func testFloodOfOneEndlessMessage() throws {
        try onEachTransport {
            for scenario in ["flood", "flood-frame"] {
                let before = try peakResidentKiB()
                try resetPeak()
                let base = try peakResidentKiB()
                let result = try run("/" + scenario)
                let growth = try peakResidentKiB() - base
                XCTAssertEqual(result.errors.byKind, ["ws_too_large": 1], result.errors.first ?? "")
                XCTAssertTrue(peer.waitFor("\(scenario): stopped after "), peer.child.standardOutput)
                let line = try XCTUnwrap(peer.child.standardOutput.split(separator: "\n").first { $0.hasPrefix("\(scenario): stopped after ") })
                let sent = try XCTUnwrap(Int(line.split(separator: " ")[3]))
                XCTAssertLessThan(sent, 24 << 20, "the client stopped reading at the limit: \(line)")
                XCTAssertLessThan(growth, 24 * 1024, "peak memory grew by \(growth) KiB (before the reset: \(before) KiB)")
            }
        }
    }
}
