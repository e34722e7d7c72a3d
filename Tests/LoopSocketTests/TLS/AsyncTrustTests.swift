import Foundation
import Synchronization
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// The `async` form of the manual trust callback, `socket(_:didReceive:) async -> Bool`, which Swift imports
/// on Apple platforms beside the completion-handler form: a delegate that implements only it is asked, in a
/// real handshake over loopback, and its answer decides.
final class AsyncTrustTests: TLSTestCase {
    /// A client delegate with only the `async` trust form (and what the test waits on).
    final class AsyncOnlyTrustDelegate: GCDAsyncSocketDelegate, Sendable {
        let answer: Bool
        let asked = Mutex<[String?]>([])
        let secured: XCTestExpectation
        let read: XCTestExpectation
        let disconnected: XCTestExpectation
        let disconnectError = Mutex<(any Error)?>(nil)

        init(answer: Bool, secured: XCTestExpectation, read: XCTestExpectation, disconnected: XCTestExpectation) {
            self.answer = answer
            self.secured = secured
            self.read = read
            self.disconnected = disconnected
        }

        func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust) async -> Bool {
            asked.withLock { $0.append(trust.hostName) }
            return answer && trust.certificates.first?.subject.contains("CN=localhost") == true
        }

        func socketDidSecure(_ sock: GCDAsyncSocket) { secured.fulfill() }

        func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
            if data == Data("ping".utf8) { read.fulfill() }
        }

        func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {
            let box = UncheckedSendable(err)
            disconnectError.withLock { $0 = box.value }
            disconnected.fulfill()
        }
    }

    private func handshake(answer: Bool) throws -> (AsyncOnlyTrustDelegate, GCDAsyncSocket, server: GCDAsyncSocket) {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let secured = expectation(description: "socketDidSecure")
        let read = expectation(description: "the echo over TLS")
        let disconnected = expectation(description: "socketDidDisconnect")
        if !answer {
            secured.isInverted = true
            read.isInverted = true
        }
        let delegate = AsyncOnlyTrustDelegate(answer: answer, secured: secured, read: read, disconnected: disconnected)
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        // The settings dictionary a GCDAsyncSocket user writes: trust is the delegate's decision.
        client.startTLS([GCDAsyncSocketManuallyEvaluateTrust: true, kCFStreamSSLPeerName: "localhost"])
        client.write(Data("ping".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 4, withTimeout: testTimeout, tag: 0)
        return (delegate, client, server)
    }

    func testTheAsyncFormIsAskedAndItsYesSecuresTheConnection() throws {
        let (delegate, client, server) = try handshake(answer: true)
        defer { server.disconnect() }
        wait(for: [delegate.secured, delegate.read], timeout: testTimeout)
        XCTAssertEqual(delegate.asked.withLock { $0 }, ["localhost"])
        XCTAssertTrue(client.isSecure)
        client.disconnect()
        wait(for: [delegate.disconnected], timeout: testTimeout)
    }

    func testTheAsyncFormsNoEndsTheHandshake() throws {
        let (delegate, _, server) = try handshake(answer: false)
        defer { server.disconnect() }
        wait(for: [delegate.disconnected], timeout: testTimeout)
        // Inverted: fulfilled by now only if the connection had secured or echoed, which it must not.
        wait(for: [delegate.secured, delegate.read], timeout: 0)
        XCTAssertEqual(delegate.asked.withLock { $0 }, ["localhost"])
        let error = delegate.disconnectError.withLock { $0 }
        XCTAssertNotNil(error?.tlsError, "\(String(describing: error))")
    }
}
