import EpollLoop
import FoundationEssentials
import Glibc
@testable import LoopSocket
import SharedTestSupport
import Synchronization
import XCTest

/// Errors a listener reported, from any thread.
final class ErrorLog: Sendable {
    private let errors = Mutex<[any Error]>([])
    func append(_ error: any Error) { errors.withLock { $0.append(error) } }
    var all: [any Error] { errors.withLock { $0 } }
}

/// TLS through the async API: connect(..., tls:), startTLS on an open connection, TLS listeners.
final class AsyncSocketTLSTests: XCTestCase {
    var group: EventLoopGroup!

    override func setUpWithError() throws {
        group = try EventLoopGroup(numberOfLoops: 2, name: "async-tls")
    }

    override func tearDownWithError() throws {
        try group.shutdownGracefully(timeout: .seconds(10))
    }

    static func serverTLS() throws -> TLSConfiguration {
        .server(identity: try TLSTestCase.identity())
    }

    /// An echo server whose listener hands out secured connections; failures go to `failures`.
    private func startEchoServer(
        _ tls: TLSConfiguration, failures: ErrorLog? = nil
    ) throws -> (AsyncListener, Task<Void, any Error>) {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, tls: tls, group: group) { error in
            failures?.append(error)
        }
        let server = Task {
            try await withThrowingDiscardingTaskGroup { tasks in
                for try await connection in listener.connections {
                    XCTAssertNotNil(connection.tlsInfo, "handed out only after the handshake")
                    tasks.addTask(executorPreference: connection.eventLoop) {
                        try? await connection.executeThenClose { connection in
                            while let chunk = try await connection.read() { try await connection.write(chunk) }
                        }
                    }
                }
            }
        }
        return (listener, server)
    }

    func testConnectWithTLSAndEchoThroughATLSListener() async throws {
        let (listener, server) = try startEchoServer(try Self.serverTLS())
        defer { listener.close(); server.cancel() }
        let port = listener.localPort
        let group = self.group!
        try await withDeadline {
            let client = try await AsyncSocket.connect(
                host: "localhost", port: port, timeout: .seconds(5), tls: TLSTestCase.client(), group: group)
            XCTAssertEqual(client.tlsInfo?.version, .v1_3)
            let payload = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            try await client.write(payload)
            let echoed = try await client.read(toLength: payload.count)
            XCTAssertEqual(echoed, payload)
            try await client.closeWrite()
            let end = try await client.read()
            XCTAssertNil(end, "the server closes after our close_notify and end of stream")
            await client.close()
        }
    }

    func testFailedHandshakeThrowsAndTheListenerHearsOfIt() async throws {
        let failures = ErrorLog()
        let (listener, server) = try startEchoServer(try Self.serverTLS(), failures: failures)
        defer { listener.close(); server.cancel() }
        let port = listener.localPort
        let group = self.group!
        let error = try await withDeadline { () -> TLSError? in
            do {
                _ = try await AsyncSocket.connect(
                    host: "127.0.0.1", port: port, tls: TLSTestCase.client { $0.serverName = "wrong.test" }, group: group)
                return nil
            } catch {
                return error as? TLSError
            }
        }
        XCTAssertEqual(error?.code, .certificateVerificationFailed)
        XCTAssertEqual(error?.verificationFailure, "hostname mismatch")
        // The server side ends too (our client's alert), and is reported, not handed out.
        try await withDeadline {
            while failures.all.isEmpty { await Task.yield() }
        }
    }

    /// A client that connects and never speaks stalls only itself: the listener goes on handing out others.
    func testStalledHandshakeDoesNotDelayOthers() async throws {
        var tls = try Self.serverTLS()
        tls.handshakeTimeout = .milliseconds(300)
        let failures = ErrorLog()
        let (listener, server) = try startEchoServer(tls, failures: failures)
        defer { listener.close(); server.cancel() }
        let port = listener.localPort
        let group = self.group!
        let silent = try await AsyncSocket.connect(host: "127.0.0.1", port: port, group: group)
        try await withDeadline {
            let client = try await AsyncSocket.connect(host: "127.0.0.1", port: port, tls: TLSTestCase.client(), group: group)
            try await client.write(Data("ok".utf8))
            let echoed = try await client.read(toLength: 2)
            XCTAssertEqual(echoed, Data("ok".utf8))
            await client.close()
            // The silent one is dropped by the handshake timeout.
            let end = try await silent.read()
            XCTAssertNil(end)
            // Reported on the server's loop as it closes: maybe just after the client saw the end.
            while failures.all.isEmpty { await Task.yield() }
        }
        let codes = failures.all.compactMap { ($0 as? TLSError)?.code }
        XCTAssertEqual(codes, [.handshakeTimeout])
    }

    /// STARTTLS: a plaintext exchange, then TLS on the same connection.
    func testStartTLSOnAnOpenConnection() async throws {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        defer { listener.close() }
        let serverTLS = try Self.serverTLS()
        let server = Task {
            for try await connection in listener.connections {
                let line = try await connection.read(upTo: Data("\n".utf8))
                XCTAssertEqual(line, Data("STARTTLS\n".utf8))
                try await connection.write(Data("GO\n".utf8))
                try await connection.startTLS(serverTLS)
                let secret = try await connection.read(toLength: 6)
                try await connection.write(secret)
                await connection.close()
                return
            }
        }
        let port = listener.localPort
        let group = self.group!
        try await withDeadline {
            let client = try await AsyncSocket.connect(host: "127.0.0.1", port: port, group: group)
            try await client.write(Data("STARTTLS\n".utf8))
            let go = try await client.read(upTo: Data("\n".utf8))
            XCTAssertEqual(go, Data("GO\n".utf8))
            XCTAssertNil(client.tlsInfo)
            try await client.startTLS(TLSTestCase.client())
            XCTAssertNotNil(client.tlsInfo)
            do {
                try await client.startTLS(TLSTestCase.client())
                XCTFail("a second startTLS is refused")
            } catch let error as TLSError {
                XCTAssertEqual(error.code, .badConfiguration)
            }
            try await client.write(Data("secret".utf8))
            let echoed = try await client.read(toLength: 6)
            XCTAssertEqual(echoed, Data("secret".utf8))
            await client.close()
            try await server.value
        }
    }

    func testCancellingAHandshakeClosesTheConnection() async throws {
        // A server that accepts and never answers the ClientHello.
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        defer { listener.close() }
        let held = Task { () -> AsyncSocket? in
            for try await connection in listener.connections { return connection }
            return nil
        }
        let port = listener.localPort
        let group = self.group!
        let client = try await AsyncSocket.connect(host: "127.0.0.1", port: port, group: group)
        let handshake = Task { try await client.startTLS(TLSTestCase.client()) }
        let serverSide = try await withDeadline { try await held.value }
        handshake.cancel()
        let outcome = await handshake.result
        XCTAssertThrowsError(try outcome.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        // The server sees the connection end.
        let end = try await withDeadline { () -> Data? in
            _ = try await serverSide?.read()  // the ClientHello
            return try await serverSide?.read()
        }
        XCTAssertNil(end)
    }

    func testAClientConfigurationCannotListen() {
        XCTAssertThrowsError(try AsyncListener(host: "127.0.0.1", port: 0, tls: TLSTestCase.client(), group: group)) {
            XCTAssertEqual(($0 as? TLSError)?.code, .badConfiguration)
        }
    }
}
