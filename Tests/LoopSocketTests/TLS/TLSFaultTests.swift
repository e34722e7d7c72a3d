import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// TLS reads and writes go through the syscall seam like plaintext ones: injected failures there end a TLS
/// connection with the errno, and its queued writes fail.
final class TLSFaultTests: TLSTestCase {
    /// This test's injected failures, each on the test's own client descriptor.
    private var faults: FaultInjection.Scope!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let faults = FaultInjection.Scope()
        self.faults = faults
        addTeardown { faults.end() }
    }

    /// A secured client of a TLS echo server, and its descriptor.
    private func securedClient() throws -> (GCDAsyncSocket, RecordingDelegate, Int32) {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: server.localPort, Self.client())
        waitForSecure(delegate, client)
        var fd: Int32 = -1
        perform(client) { fd = client.socketFD() }
        return (client, delegate, fd)
    }

    func testSendFailureUnderTLSFailsTheWriteWithItsErrno() throws {
        let (client, delegate, fd) = try securedClient()
        faults.inject(.brokenPipe, into: .send, count: 1, on: .descriptor(fd))
        client.write(Data("doomed".utf8), withTimeout: -1, tag: 1)
        let error = try XCTUnwrap(delegate.waitForDisconnect(of: client) as? GCDAsyncSocketError)
        XCTAssertEqual(error.errno, .brokenPipe)
        XCTAssertEqual(error.syscall, .send)
        settle(client.eventLoop)
        XCTAssertTrue(delegate.events.contains { if case .failedWrite(1, _) = $0 { return true }; return false },
                      "\(delegate.events)")
        XCTAssertEqual(faults.pendingFailures, 0)
    }

    func testRecvFailureUnderTLSDisconnectsWithItsErrno() throws {
        let (client, delegate, fd) = try securedClient()
        faults.inject(.connectionReset, into: .recv, count: 1, on: .descriptor(fd))
        client.write(Data("x".utf8), withTimeout: -1, tag: 1)
        client.readData(toLength: 1, withTimeout: -1, tag: 1)
        let error = try XCTUnwrap(delegate.waitForDisconnect(of: client) as? GCDAsyncSocketError)
        XCTAssertEqual(error.errno, .connectionReset)
        XCTAssertEqual(error.syscall, .recv)
        XCTAssertTrue(delegate.readBytes(tag: 1).isEmpty)
    }

    func testRecvFailureDuringTheHandshake() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        delegate.waitForConnect()
        var fd: Int32 = -1
        perform(client) { fd = client.socketFD() }
        faults.inject(.connectionReset, into: .recv, count: 1, on: .descriptor(fd))
        client.startTLS(Self.client())
        let error = try XCTUnwrap(delegate.waitForDisconnect(of: client) as? GCDAsyncSocketError)
        XCTAssertEqual(error.errno, .connectionReset)
        XCTAssertFalse(delegate.events.contains { if case .secured = $0 { return true }; return false })
    }
}
