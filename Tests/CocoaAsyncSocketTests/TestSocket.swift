// CocoaAsyncSocket's test wrapper (Tests/Shared/Swift/TestSocket.swift): one end of a connection with a
// synchronous face for tests, each step waiting (bounded) for its delegate callback. It calls CocoaAsyncSocket
// as the original does; the TLS settings name a `SecIdentity`, which is `TLSIdentity` here.

import CocoaAsyncSocket
import XCTest

class TestSocket: NSObject {
    /// Which end of the connection this is.
    enum Role {
        case server, client
    }

    /// Receives the waits' failures (the running test case).
    static var waiterDelegate: XCTWaiterDelegate? = nil
    static let waiterTimeout: TimeInterval = 5.0

    lazy var queue: DispatchQueue = { [unowned self] in
        DispatchQueue(label: "com.asyncSocket.\(self)")
    }()

    let socket: GCDAsyncSocket

    typealias Callback = Optional<() -> Void>

    var onConnect: Callback = nil
    var onSecure: Callback = nil
    var onRead: Callback = nil
    var onWrite: Callback = nil
    var onDisconnect: Callback = nil

    var bytesRead = 0
    var bytesWritten = 0

    override convenience init() {
        self.init(socket: GCDAsyncSocket())
    }

    init(socket: GCDAsyncSocket) {
        self.socket = socket
        super.init()
        self.socket.delegate = self
        self.socket.delegateQueue = queue
    }

    /// Disconnects and waits for `socketDidDisconnect`.
    func close() {
        let disconnected = XCTestExpectation(description: "Disconnected")
        queue.async {
            guard self.socket.isConnected else {
                disconnected.fulfill()
                return
            }
            self.onDisconnect = { disconnected.fulfill() }
            self.socket.disconnect()
        }
        wait(for: disconnected)
    }

    /// Waits for `expectation` with the shared timeout, failures going to ``waiterDelegate``.
    func wait(for expectation: XCTestExpectation) {
        let waiter = XCTWaiter(delegate: TestSocket.waiterDelegate)
        waiter.wait(for: [expectation], timeout: TestSocket.waiterTimeout)
    }
}

// MARK: Synchronous steps

extension TestSocket {
    /// Connects to `port` on localhost (without waiting: see `TestServer.createPair()`).
    func connect(on port: UInt16) {
        do {
            try socket.connect(toHost: "localhost", onPort: port)
        } catch {
            XCTFail("Failed to connect on \(port): \(error)")
        }
    }

    /// Reads exactly `length` bytes, with a 0.1 s read timeout, and waits for `didRead`.
    func read(bytes length: UInt) {
        let didRead = XCTestExpectation(description: "Read data")
        onRead = { didRead.fulfill() }
        socket.readData(toLength: length, withTimeout: 0.1, tag: 1)
        wait(for: didRead)
    }

    /// Writes `length` zero bytes, with a 0.1 s write timeout, and waits for `didWriteDataWithTag`.
    func write(bytes length: Int) {
        let didWrite = XCTestExpectation(description: "Wrote data")
        onWrite = { didWrite.fulfill() }
        socket.write(Data(repeating: 0, count: length), withTimeout: 0.1, tag: 1)
        wait(for: didWrite)
        bytesWritten += length
    }

    /// Starts TLS as `role`; `callback` runs on `socketDidSecure`. The server presents `TestServer.identity`;
    /// the client evaluates trust itself and trusts anything.
    func startTLS(as role: Role, callback: Callback? = nil) {
        if let callback {
            onSecure = callback
        }
        let settings: [String: NSObject]
        switch role {
        case .server:
            settings = [
                kCFStreamSSLPeerName as String: NSString(string: "SecureSocketServer"),
                kCFStreamSSLIsServer as String: NSNumber(value: true),
                kCFStreamSSLCertificates as String: NSArray(array: TestServer.identity.map { [$0] } ?? []),
            ]
        case .client:
            settings = [
                GCDAsyncSocketManuallyEvaluateTrust: NSNumber(value: true)
            ]
        }
        socket.startTLS(settings)
    }
}

// MARK: GCDAsyncSocketDelegate

extension TestSocket: GCDAsyncSocketDelegate {
    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        onConnect?()
    }

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        onSecure?()
    }

    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) {
        onWrite?()
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        bytesRead += data.count
        onRead?()
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        onDisconnect?()
    }

    func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust, completionHandler: @escaping (Bool) -> Void) {
        completionHandler(true)  // A test: any chain will do.
    }
}
