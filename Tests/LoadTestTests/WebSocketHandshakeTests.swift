import XCTest

@testable import LoadTest

/// The opening handshake: the request, and each check on the response (RFC 6455 section 4.1).
final class WebSocketHandshakeTests: XCTestCase {
    func testSHA1KnownAnswers() {
        func hex(_ s: String) -> String { WebSocketSHA1.digest(Array(s.utf8)).map { String(format: "%02x", $0) }.joined() }
        XCTAssertEqual(hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        XCTAssertEqual(hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        XCTAssertEqual(hex(String(repeating: "a", count: 1_000_000)), "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    func testAcceptValueFromTheRFC() {
        XCTAssertEqual(WebSocketHandshake.accept(for: "dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    func testKeysAreFreshSixteenBytes() {
        let a = WebSocketHandshake(), b = WebSocketHandshake()
        XCTAssertNotEqual(a.key, b.key)
        XCTAssertEqual(Data(base64Encoded: a.key)?.count, 16)
    }

    func testRequest() {
        let handshake = WebSocketHandshake(subprotocols: ["chat", "superchat"], key: "dGhlIHNhbXBsZSBub25jZQ==")
        let request = String(decoding: handshake.request(path: "/chat?x=1", hostHeader: "server.example.com:8080",
                                                         headers: ["Origin: http://example.com", "User-Agent: k6"]), as: UTF8.self)
        XCTAssertEqual(request, """
            GET /chat?x=1 HTTP/1.1\r
            Host: server.example.com:8080\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
            Sec-WebSocket-Version: 13\r
            Sec-WebSocket-Protocol: chat, superchat\r
            Origin: http://example.com\r
            User-Agent: k6\r
            \r\n
            """)
    }

    private func verify(_ handshake: WebSocketHandshake, _ lines: [String]) throws(WebSocketError) -> String? {
        let head = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        XCTAssertEqual(head.withUnsafeBytes { WebSocketHandshake.headEnd($0) }, head.count)
        return try head.withUnsafeBytes { bytes in Result { () throws(WebSocketError) in try handshake.verify(bytes) } }.get()
    }

    private let good = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]

    func testAcceptedResponses() throws {
        let plain = WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==")
        XCTAssertNil(try verify(plain, good))
        // Names and the Upgrade/Connection tokens in any case, Connection as a list.
        XCTAssertNil(try verify(plain, ["HTTP/1.1 101 OK", "UPGRADE: WebSocket", "connection: keep-alive, upgrade",
                                        "sec-websocket-accept:s3pPLMBiTxaQ9kYGzzhZRbK+xOo=  ", "Server: x"]))
        let chat = WebSocketHandshake(subprotocols: ["chat", "superchat"], key: "dGhlIHNhbXBsZSBub25jZQ==")
        XCTAssertEqual(try verify(chat, good + ["Sec-WebSocket-Protocol: superchat"]), "superchat")
        XCTAssertNil(try verify(chat, good), "a server may choose no subprotocol")
    }

    func testRefusedResponses() {
        let handshake = WebSocketHandshake(subprotocols: ["chat"], key: "dGhlIHNhbXBsZSBub25jZQ==")
        let cases: [[String]] = [
            ["HTTP/1.1 200 OK"] + good.dropFirst(),
            ["HTTP/1.1 403 Forbidden", "Content-Length: 0"],
            ["SSH-2.0-OpenSSH"],
            good.filter { !$0.hasPrefix("Upgrade") },
            good.filter { !$0.hasPrefix("Connection") },
            good.filter { !$0.hasPrefix("Sec") },
            good.dropLast() + ["Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA="],
            good + ["Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="],
            good + ["Sec-WebSocket-Extensions: permessage-deflate"],
            good + ["Sec-WebSocket-Protocol: superchat"],
        ]
        for lines in cases {
            XCTAssertThrowsError(try verify(handshake, lines), "\(lines)") { error in
                XCTAssertEqual((error as? WebSocketError)?.kind, .wsHandshake)
            }
        }
    }
}
