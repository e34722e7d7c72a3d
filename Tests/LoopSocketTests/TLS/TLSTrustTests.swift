import Foundation
import SharedTestSupport
import Synchronization
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Manual trust evaluation (`GCDAsyncSocketManuallyEvaluateTrust`): the handshake waits for the delegate's
/// answer, the handler is one-shot and harmless late (CocoaAsyncSocket PR #255 is the bug avoided).
final class TLSTrustTests: TLSTestCase {
    /// A completion handler kept for the test to call later.
    final class HeldHandler: Sendable {
        private let handler = Mutex<(@Sendable (Bool) -> Void)?>(nil)
        func hold(_ body: @escaping @Sendable (Bool) -> Void) { handler.withLock { $0 = body } }
        func call(_ trusted: Bool) { handler.withLock { $0 }?(trusted) }
        var isHeld: Bool { handler.withLock { $0 != nil } }
    }

    private func manualClient(_ delegate: RecordingDelegate, port: UInt16, held: HeldHandler) throws -> GCDAsyncSocket {
        delegate.configure { hooks in hooks.trust = { _, _, handler in held.hold(handler) } }
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: port, withTimeout: testTimeout)
        // The settings dictionary a GCDAsyncSocket user writes: trust is decided by the delegate, so the
        // test CA need not be configured.
        client.startTLS([GCDAsyncSocketManuallyEvaluateTrust: true, kCFStreamSSLPeerName: "localhost"])
        return client
    }

    /// An echo server and a manual-trust client whose question has been asked (its handler in `held`).
    private func clientAskingTrust() throws -> (server: GCDAsyncSocket, client: GCDAsyncSocket, delegate: RecordingDelegate, held: HeldHandler) {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let clientDelegate = makeDelegate("client")
        let held = HeldHandler()
        let client = try manualClient(clientDelegate, port: server.localPort, held: held)
        waitForTrustQuestion(clientDelegate)
        return (server, client, clientDelegate, held)
    }

    private func waitForTrustQuestion(_ delegate: RecordingDelegate, file: StaticString = #filePath, line: UInt = #line) {
        delegate.waitFor("the trust question", file: file, line: line) { if case .trust = $0 { return true }; return false }
    }

    func testHandshakeWaitsForTheAnswerThenSecures() throws {
        let (server, client, clientDelegate, held) = try clientAskingTrust()
        client.write(Data("ping".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 4, withTimeout: testTimeout, tag: 0)
        let trust = try XCTUnwrap(clientDelegate.events.lazy.compactMap { if case .trust(let t) = $0 { return t }; return nil }.first)
        XCTAssertEqual(trust.hostName, "localhost")
        XCTAssertTrue(trust.certificates.first?.subject.contains("CN=localhost") == true)
        // Not in the system store: evaluate() says why, and the handshake is still paused meanwhile.
        XCTAssertEqual(trust.evaluate()?.code, .certificateVerificationFailed)
        // While the question is open nothing moves: a round trip on another connection of the same loops
        // bounds the wait (no sleep), and the held client has still neither secured nor read.
        let probeDelegate = makeDelegate("probe")
        let probe = try connectTLSClient(probeDelegate, port: server.localPort, Self.client())
        probe.write(Data("x".utf8), withTimeout: testTimeout, tag: 0)
        probe.readData(toLength: 1, withTimeout: testTimeout, tag: 0)
        probeDelegate.waitForReadBytes(1)
        XCTAssertFalse(client.isSecure)
        XCTAssertFalse(clientDelegate.events.contains { if case .secured = $0 { return true }; return false })
        XCTAssertTrue(clientDelegate.readBytes(tag: 0).isEmpty)

        held.call(true)
        held.call(false)  // one-shot: the second answer is ignored
        waitForSecure(clientDelegate, client)
        XCTAssertEqual(clientDelegate.waitForReadBytes(4), Data("ping".utf8))
        XCTAssertTrue(client.isSecure)
    }

    func testRejectingClosesWithTrustRejected() throws {
        let (_, client, clientDelegate, held) = try clientAskingTrust()
        held.call(false)
        let error = clientDelegate.waitForDisconnect(of: client)?.tlsError
        XCTAssertEqual(error?.code, .trustRejected)
        XCTAssertFalse(clientDelegate.events.contains { if case .secured = $0 { return true }; return false })
        // Calling the handler after the close is harmless.
        held.call(true)
        XCTAssertFalse(client.isSecure)
    }

    func testHandlerAfterCloseIsHarmless() throws {
        let (server, client, clientDelegate, held) = try clientAskingTrust()
        client.disconnect()
        clientDelegate.waitForDisconnect(of: client)
        held.call(true)
        // The socket connects again; a stale answer (the old handler, called late) does not reach the new
        // connection's handshake.
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        client.startTLS(Self.client())
        held.call(false)
        client.write(Data("again".utf8), withTimeout: testTimeout, tag: 5)
        client.readData(toLength: 5, withTimeout: testTimeout, tag: 5)
        XCTAssertEqual(clientDelegate.waitForReadBytes(5, tag: 5), Data("again".utf8))
        XCTAssertTrue(client.isSecure)
    }

    /// A server asking about a client certificate: the application data waits for the answer.
    func testServerEvaluatesTheClientCertificate() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, try Self.serverDecidingOnClientCertificates())
        serverDelegate.configure { hooks in
            hooks.trust = { _, trust, handler in
                handler(trust.certificates.first?.subject.contains("CN=test client") == true)
            }
        }
        let clientDelegate = makeDelegate("client")
        let identity = try Self.identity("client.pem", key: "client.key")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client { $0.identity = identity })
        client.write(Data("hi".utf8), withTimeout: testTimeout, tag: 0)
        client.readData(toLength: 2, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(clientDelegate.waitForReadBytes(2), Data("hi".utf8))
        XCTAssertTrue(serverDelegate.events.contains { if case .trust = $0 { return true }; return false })
    }

    /// While a server waits for the answer, application data the client already sent stays in the kernel,
    /// unwatched, and arrives once trusted.
    func testBytesArrivingWhileTrustIsPendingDoNotSpinTheLoop() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, try Self.serverDecidingOnClientCertificates())
        let held = HeldHandler()
        // The first connection's question is held; the probes' are answered at once.
        serverDelegate.configure { hooks in
            hooks.trust = { _, _, handler in if held.isHeld { handler(true) } else { held.hold(handler) } }
        }
        let clientDelegate = makeDelegate("client")
        let identity = try Self.identity("client.pem", key: "client.key")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client { $0.identity = identity })
        // TLS 1.3: the client is done first and sends at once; the server is still asking.
        waitForSecure(clientDelegate, client)
        waitForTrustQuestion(serverDelegate)
        // Sent after the question was asked, so the bytes wait in the server's kernel buffer.
        client.write(Data("hi".utf8), withTimeout: testTimeout, tag: 0)
        clientDelegate.waitFor("the write") { if case .wrote = $0 { return true }; return false }
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        // The bytes are in the kernel and a read is queued, yet EPOLLIN is off: level-triggered, it would
        // report them at every wait while nothing may read them (a loop spinning until the answer).
        let interest = try onLoop(accepted.eventLoop) { accepted.eventLoop.interest(of: accepted.fd) }
        XCTAssertEqual(interest?.contains(.readable), false, "\(String(describing: interest))")
        held.call(true)
        client.readData(toLength: 2, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(clientDelegate.waitForReadBytes(2), Data("hi".utf8))
    }
}
