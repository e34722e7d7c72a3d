import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// `startTLS` queued as GCDAsyncSocket queues it: what is queued before it is plaintext, what is queued after
/// it goes over TLS, and the handshake waits for both queues.
final class TLSQueueingTests: TLSTestCase {
    private let line = Data("\n".utf8)

    /// A STARTTLS server: answers "GO" and reads a plaintext line, then reads 6 bytes over TLS and echoes
    /// them. With `queueAllAtOnce` it queues all of it when it accepts (the marker waits for the pending
    /// plaintext read, and the TLS read waits behind the marker); otherwise it queues startTLS and the TLS
    /// read only once the plaintext read completed.
    private func makeStartTLSServer(_ delegate: RecordingDelegate, queueAllAtOnce: Bool) throws -> GCDAsyncSocket {
        let tls = TLSConfiguration.server(identity: try Self.identity())
        delegate.configure { hooks in
            hooks.accept = { _, child in
                if queueAllAtOnce { child.write(Data("GO\n".utf8), withTimeout: -1, tag: 1) }
                child.readData(to: self.line, withTimeout: testTimeout, tag: 1)
                if queueAllAtOnce {
                    child.startTLS(tls)
                    child.readData(toLength: 6, withTimeout: testTimeout, tag: 2)
                }
            }
            hooks.read = { sock, data, tag in
                switch tag {
                case 1:
                    if !queueAllAtOnce {
                        sock.write(Data("GO\n".utf8), withTimeout: -1, tag: 1)
                        sock.startTLS(tls)
                        sock.readData(toLength: 6, withTimeout: testTimeout, tag: 2)
                    }
                default:
                    sock.write(data, withTimeout: -1, tag: 2)
                }
            }
        }
        return try makeServer(delegate)
    }

    /// The client writes its plaintext line and queues startTLS at once, without waiting for "GO": its
    /// ClientHello can arrive in the same segment as the line, behind the bytes the server's plaintext read
    /// takes, and must reach the handshake (GCDAsyncSocket moves its prebuffer into the TLS input too).
    func testStartTLSRightBehindPlaintextInBothDirections() throws {
        for queueAllAtOnce in [true, false] {
            let serverDelegate = makeDelegate("server \(queueAllAtOnce)")
            let server = try makeStartTLSServer(serverDelegate, queueAllAtOnce: queueAllAtOnce)
            let clientDelegate = makeDelegate("client \(queueAllAtOnce)")
            let client = makeSocket(clientDelegate)
            try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
            client.write(Data("STARTTLS\n".utf8), withTimeout: -1, tag: 1)
            client.readData(to: line, withTimeout: testTimeout, tag: 1)  // plaintext: queued before
            client.startTLS(Self.client())
            client.write(Data("secret".utf8), withTimeout: -1, tag: 2)      // TLS: queued after
            client.readData(toLength: 6, withTimeout: testTimeout, tag: 2)
            XCTAssertEqual(clientDelegate.waitForReadBytes(3, tag: 1), Data("GO\n".utf8))
            XCTAssertEqual(clientDelegate.waitForReadBytes(6, tag: 2), Data("secret".utf8))
            waitForSecure(clientDelegate, client)
            // socketDidSecure comes before the first TLS read completes.
            let events = clientDelegate.events.map(\.description)
            let secured = try XCTUnwrap(events.firstIndex(of: "secured"))
            let tlsRead = try XCTUnwrap(events.firstIndex(of: "read(6 bytes, tag 2)"))
            XCTAssertLessThan(secured, tlsRead, "\(events)")
            client.disconnect()
        }
    }

    func testWritesQueuedBeforeTheHandshakeCompletesGoOverTLS() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        client.startTLS(Self.client())
        let chunks = (0..<50).map { Data("chunk \($0);".utf8) }
        for (i, chunk) in chunks.enumerated() { client.write(chunk, withTimeout: testTimeout, tag: i) }
        let all = chunks.reduce(Data(), +)
        client.readData(toLength: UInt(all.count), withTimeout: testTimeout, tag: 99)
        XCTAssertEqual(clientDelegate.waitForReadBytes(all.count, tag: 99), all)
        // Every write completed, in order.
        let wrote = clientDelegate.events.compactMap { if case .wrote(let tag) = $0 { return tag }; return nil }
        XCTAssertEqual(wrote, Array(0..<50))
    }

    /// A read queued behind startTLS keeps its own timeout while the handshake stalls.
    func testReadTimeoutRunsWhileTheHandshakeStalls() throws {
        let silentDelegate = makeDelegate("silent server")
        silentDelegate.configure { hooks in hooks.accept = { _, child in child.readData(withTimeout: -1, tag: 0) } }
        let server = try makeServer(silentDelegate)  // reads the ClientHello and never answers
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        client.startTLS(Self.client())
        client.readData(withTimeout: 0.2, tag: 7)
        let error = clientDelegate.waitForDisconnect(of: client)
        XCTAssertEqual(error?.socketError?.code, .readTimeoutError, "\(String(describing: error))")
    }

    /// closeWriteStream over TLS: close_notify, then the write side's FIN; the peer sees a clean end and can
    /// still answer.
    func testCloseWriteStreamSendsCloseNotifyAndTheReplyStillArrives() throws {
        let serverDelegate = makeDelegate("server")
        let tls = TLSConfiguration.server(identity: try Self.identity())
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.startTLS(tls)
                child.readData(toLength: 4, withTimeout: testTimeout, tag: 0)
            }
            hooks.read = { sock, data, _ in
                sock.readData(withTimeout: testTimeout, tag: 1)  // sees the end of the stream
            }
            hooks.closedReadStream = { sock in
                sock.write(Data("bye".utf8), withTimeout: testTimeout, tag: 0)
                sock.disconnectAfterWriting()
            }
        }
        let server = try makeServer(serverDelegate)
        server.autoDisconnectOnClosedReadStream = false
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client())
        client.write(Data("done".utf8), withTimeout: testTimeout, tag: 0)
        client.closeWriteStream()
        client.readData(toLength: 3, withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(clientDelegate.waitForReadBytes(3), Data("bye".utf8))
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        XCTAssertNil(serverDelegate.waitForDisconnect(of: accepted), "a clean end on both sides")
        XCTAssertTrue(serverDelegate.events.contains { if case .closedReadStream = $0 { return true }; return false })
        // The client sees the server's close_notify and FIN as a clean end too.
        let clientEnd = clientDelegate.waitForDisconnect(of: client)
        XCTAssertTrue(clientEnd == nil || clientEnd?.socketError?.code == .closedError, "\(String(describing: clientEnd))")
    }

    /// disconnectAfterWriting over TLS: everything written arrives, then close_notify.
    func testDisconnectAfterWritingDeliversEverything() throws {
        let payload = patternData(1 << 20)
        let serverDelegate = makeDelegate("server")
        let tls = TLSConfiguration.server(identity: try Self.identity())
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.startTLS(tls)
                child.write(payload, withTimeout: testTimeout, tag: 0)
                child.disconnectAfterWriting()
            }
        }
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client())
        client.readData(toLength: UInt(payload.count), withTimeout: testTimeout, tag: 0)
        XCTAssertEqual(clientDelegate.waitForReadBytes(payload.count), payload)
        let error = clientDelegate.waitForDisconnect(of: client)
        XCTAssertEqual(error?.socketError?.code, .closedError, "a clean end (close_notify), not a cut: \(String(describing: error))")
    }
}

extension TLSQueueingTests {
    /// Application data that arrives with the client's last handshake message stays in the TLS layer's
    /// input, not in the kernel: it is read even when the wakeup's read budget went on the handshake (with
    /// a budget of one read, as http-hello uses, it waited for bytes that never came).
    func testDataBehindTheHandshakeIsReadWithAReadBudgetOfOne() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        server.options.maxReadsPerWakeup = 1
        for round in 0..<5 {
            let delegate = makeDelegate("client \(round)")
            let client = try connectTLSClient(delegate, port: server.localPort, Self.client())
            // Queued before the handshake: sent right behind the client's Finished.
            client.write(Data("early \(round)".utf8), withTimeout: testTimeout, tag: 0)
            client.readData(toLength: 7, withTimeout: testTimeout, tag: 0)
            XCTAssertEqual(delegate.waitForReadBytes(7), Data("early \(round)".utf8))
            client.disconnect()
        }
    }

    /// startTLS's markers grow both queues by one operation; once the handshake has taken them, an idle TLS
    /// connection keeps storage only for what it has queued (its one read), not for the markers.
    func testAnIdleTLSConnectionKeepsNoQueueStorageForTheMarkers() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let client = try connectTLSClient(makeDelegate("client"), port: server.localPort, Self.client())
        defer { client.disconnect() }
        serverDelegate.waitFor("the server's side secured") { if case .secured = $0 { return true } else { return false } }
        let child = serverDelegate.accepted[0]
        let queues = try onLoop(child.eventLoop) {
            (child.reads.count, child.reads.storageCapacity, child.writes.count, child.writes.storageCapacity)
        }
        XCTAssertEqual(queues.0, 1, "the echo server's read")
        XCTAssertEqual(queues.1, 1, "room for that read only")
        XCTAssertEqual(queues.2, 0)
        XCTAssertEqual(queues.3, 0, "no storage kept for the write queue's marker")
    }

    /// An accepted socket (which pauses reads while its writes back up) queues a plaintext read, startTLS and
    /// a reply larger than its high water mark: the read ahead of the marker must still complete, or the
    /// handshake, and with it the reply, would wait forever.
    func testAReplyOverTheHighWaterMarkBehindStartTLSDoesNotHoldTheReadAheadOfIt() throws {
        let size = (SocketOptions().writeHighWaterMark * 5) / 4
        let reply = patternData(size)
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        let serverDelegate = makeDelegate("server")
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.readData(toLength: 10, withTimeout: -1, tag: 1)
                child.startTLS(serverTLS)
                child.write(reply, withTimeout: -1, tag: 2)
            }
        }
        let server = try makeServer(serverDelegate)
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        client.write(Data("0123456789".utf8), withTimeout: -1, tag: 1)
        client.startTLS(Self.client())
        client.readData(toLength: UInt(size), withTimeout: -1, tag: 2)
        let finished: ([SocketRecord]) -> Bool = { records in
            records.contains { if case .read(_, 2) = $0.event { return true } else { return false } }
        }
        XCTAssertTrue(delegate.wait("the reply behind startTLS", timeout: 30, until: finished))
        XCTAssertTrue(delegate.readBytes(tag: 2) == reply, "the reply differs")
        client.disconnect()
    }

    /// A TLS 1.3 client that never reads after the handshake has the server's session tickets unread in its
    /// kernel buffer. Its graceful close must still end with a FIN, not a reset that would make the server's
    /// kernel discard the client's last bytes before the server read them.
    func testAGracefulCloseWithUnreadTicketsDeliversEveryByte() throws {
        let size = 100_000
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        let serverDelegate = makeDelegate("server")
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.autoDisconnectOnClosedReadStream = false
                child.startTLS(serverTLS)  // and no read until the client has gone
            }
        }
        let server = try makeServer(serverDelegate)
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: server.localPort, Self.client())
        waitForSecure(delegate, client)
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts(1).first)
        waitForSecure(serverDelegate, accepted)
        // Wait (bounded) until the tickets are in the client's kernel buffer, unread.
        var unread: Int32 = 0
        for _ in 0..<1000 where unread == 0 {
            perform(client) { _ = ioctl(client.fd, UInt(FIONREAD), &unread) }
            if unread == 0 { settle(client.eventLoop) }
        }
        XCTAssertGreaterThan(unread, 0, "the server's session tickets never reached the client")
        client.write(patternData(size), withTimeout: -1, tag: 1)
        client.disconnectAfterWriting()
        XCTAssertNil(delegate.waitForDisconnect(of: client))
        // The server has seen the client go (it reads what a hung-up peer sent into its buffer) before it
        // reads: a reset instead of a FIN would have cost it the bytes, and ended it with ECONNRESET.
        settle(accepted.eventLoop)
        accepted.readData(toLength: UInt(size), withTimeout: -1, tag: 3)
        XCTAssertTrue(serverDelegate.waitForReadBytes(size, tag: 3) == patternData(size), "the client's bytes differ")
        serverDelegate.waitFor("the client's end of stream") { if case .closedReadStream = $0 { return true } else { return false } }
        XCTAssertTrue(serverDelegate.disconnects(of: accepted).isEmpty, "\(serverDelegate.events)")
        accepted.disconnect()
    }
}
