import SharedTestSupport
import XCTest

@testable import LoadTest

/// `ws` mode against the `websockets` package's echo server (a server no one here wrote): echo in closed and
/// open loop, large messages, heartbeats, TLS. Plaintext cases run over both transports: `ws://`'s own and
/// GCDAsyncSocket (the one `wss://` takes).
final class WebSocketModeTests: XCTestCase {
    /// Whether plaintext connections go over GCDAsyncSocket (``WebSocketSettings/socketTransport``).
    private var socketTransport = false

    /// Runs `body` over `ws://`'s own transport, then over GCDAsyncSocket.
    private func onEachTransport(_ body: () throws -> Void) rethrows {
        for socket in [false, true] {
            socketTransport = socket
            try body()
        }
    }

    private var transportName: String { socketTransport ? "over GCDAsyncSocket" : "over the loop transport" }

    private func run(_ peer: WebSocketPeer, connections: Int = 4, duration: Double = 0.5, path: String = "/",
                     _ adjust: (inout LoadConfig) -> Void = { _ in }) throws -> RunResult {
        try shortRun(.ws, port: peer.port, connections: connections, duration: duration) { config in
            config.path = path
            config.hostHeader = "127.0.0.1:\(peer.port)"
            config.ws.socketTransport = socketTransport
            adjust(&config)
        }
    }

    private func assertNoErrors(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.errors.total, 0, "\(transportName): \(result.errors.byKind) \(result.errors.first ?? "")",
                       file: file, line: line)
    }

    func testClosedLoopEchoWithPipelining() throws {
        let peer = try WebSocketPeer("echo")
        defer { peer.stop() }
        try onEachTransport {
            let result = try run(peer) { $0.size = 1000; $0.pipeline = 4 }
            assertNoErrors(result)
            XCTAssertGreaterThan(result.requests, 100)
            XCTAssertEqual(result.connectionsEstablished, 4)
            XCTAssertEqual(result.bytes, result.requests * 1000, "every message is --size bytes")
        }
    }

    func testMessagesOfEveryLengthForm() throws {
        // 125 bytes: a 7-bit length; 126 and 65,535: 16-bit; 65,536 and 300,000: 64-bit (the server's frames too).
        let peer = try WebSocketPeer("echo")
        defer { peer.stop() }
        try onEachTransport {
            for size in [1, 125, 126, 65_535, 65_536, 300_000] {
                let result = try run(peer, connections: 2, duration: 1) { $0.size = size }
                assertNoErrors(result)
                XCTAssertGreaterThan(result.requests, 0, "size \(size)")
            }
        }
    }

    func testOpenLoopEchoKeepsTheRate() throws {
        let peer = try WebSocketPeer("echo")
        defer { peer.stop() }
        try onEachTransport {
            let result = try run(peer, duration: 1) { $0.rate = 400 }
            assertNoErrors(result)
            // 400 per second for 1 s: the schedule's count, whatever the server's pace.
            XCTAssertEqual(Double(result.requests), 400, accuracy: 40)
            XCTAssertNotNil(result.serviceTimeUs)
        }
    }

    func testHeartbeatsMeasurePongs() throws {
        // The websockets server answers pings itself: 8 connections, a ping each every 50 ms.
        let peer = try WebSocketPeer("echo")
        defer { peer.stop() }
        try onEachTransport {
            let result = try run(peer, connections: 8, duration: 1) { $0.ws.workload = .heartbeat(interval: 0.05) }
            assertNoErrors(result)
            XCTAssertEqual(Double(result.requests), 8 / 0.05, accuracy: 30)
            XCTAssertGreaterThan(result.latencyUs.p50, 0)
        }
    }

    func testSecureWebSocket() throws {
        let peer = try WebSocketPeer("echo", tls: true)
        defer { peer.stop() }
        let result = try run(peer, connections: 2) { config in
            config.tls.enabled = true
            config.tls.caFile = TestCertificates.path("ca.pem")
            config.tls.serverName = "localhost"
            config.size = 5000
        }
        // The server speaks only TLS: round trips prove the wss:// path.
        assertNoErrors(result)
        XCTAssertGreaterThan(result.requests, 10)
    }

    /// The shared machinery through the command line: two processes with one start time, each writing JSON and
    /// an HdrHistogram log and judged by a threshold, then merged.
    func testCommandLineStartAtOutputsThresholdsAndMerge() throws {
        let peer = try WebSocketPeer("echo")
        defer { peer.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let startAt = Int((Date().timeIntervalSince1970 + 3).rounded(.up))
        let clients = try ["a", "b"].map { id in
            try ChildProcess(ChildProcess.product("loadtest"), [
                "ws", "--url", "ws://127.0.0.1:\(peer.port)/", "-c", "2", "-l", "1", "-d", "0.5", "--warmup", "0.2",
                "--start-at", "\(startAt)", "--id", id, "--json", directory.appendingPathComponent("\(id).json").path,
                "--hdr-log", directory.appendingPathComponent("\(id).hlog").path, "--threshold", "errors==0", "-q",
            ])
        }
        for client in clients {
            XCTAssertEqual(client.wait(seconds: 60), 0, client.standardOutput + client.standardError)
        }
        let parts = try ["a", "b"].map { try RunResult.decode(Data(contentsOf: directory.appendingPathComponent("\($0).json"))) }
        for part in parts {
            XCTAssertEqual(part.mode, "ws")
            XCTAssertEqual(part.webSocket?.workload, "echo")
            XCTAssertGreaterThan(part.requests, 0)
            XCTAssertEqual(part.startAt, Double(startAt))
        }
        let log = try String(contentsOf: directory.appendingPathComponent("a.hlog"), encoding: .utf8)
        XCTAssertTrue(log.contains("#[loadtest ws 127.0.0.1:\(peer.port)"), log)
        let merged = directory.appendingPathComponent("merged.json").path
        let run = try ChildProcess.run(ChildProcess.product("loadtest"),
                                       ["merge", directory.appendingPathComponent("a.json").path,
                                        directory.appendingPathComponent("b.json").path, "--json", merged, "-q"])
        XCTAssertEqual(run.status, 0, run.error)
        let sum = try RunResult.decode(Data(contentsOf: URL(fileURLWithPath: merged)))
        XCTAssertEqual(sum.requests, parts.map(\.requests).reduce(0, +))
        XCTAssertEqual(sum.webSocket?.workload, "echo")
        XCTAssertEqual(sum.id, "a,b")
    }
}
