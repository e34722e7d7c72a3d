import EpollLoop
import FoundationEssentials
@testable import LoopSocket
import Synchronization
import XCTest

/// What the engine counts into its loop's ``SocketCounts`` (read through `LoopMetrics.sockets`), and what it
/// reports to ``LoopDiagnostics``: exact figures for a known exchange, on a group of its own.
final class SocketCountsTests: XCTestCase {
    var group: EventLoopGroup!

    override func setUpWithError() throws {
        group = try EventLoopGroup(numberOfLoops: 2, name: "counts")
    }

    override func tearDownWithError() throws {
        LoopDiagnostics.handler = LoopDiagnostics.standardError
        try group.shutdownGracefully(timeout: .seconds(10))
    }


    /// One connection, 1,000 bytes echoed: accepted and connected once, both ends open while it lasts,
    /// every byte counted once each way, and the gauge back at zero once both ends closed.
    func testStreamConnectionIsCountedOnceAndItsBytesExactly() async throws {
        let group = self.group!
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        defer { listener.close() }
        let port = listener.localPort
        let before = group.metrics.sockets
        try await withDeadline {
            async let accepted: AsyncSocket? = {
                var connections = listener.connections.makeAsyncIterator()
                return try await connections.next()
            }()
            let client = try await AsyncSocket.connect(host: "127.0.0.1", port: port, loop: group.loops[1])
            guard let server = try await accepted else { return XCTFail("no connection accepted") }
            let payload = Data(repeating: 7, count: 1_000)
            try await client.write(payload)
            let echoed = Task(executorPreference: server.eventLoop) {
                let chunk = try await server.read(toLength: 1_000)
                try await server.write(chunk)
            }
            try await echoed.value
            _ = try await client.read(toLength: 1_000)

            let open = group.metrics.sockets.since(before)
            XCTAssertEqual(open.stream.accepted, 1)
            XCTAssertEqual(open.stream.started, 1)
            XCTAssertEqual(open.stream.open, 2, "both ends are open")
            XCTAssertEqual(open.stream.bytesSent, 2_000, "1,000 bytes each way")
            XCTAssertEqual(open.stream.bytesReceived, 2_000)

            await client.close()
            await server.close()
            let closed = group.metrics.sockets.since(before)
            XCTAssertEqual(closed.stream.open, 0)
            XCTAssertEqual(closed.stream.accepted, 1, "closing counts no new connection")
        }
    }

    /// A completed TLS handshake counts on both ends; one the client refuses (it does not trust the server's
    /// certificate) counts as a failure on both, and each end reports it to LoopDiagnostics.
    func testTLSHandshakesAndFailuresAreCountedAndReported() async throws {
        let reports = Mutex<[LoopDiagnostic]>([])
        LoopDiagnostics.handler = { diagnostic in reports.withLock { $0.append(diagnostic) } }
        let group = self.group!
        // The listener hears of a handshake that failed on its side (after the engine counted it).
        let (serverFailures, serverFailed) = AsyncStream<Void>.makeStream()
        let listener = try AsyncListener(
            host: "127.0.0.1", port: 0, tls: .server(identity: try TLSTestCase.identity()), group: group) { _ in
            serverFailed.yield()
        }
        defer { listener.close() }
        let port = listener.localPort
        let serving = Task {
            for try await connection in listener.connections { await connection.close() }
        }
        defer { serving.cancel() }
        let before = group.metrics.sockets
        try await withDeadline {
            let trusted = try await AsyncSocket.connect(
                host: "127.0.0.1", port: port, tls: TLSTestCase.client(), loop: group.loops[1])
            await trusted.close()
            let untrusting = TLSConfiguration.client(serverName: "localhost")
            do {
                let refused = try await AsyncSocket.connect(host: "127.0.0.1", port: port, tls: untrusting, loop: group.loops[1])
                await refused.close()
                XCTFail("the client trusted a certificate from an unknown CA")
            } catch let error as TLSError {
                XCTAssertEqual(error.code, .certificateVerificationFailed)
            }
            // The server fails when it reads the client's alert.
            for await _ in serverFailures { break }
        }
        let window = group.metrics.sockets.since(before)
        XCTAssertEqual(window.tlsHandshakes, 2, "client and server of the trusted connection")
        XCTAssertEqual(window.tlsHandshakeFailures, 2, "client and server of the refused one")
        let tls = reports.withLock { $0 }.filter { $0.category == .tlsHandshakeFailure }
        XCTAssertEqual(tls.count, 2, "\(tls)")
        XCTAssertTrue(tls.allSatisfy { $0.loop.hasPrefix("counts") && $0.message.contains("TLS handshake failed") }, "\(tls)")
    }

    /// Three datagrams of 10, 20 and 30 bytes: three sent and three received, 60 bytes each way, and one
    /// UDP descriptor per socket open until it closes.
    func testDatagramsAreCountedWithTheirBytes() async throws {
        let group = self.group!
        let before = group.metrics.sockets
        try await withDeadline {
            let receiver = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: group.loops[0])
            let sender = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: group.loops[1])
            for size in [10, 20, 30] {
                try await sender.send(Data(repeating: 1, count: size), toHost: "127.0.0.1", port: receiver.localPort)
            }
            var sizes: [Int] = []
            for _ in 0..<3 {
                guard let datagram = try await receiver.receive() else { return XCTFail("receiver closed") }
                sizes.append(datagram.data.count)
            }
            XCTAssertEqual(sizes, [10, 20, 30])
            let window = group.metrics.sockets.since(before)
            XCTAssertEqual(window.datagram.datagramsSent, 3)
            XCTAssertEqual(window.datagram.bytesSent, 60)
            XCTAssertEqual(window.datagram.datagramsReceived, 3)
            XCTAssertEqual(window.datagram.bytesReceived, 60)
            XCTAssertEqual(window.datagram.open, 2)
            await sender.close()
            await receiver.close()
            XCTAssertEqual(group.metrics.sockets.datagram.open, 0)
        }
    }
}
