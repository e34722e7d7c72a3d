import XCTest

@testable import LoadTest

/// The session's steps: the handshake read in any split, pings answered, both close handshakes, failures.
final class WebSocketSessionTests: XCTestCase {
    enum Step: Equatable {
        case opened(String?)
        case message(text: Bool, [UInt8])
        case pong([UInt8])
        case send([UInt8])
        case closed(UInt16?, String)
    }

    private let key = "dGhlIHNhbXBsZSBub25jZQ=="
    private var response: [UInt8] {
        Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n".utf8)
    }

    /// Feeds `bytes` in pieces of `split`; the steps, with sent frames unmasked (their opcode byte, then the
    /// payload), and the error that ended it.
    private func run(_ session: inout WebSocketSession, _ bytes: [UInt8], split: Int = .max) -> ([Step], WebSocketError?) {
        var steps: [Step] = []
        var thrown: WebSocketError?
        feedWebSocketBytes(bytes, split: split) { input in
            do {
                while let step = try session.next(&input) {
                    switch step {
                    case .opened(let p): steps.append(.opened(p))
                    case .message(let text, let payload): steps.append(.message(text: text, Array(payload)))
                    case .pong(let payload): steps.append(.pong(Array(payload)))
                    case .send(let frame): steps.append(.send(Self.unmask(frame)))
                    case .closed(let code, let reason): steps.append(.closed(code, reason))
                    }
                }
                return true
            } catch {
                thrown = error as? WebSocketError
                return false
            }
        }
        return (steps, thrown)
    }

    /// A client frame as its first byte and its unmasked payload (short frames only).
    static func unmask(_ frame: [UInt8]) -> [UInt8] {
        precondition(frame[1] & 0x80 != 0 && frame[1] & 0x7F < 126, "a masked short frame")
        let key = UInt32(frame[2]) << 24 | UInt32(frame[3]) << 16 | UInt32(frame[4]) << 8 | UInt32(frame[5])
        var payload = Array(frame[6...])
        payload.withUnsafeMutableBytes { WebSocketFrame.mask($0.baseAddress!, count: $0.count, key: key) }
        return [frame[0]] + payload
    }

    func testHandshakeThenFramesInAnySplit() {
        // The server's first frames arrive with the head: they are read, not lost.
        let bytes = response + [0x81, 0x02, 0x68, 0x69] + [0x89, 0x01, 0x7A] + [0x8A, 0x00] + [0x88, 0x02, 0x03, 0xE8]
        for split in [Int.max, 1, 7] {
            var session = WebSocketSession(handshake: WebSocketHandshake(key: key), maxMessage: 1 << 20)
            defer { session.deallocate() }
            let (steps, error) = run(&session, bytes, split: split)
            XCTAssertNil(error)
            XCTAssertEqual(steps, [.opened(nil), .message(text: true, [0x68, 0x69]), .send([0x8A, 0x7A]), .pong([]),
                                   .send([0x88, 0x03, 0xE8]), .closed(1000, "")], "split \(split)")
            XCTAssertEqual(session.phase, .closed)
        }
    }

    func testClientInitiatedClose() {
        var session = WebSocketSession(handshake: WebSocketHandshake(key: key), maxMessage: 1 << 20)
        defer { session.deallocate() }
        _ = run(&session, response)
        XCTAssertEqual(Self.unmask(session.close(code: 1001)), [0x88, 0x03, 0xE9])
        XCTAssertEqual(session.phase, .closeSent)
        // A ping after our close is not answered; the server's close ends it without another close frame.
        let (steps, error) = run(&session, [0x89, 0x00, 0x82, 0x01, 0x05, 0x88, 0x02, 0x03, 0xE9])
        XCTAssertNil(error)
        XCTAssertEqual(steps, [.message(text: false, [0x05]), .closed(1001, "")])
    }

    func testCloseWithoutACodeIsAnsweredWithoutOne() {
        var session = WebSocketSession(handshake: WebSocketHandshake(key: key), maxMessage: 1 << 20)
        defer { session.deallocate() }
        let (steps, _) = run(&session, response + [0x88, 0x00])
        XCTAssertEqual(steps, [.opened(nil), .send([0x88]), .closed(nil, "")])
    }

    func testFailureSendsTheCloseCodeForTheError() {
        var session = WebSocketSession(handshake: WebSocketHandshake(key: key), maxMessage: 4)
        defer { session.deallocate() }
        let (steps, error) = run(&session, response + [0x82, 0x05, 1, 2, 3, 4, 5])
        XCTAssertEqual(steps, [.opened(nil)])
        XCTAssertEqual(error, .messageTooLarge(limit: 4))
        XCTAssertEqual(session.failure(error!).map(Self.unmask), [0x88, 0x03, 0xF1])  // 1009
        XCTAssertEqual(session.phase, .closed)
    }

    func testHandshakeFailures() {
        var session = WebSocketSession(handshake: WebSocketHandshake(key: key), maxMessage: 1 << 20)
        let (_, error) = run(&session, Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8))
        XCTAssertEqual(error?.kind, .wsHandshake)
        XCTAssertNil(session.failure(error!), "no close frame before the handshake")
        session.deallocate()
        // A head that never ends: refused at the limit, with no more than the limit held.
        var endless = WebSocketSession(handshake: WebSocketHandshake(key: key), maxMessage: 1 << 20)
        defer { endless.deallocate() }
        let junk = Array("HTTP/1.1 101 Switching Protocols\r\n".utf8) + [UInt8](repeating: 0x41, count: 40_000)
        let (_, tooLong) = run(&endless, junk, split: 1000)
        XCTAssertEqual(tooLong, .handshakeTooLong(limit: WebSocketHandshake.maxResponseHead))
    }
}
