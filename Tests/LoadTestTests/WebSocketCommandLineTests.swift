import XCTest

@testable import LoadTest

/// `loadtest ws`'s command line: the URL schemes, the workloads and their refusals.
final class WebSocketCommandLineTests: XCTestCase {
    private func config(_ arguments: [String]) throws -> LoadConfig {
        guard case .run(let config) = try CommandLineParser.parse(arguments) else {
            XCTFail("not a run: \(arguments)")
            return LoadConfig(mode: .ws)
        }
        return config
    }

    private func rejects(_ arguments: [String], mentioning text: String, line: UInt = #line) {
        XCTAssertThrowsError(try CommandLineParser.parse(arguments), line: line) { error in
            XCTAssertTrue("\(error)".contains(text), "\(error)", line: line)
        }
    }

    func testURLsAndHeaders() throws {
        let plain = try config(["ws", "--url", "ws://127.0.0.1:9001/chat?room=1", "-H", "Origin: http://x", "--ws-subprotocol", "chat",
                                "--ws-subprotocol", "superchat"])
        XCTAssertEqual(plain.mode, .ws)
        XCTAssertEqual(plain.host, "127.0.0.1")
        XCTAssertEqual(plain.port, 9001)
        XCTAssertEqual(plain.path, "/chat?room=1")
        XCTAssertEqual(plain.hostHeader, "127.0.0.1:9001")
        XCTAssertFalse(plain.tls.enabled)
        XCTAssertEqual(plain.http.headers, ["Origin: http://x"])
        XCTAssertEqual(plain.ws.subprotocols, ["chat", "superchat"])
        XCTAssertEqual(plain.ws.workload, .echo)
        XCTAssertEqual(plain.ws.maxMessage, 1 << 20)
        let secure = try config(["ws", "--url", "wss://localhost/feed", "--insecure"])
        XCTAssertTrue(secure.tls.enabled)
        XCTAssertEqual(secure.port, 443)
        let port = try config(["ws", "--port", "9001"])
        XCTAssertEqual(port.path, "/")
        XCTAssertEqual(port.hostHeader, "127.0.0.1:9001")
        rejects(["ws", "--url", "http://127.0.0.1:9001/"], mentioning: "ws://host:port/path or wss://")
        rejects(["http", "--url", "ws://127.0.0.1:9001/"], mentioning: "http://host:port/path or https://")
        rejects(["ws"], mentioning: "ws mode needs --url ws://")
        rejects(["ws", "--port", "1", "--method", "POST"], mentioning: "--method is not an option of ws mode")
        rejects(["echo", "--port", "1", "--ws-ping", "1s"], mentioning: "apply to ws mode")
        rejects(["ws", "--port", "1", "--ws-subprotocol", "a b"], mentioning: "token")
    }

    func testWorkloads() throws {
        let echo = try config(["ws", "--port", "1", "--size", "4k", "--pipeline", "8", "--ws-max-message", "64k"])
        XCTAssertEqual(echo.size, 4096)
        XCTAssertEqual(echo.pipeline, 8)
        XCTAssertEqual(echo.ws.maxMessage, 65536)
        XCTAssertEqual(try config(["ws", "--port", "1", "--rate", "1k"]).rate, 1000)
        XCTAssertEqual(try config(["ws", "--port", "1", "--ws-ping", "500ms"]).ws.workload, .heartbeat(interval: 0.5))
        let receive = try config(["ws", "--port", "1", "--ws-receive", "--ws-send", "{\"subscribe\":\"prices\"}"])
        XCTAssertEqual(receive.ws.workload, .receive)
        XCTAssertEqual(receive.ws.greeting, "{\"subscribe\":\"prices\"}")
        rejects(["ws", "--port", "1", "--ws-ping", "1s", "--ws-receive"], mentioning: "separate workloads")
        rejects(["ws", "--port", "1", "--ws-receive", "--ws-ping", "1s"], mentioning: "separate workloads")
        rejects(["ws", "--port", "1", "--ws-ping", "0"], mentioning: "--ws-ping")
        rejects(["ws", "--port", "1", "--ws-ping", "1s", "--rate", "10"], mentioning: "open loop paces echo messages")
        rejects(["ws", "--port", "1", "--ws-receive", "--pipeline", "2"], mentioning: "--pipeline/--size")
        rejects(["ws", "--port", "1", "--size", "64k", "--ws-max-message", "1000"], mentioning: "over --ws-max-message")
        rejects(["ws", "--port", "1", "--ws-max-message", "0"], mentioning: "--ws-max-message")
    }

    func testHelpNamesTheModeAndItsOptions() {
        let usage = CommandLineParser.usage
        for text in ["ws        WebSocket (RFC 6455)", "--ws-ping T", "--ws-receive", "--ws-subprotocol P", "--ws-max-message B", "--ws-send TEXT"] {
            XCTAssertTrue(usage.contains(text), text)
        }
    }

    func testSendTimeFormat() {
        func time(_ text: String) -> UInt64? { Array(text.utf8).withUnsafeBytes { WebSocketSettings.sendTime($0) } }
        XCTAssertEqual(time("1795521600123"), 1_795_521_600_123_000_000)
        XCTAssertEqual(time("1795521600123456 {\"p\":1}"), 1_795_521_600_123_456_000)
        XCTAssertEqual(time("1795521600123456789,x"), 1_795_521_600_123_456_789)
        XCTAssertNil(time("17955216001234"), "14 digits is no unit")
        XCTAssertNil(time("17955216001234567890"), "20 digits")
        XCTAssertNil(time("hello"))
        XCTAssertNil(time(""))
    }
}
