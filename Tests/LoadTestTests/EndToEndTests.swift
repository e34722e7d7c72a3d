import EpollLoop
import FoundationEssentials
import LoopSocket
import XCTest
@testable import LoadTest

/// A server that accepts connections and never answers: every request times out.
final class SilentServer: GCDAsyncSocketDelegate, @unchecked Sendable {
    let group: EventLoopGroup
    let listener: GCDAsyncSocket
    var port: UInt16 { listener.localPort }

    init() throws {
        group = try EventLoopGroup(numberOfLoops: 1, name: "silent")
        listener = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: group.loops[0], group: group)
        listener.delegate = self
        try listener.accept(onInterface: "127.0.0.1", port: 0)
    }

    func stop() throws {
        listener.disconnect()
        try group.shutdownGracefully(timeout: .seconds(10))
    }
}

/// Short real runs on loopback against the in-process echo server (127.0.0.1, port 0). Every wait inside
/// the runner is bounded; the runs take well under a second each.
/// A keep-alive HTTP/1.1 server answering every request with `hello`; every `closeEvery`-th response on a
/// connection says `Connection: close` and closes it (0: never).
final class HelloServer: GCDAsyncSocketDelegate, @unchecked Sendable {
    static let headEnd = Data("\r\n\r\n".utf8)
    let group: EventLoopGroup
    let listener: GCDAsyncSocket
    let closeEvery: Int
    var port: UInt16 { listener.localPort }

    init(closeEvery: Int = 0) throws {
        self.closeEvery = closeEvery
        group = try EventLoopGroup(numberOfLoops: 1, name: "hello")
        listener = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: group.loops[0], group: group)
        listener.delegate = self
        try listener.accept(onInterface: "127.0.0.1", port: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        newSocket.readData(to: Self.headEnd, withTimeout: -1, tag: 1)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        if closeEvery > 0 && tag % closeEvery == 0 {
            sock.write(Data("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello".utf8), withTimeout: -1, tag: 0)
            sock.disconnectAfterWriting()
            return
        }
        sock.write(Data("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8), withTimeout: -1, tag: 0)
        sock.readData(to: Self.headEnd, withTimeout: -1, tag: tag + 1)
    }

    func stop() throws {
        listener.disconnect()
        try group.shutdownGracefully(timeout: .seconds(10))
    }
}

/// An echo server that flips one bit of every 50th chunk it echoes: loadtest must notice.
final class CorruptingEchoServer: GCDAsyncSocketDelegate, @unchecked Sendable {
    let group: EventLoopGroup
    let listener: GCDAsyncSocket
    private var chunks = 0  // touched only on the server's one loop
    var port: UInt16 { listener.localPort }

    init() throws {
        group = try EventLoopGroup(numberOfLoops: 1, name: "corrupt")
        listener = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: group.loops[0], group: group)
        listener.delegate = self
        try listener.accept(onInterface: "127.0.0.1", port: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        newSocket.readData(withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        var echo = data
        chunks += 1
        if chunks % 50 == 0 { echo[echo.startIndex + echo.count / 2] ^= 0x01 }
        sock.write(echo, withTimeout: -1, tag: 0)
        sock.readData(withTimeout: -1, tag: 0)
    }

    func stop() throws {
        listener.disconnect()
        try group.shutdownGracefully(timeout: .seconds(10))
    }
}

final class EndToEndTests: XCTestCase {
    private func run(_ mode: LoadMode, port: UInt16, _ adjust: (inout LoadConfig) -> Void = { _ in }) throws -> RunResult {
        try shortRun(mode, port: port, connections: 10, duration: 0.5, adjust)
    }

    func testClosedLoopEcho() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(.echo, port: server.port)
        XCTAssertGreaterThan(result.requests, 0)
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
        XCTAssertEqual(result.connectionsEstablished, 10)
        XCTAssertEqual(result.latencyUs.count, result.requests)
        XCTAssertGreaterThan(result.latencyUs.p50, 0)
        XCTAssertEqual(result.durationSeconds, 0.5, accuracy: 0.01)
        XCTAssertEqual(result.bytes, result.requests * 64)
        XCTAssertFalse(result.timeline.isEmpty)
    }

    func testPipelinedEchoOnTwoLoops() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(.echo, port: server.port) {
            $0.pipeline = 4
            $0.size = 1000
            $0.loops = 2
            $0.connections = 7
        }
        XCTAssertGreaterThan(result.requests, 0)
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
        XCTAssertEqual(result.connectionsEstablished, 7)
    }

    func testOpenLoopEchoKeepsTheRate() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(.echo, port: server.port) { $0.rate = 2000 }
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
        // 2,000/s for 0.5 s is about 1,000 requests (a closed loop would do tens of thousands); the bounds allow
        // for a busy machine delaying replies across the window's edges.
        XCTAssertGreaterThan(result.requests, 600)
        XCTAssertLessThan(result.requests, 1400)
        XCTAssertEqual(result.targetRate, 2000)
    }

    func testStreamAndChurnAndIdle() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let stream = try run(.stream, port: server.port) { $0.connections = 2 }
        XCTAssertGreaterThan(stream.bytes, 0)
        XCTAssertEqual(stream.errors.total, 0, "\(stream.errors)")
        let churn = try run(.connect, port: server.port) { $0.connections = 2 }
        XCTAssertGreaterThan(churn.requests, 0)
        XCTAssertEqual(churn.errors.total, 0, "\(churn.errors)")
        XCTAssertEqual(churn.latencyUs.count, churn.requests)
        XCTAssertLessThan(churn.latencyUs.max, 5_000_000, "a churn cycle is timed from its own connect")
        let idle = try run(.idle, port: server.port) { $0.connections = 20 }
        XCTAssertEqual(idle.connectionsEstablished, 20)
        XCTAssertEqual(idle.connectionsOpen, 20)
        XCTAssertEqual(idle.errors.total, 0, "\(idle.errors)")
    }

    func testHTTPKeepAliveAndReconnectOnClose() throws {
        let server = try HelloServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(.http, port: server.port) {
            $0.path = "/hello"
            $0.hostHeader = "127.0.0.1:\(server.port)"
            $0.pipeline = 2
        }
        XCTAssertGreaterThan(result.requests, 0)
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
        XCTAssertEqual(result.connectionsOpen, 10)

        let closing = try HelloServer(closeEvery: 5)
        defer { XCTAssertNoThrow(try closing.stop()) }
        let churned = try run(.http, port: closing.port) { $0.hostHeader = "127.0.0.1:\(closing.port)" }
        XCTAssertGreaterThan(churned.requests, 0)
        XCTAssertEqual(churned.errors.total, 0, "a server closing after a response is not an error: \(churned.errors)")
    }

    func testCorruptedEchoesAreCountedAsMismatches() throws {
        let server = try CorruptingEchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(.echo, port: server.port)
        XCTAssertGreaterThan(result.errors.byKind["mismatch"] ?? 0, 0, "\(result.errors)")
        XCTAssertEqual(result.errors.total, result.errors.byKind["mismatch"], "only mismatches: \(result.errors)")
        XCTAssertLessThan(result.connectionsOpen, 10, "a connection that delivered a corrupt echo is closed")
    }

    func testUnansweredRequestsTimeOut() throws {
        let server = try SilentServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try run(.echo, port: server.port) {
            $0.timeout = 0.2
            $0.connections = 3
            $0.duration = 1  // the sweep runs every 50 ms: ample margin on a busy machine
        }
        XCTAssertEqual(result.connectionsEstablished, 3)
        XCTAssertEqual(result.errors.byKind["timeout"], 3, "\(result.errors)")
        XCTAssertEqual(result.requests, 0)
        XCTAssertEqual(result.connectionsOpen, 0)
    }

    func testNothingListeningFailsFastWithTheReason() throws {
        // A port that was just released: nothing listens there. The run stops after the connect phase, long
        // before its 60 s would be over, and says why.
        let server = try EchoServer()
        let port = server.port
        try server.stop()
        for mode in [LoadMode.echo, .http, .connect] {
            XCTAssertThrowsError(try run(mode, port: port) { $0.duration = 60 }) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("no connection to 127.0.0.1:\(port) could be made"), text)
                XCTAssertTrue(text.contains("refused"), text)
            }
        }
    }
}
