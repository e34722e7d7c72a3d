// Written the way a CocoaAsyncSocket user writes Swift against GCDAsyncSocket's imported header. In a
// CocoaAsyncSocket project the only difference is the import: `import CocoaAsyncSocket` there.
import Foundation
import LoopSocket
import XCTest

// MARK: - An echo server, as in CocoaAsyncSocket's examples

private final class EchoServer: NSObject, GCDAsyncSocketDelegate {
    private let delegateQueue = DispatchQueue(label: "EchoServer.delegateQueue")
    private var listenSocket: GCDAsyncSocket!
    private var connectedSockets: [GCDAsyncSocket] = []
    let allDisconnected: XCTestExpectation

    init(allDisconnected: XCTestExpectation) {
        self.allDisconnected = allDisconnected
        super.init()
        listenSocket = GCDAsyncSocket(delegate: self, delegateQueue: delegateQueue)
    }

    func start() throws -> UInt16 {
        try listenSocket.accept(onInterface: "127.0.0.1", port: 0)
        return listenSocket.localPort
    }

    func stop() {
        delegateQueue.sync {
            listenSocket.disconnect()
            for sock in connectedSockets { sock.disconnect() }
        }
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        connectedSockets.append(newSocket)
        newSocket.readData(to: GCDAsyncSocket.crlfData(), withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        sock.write(data, withTimeout: -1, tag: 0)
        sock.readData(to: GCDAsyncSocket.crlfData(), withTimeout: -1, tag: 0)
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        if sock === listenSocket {
            allDisconnected.fulfill()
            return
        }
        connectedSockets.removeAll { $0 === sock }
    }
}

// MARK: - A line client

private final class LineClient: NSObject, GCDAsyncSocketDelegate {
    private let delegateQueue = DispatchQueue(label: "LineClient.delegateQueue")
    private(set) var socket: GCDAsyncSocket!
    private(set) var lines: [String] = []
    private(set) var connectedHost: String?
    private(set) var connectedPort: UInt16 = 0
    private(set) var writtenTags: [Int] = []
    private(set) var disconnectError: Error?
    var connected: XCTestExpectation?
    var gotLines: XCTestExpectation?
    var expectedLines = 0
    var disconnected: XCTestExpectation?

    override init() {
        super.init()
        socket = GCDAsyncSocket(delegate: self, delegateQueue: delegateQueue)
    }

    func connect(port: UInt16) throws {
        try socket.connect(toHost: "127.0.0.1", onPort: port, withTimeout: 10)
    }

    func send(_ line: String, tag: Int) {
        socket.write(line.data(using: .utf8)!, withTimeout: 10, tag: tag)
        socket.readData(to: GCDAsyncSocket.crlfData(), withTimeout: 10, tag: tag)
    }

    func results<T>(_ body: (LineClient) -> T) -> T { delegateQueue.sync { body(self) } }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        connectedHost = host
        connectedPort = port
        connected?.fulfill()
    }

    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) {
        writtenTags.append(tag)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        lines.append(String(data: data, encoding: .utf8) ?? "")
        if lines.count == expectedLines { gotLines?.fulfill() }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        disconnectError = err
        disconnected?.fulfill()
    }
}

// MARK: - Tests

final class CompatibilityTests: SocketTestCase {
    func testEchoServerAndClient() throws {
        let serverStopped = expectation(description: "server stopped")
        let server = EchoServer(allDisconnected: serverStopped)
        let port = try server.start()

        let client = LineClient()
        client.connected = expectation(description: "connected")
        try client.connect(port: port)
        wait(for: [client.connected!], timeout: 10)
        XCTAssertTrue(client.socket.isConnected)
        XCTAssertEqual(client.results { $0.connectedHost }, "127.0.0.1")
        XCTAssertEqual(client.results { $0.connectedPort }, port)
        XCTAssertEqual(client.socket.connectedPort, port)
        XCTAssertEqual(client.socket.localHost, "127.0.0.1")

        client.gotLines = expectation(description: "echoed lines")
        client.expectedLines = 3
        client.send("HELLO\r\n", tag: 1)
        client.send("WORLD\r\n", tag: 2)
        client.send("BYE\r\n", tag: 3)
        wait(for: [client.gotLines!], timeout: 10)
        XCTAssertEqual(client.results { $0.lines }, ["HELLO\r\n", "WORLD\r\n", "BYE\r\n"])
        XCTAssertEqual(client.results { $0.writtenTags }, [1, 2, 3])

        client.disconnected = expectation(description: "client disconnected")
        client.socket.disconnect()
        wait(for: [client.disconnected!], timeout: 10)
        XCTAssertNil(client.results { $0.disconnectError }, "a disconnect you asked for has no error")
        XCTAssertTrue(client.socket.isDisconnected)

        server.stop()
        wait(for: [serverStopped], timeout: 10)
    }

    func testErrorsMatchTheImportedEnum() throws {
        let sock = GCDAsyncSocket()
        do {
            try sock.connect(toHost: "", onPort: 80)
            XCTFail("an empty host must throw")
        } catch GCDAsyncSocketError.badParamError {
            // As with CocoaAsyncSocket's NS_ERROR_ENUM.
        } catch {
            XCTFail("unexpected \(error)")
        }

        let listener = GCDAsyncSocket()
        try listener.accept(onInterface: "127.0.0.1", port: 0)
        defer { listener.disconnect() }
        do {
            try listener.accept(onInterface: "127.0.0.1", port: 0)
            XCTFail("accepting twice must throw")
        } catch let error as GCDAsyncSocketError where error.code == .badConfigError {
            XCTAssertFalse(error.localizedDescription.isEmpty)
        }

        let error: Error = GCDAsyncSocketError(.closedError, "Socket closed by remote peer")
        XCTAssertEqual(error.localizedDescription, "Socket closed by remote peer")
        let nsError = error as NSError
        XCTAssertEqual(nsError.domain, GCDAsyncSocketErrorDomain)
        XCTAssertEqual(nsError.code, GCDAsyncSocketError.Code.closedError.rawValue)
        XCTAssertEqual(GCDAsyncSocketError.Code.closedError.rawValue, 7, "the raw values of GCDAsyncSocket's enum")
        XCTAssertEqual(GCDAsyncSocketError.Code.readTimeoutError.rawValue, 4)
        if let err = error as? GCDAsyncSocketError, err.code == .closedError {
            // The usual check in socketDidDisconnect(_:withError:).
        } else {
            XCTFail("the cast and the code must match")
        }
    }

    func testPropertyStyleConfigurationAndTimeouts() throws {
        final class TimeoutDelegate: NSObject, GCDAsyncSocketDelegate {
            let disconnected: XCTestExpectation
            var asked: [(Int, TimeInterval)] = []
            var error: Error?
            init(_ disconnected: XCTestExpectation) { self.disconnected = disconnected }
            func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
                sock.readData(toLength: 4, withTimeout: 0.05, tag: 42)
            }
            func socket(_ sock: GCDAsyncSocket, shouldTimeoutReadWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval {
                asked.append((tag, elapsed))
                return asked.count < 2 ? 0.05 : 0
            }
            func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
                error = err
                disconnected.fulfill()
            }
        }
        let queue = DispatchQueue(label: "timeouts")
        let listener = GCDAsyncSocket()
        try listener.accept(onInterface: "127.0.0.1", port: 0)
        defer { listener.disconnect() }

        let delegate = TimeoutDelegate(expectation(description: "timed out"))
        let sock = GCDAsyncSocket()
        sock.delegate = delegate
        sock.delegateQueue = queue
        sock.userData = ["session": 1]
        sock.isIPv6Enabled = false
        try sock.connect(toHost: "localhost", onPort: listener.localPort, viaInterface: nil, withTimeout: 10)
        wait(for: [delegate.disconnected], timeout: 10)
        queue.sync {
            XCTAssertEqual(delegate.asked.map(\.0), [42, 42])
            XCTAssertEqual(delegate.asked.map(\.1), [0.05, 0.1])
            XCTAssertEqual((delegate.error as? GCDAsyncSocketError)?.code, .readTimeoutError)
            XCTAssertEqual((delegate.error as NSError?)?.code, GCDAsyncSocketError.Code.readTimeoutError.rawValue)
        }
        XCTAssertEqual((sock.userData as? [String: Int])?["session"], 1)
    }

    func testUnixSocketsAndRawAddresses() throws {
        final class UrlDelegate: NSObject, GCDAsyncSocketDelegate {
            let connected: XCTestExpectation
            var url: URL?
            init(_ connected: XCTestExpectation) { self.connected = connected }
            func socket(_ sock: GCDAsyncSocket, didConnectTo url: URL) {
                self.url = url
                connected.fulfill()
            }
        }
        let directory = try makeTempDirectory()
        let url = URL(fileURLWithPath: directory.file("compat.sock"))
        let queue = DispatchQueue(label: "unix")
        let listener = GCDAsyncSocket(delegate: nil, delegateQueue: nil)
        try listener.accept(on: url)
        defer { listener.disconnect() }
        let delegate = UrlDelegate(expectation(description: "connected to url"))
        let sock = GCDAsyncSocket(delegate: delegate, delegateQueue: queue)
        try sock.connect(to: url, withTimeout: 10)
        wait(for: [delegate.connected], timeout: 10)
        XCTAssertEqual(queue.sync { delegate.url?.path }, url.path)
        XCTAssertEqual(sock.connectedUrl?.path, url.path)
        sock.disconnect()

        let tcp = GCDAsyncSocket()
        try tcp.accept(onInterface: "::1", port: 0)
        defer { tcp.disconnect() }
        let addresses: [Data] = try GCDAsyncSocket.lookupHost("::1", port: tcp.localPort)
        XCTAssertTrue(GCDAsyncSocket.isIPv6Address(addresses[0]))
        let quiet = RecordingDelegate("raw-address client")  // GCDAsyncSocket connects only with a delegate
        let client = GCDAsyncSocket(delegate: quiet, delegateQueue: nil)
        try client.connect(toAddress: addresses[0])
        XCTAssertEqual(GCDAsyncSocket.host(fromAddress: addresses[0]), "::1")
        XCTAssertEqual(GCDAsyncSocket.port(fromAddress: addresses[0]), tcp.localPort)
        client.disconnect()
    }
}
