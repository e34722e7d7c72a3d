// CocoaAsyncSocket's test server (Tests/Shared/Swift/TestServer.swift): a listening GCDAsyncSocket that makes
// connected pairs of `TestSocket`s, plain or over TLS. It calls CocoaAsyncSocket as the original does, except
// for the server's identity: Linux has no `SecPKCS12Import`, so the same kind of PKCS#12 file (password
// "test") is opened with `TLSIdentity(pkcs12:password:)`, which `SecIdentity` names here. It listens on
// localhost and port 0 (the OS picks a free port) where the original listens on every interface on a random
// port.

import CocoaAsyncSocket
import XCTest

class TestServer: NSObject {
    /// The server's identity, from Fixtures/SecureSocketServer.p12: a self-signed certificate for
    /// "SecureSocketServer" and its key. Nil, with the reason recorded as a failure of the running test, if the
    /// file cannot be opened (so that only the TLS tests fail, not the whole run).
    static var identity: SecIdentity? = {
        do {
            let p12 = try Data(contentsOf: credentialsFileURL)
            return try TLSIdentity(pkcs12: p12, password: "test")
        } catch {
            XCTFail("Error in p12 import: \(error)")
            return nil
        }
    }()

    private static var credentialsFileURL: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()
            .appendingPathComponent("Fixtures/SecureSocketServer.p12")
    }

    typealias Callback = TestSocket.Callback

    var onAccept: Callback = nil
    var onDisconnect: Callback = nil

    private(set) var port: UInt16 = 0
    let queue = DispatchQueue(label: "com.asyncSocket.TestServerDelegate")
    let socket: GCDAsyncSocket

    var lastAcceptedSocket: TestSocket? = nil

    override init() {
        socket = GCDAsyncSocket()
        super.init()
        socket.delegate = self
        socket.delegateQueue = queue
    }

    func accept() {
        do {
            try socket.accept(onInterface: "localhost", port: port)
            port = socket.localPort
        } catch {
            fatalError("Failed to accept on port \(port): \(error)")
        }
    }

    /// Disconnects (a listening socket is not `isConnected`, so this only waits for the queue) and waits.
    func close() {
        let disconnected = XCTestExpectation(description: "Server disconnected")
        queue.async {
            guard self.socket.isConnected else {
                disconnected.fulfill()
                return
            }
            self.onDisconnect = { disconnected.fulfill() }
            self.socket.disconnect()
        }
        XCTWaiter(delegate: TestSocket.waiterDelegate).wait(for: [disconnected], timeout: TestSocket.waiterTimeout)
    }
}

// MARK: GCDAsyncSocketDelegate

extension TestServer: GCDAsyncSocketDelegate {
    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        lastAcceptedSocket = TestSocket(socket: newSocket)
        onAccept?()
        onAccept = nil
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        onDisconnect?()
        onDisconnect = nil
    }
}

// MARK: Pairs

extension TestServer {
    /// Listens, connects a new client, and waits for both `didAcceptNewSocket` and the client's
    /// `didConnectToHost`.
    func createPair() -> (client: TestSocket, accepted: TestSocket) {
        let connected = XCTestExpectation(description: "Pair connected")
        connected.expectedFulfillmentCount = 2

        let client = TestSocket()
        onAccept = { connected.fulfill() }
        client.onConnect = { connected.fulfill() }

        accept()
        client.connect(on: port)
        XCTWaiter(delegate: TestSocket.waiterDelegate).wait(for: [connected], timeout: TestSocket.waiterTimeout)

        guard let accepted = lastAcceptedSocket else {
            fatalError("No socket connected on \(port)")
        }
        return (client, accepted)
    }

    /// A pair from ``createPair()``, then TLS on both ends, waiting for both `socketDidSecure`s.
    func createSecurePair() -> (client: TestSocket, accepted: TestSocket) {
        let (client, accepted) = createPair()

        let secured = XCTestExpectation(description: "Socket did secure")
        secured.expectedFulfillmentCount = 2
        accepted.startTLS(as: .server) { secured.fulfill() }
        client.startTLS(as: .client) { secured.fulfill() }
        XCTWaiter(delegate: TestSocket.waiterDelegate).wait(for: [secured], timeout: TestSocket.waiterTimeout)

        return (client, accepted)
    }
}
