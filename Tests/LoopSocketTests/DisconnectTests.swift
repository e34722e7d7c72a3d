import Dispatch
@testable import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// `disconnect`, the three `disconnectAfter…` variants, half-close in both directions, resets, and the
/// rule that `socketDidDisconnect` is the last callback of a connection.
final class DisconnectTests: SocketTestCase {
    private func congestedPair(_ delegate: RecordingDelegate, configure: (GCDAsyncSocket) -> Void = { _ in }) throws -> (GCDAsyncSocket, RawSocket) {
        try connectToRawPeer(delegate, listenerReceiveBuffer: 4096) { client in
            client.options.sendBufferSize = 4096
            configure(client)
        }
    }

    /// Lets the loop go round and checks that nothing arrived after `socketDidDisconnect`.
    private func assertNothingAfterDisconnect(_ delegate: RecordingDelegate, _ sock: GCDAsyncSocket, file: StaticString = #filePath, line: UInt = #line) {
        settle(sock.eventLoop, file: file, line: line)
        let events = delegate.events(of: sock)
        XCTAssertEqual(events.filter(\.isDisconnect).count, 1, "exactly one socketDidDisconnect: \(events)", file: file, line: line)
        XCTAssertTrue(events.last?.isDisconnect ?? false, "socketDidDisconnect is the last callback: \(events)", file: file, line: line)
    }

    // MARK: disconnect()

    func testDisconnectDropsQueuedReadsSilently() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(toLength: 100, withTimeout: -1, tag: 1)
        client.readData(withTimeout: -1, tag: 2)
        perform(client) {}
        client.disconnect()
        XCTAssertTrue(client.isDisconnected)
        XCTAssertFalse(client.isConnected)
        XCTAssertNil(delegate.waitForDisconnect())
        let (_, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof, "the peer sees our FIN")
        try? peer.send("too late")
        assertNothingAfterDisconnect(delegate, client)
        XCTAssertEqual(delegate.events.count, 2, "connected, disconnected: \(delegate.events)")
    }

    func testDisconnectFromInsideACallback() throws {
        let delegate = makeDelegate("client")
        delegate.configure { hooks in hooks.read = { sock, _, _ in sock.disconnect() } }
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(withTimeout: -1, tag: 1)
        client.readData(withTimeout: -1, tag: 2)
        try peer.send("bye")
        XCTAssertNil(delegate.waitForDisconnect())
        assertNothingAfterDisconnect(delegate, client)
        XCTAssertEqual(delegate.reads().map(\.1), [1])
    }

    func testGroupShutdownDisconnectsWithAnError() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(withTimeout: -1, tag: 1)
        perform(client) {}
        try group.shutdownGracefully(timeout: .seconds(10))
        let error = delegate.waitForDisconnect() as? GCDAsyncSocketError
        XCTAssertEqual(error?.code, .badConfigError)
        XCTAssertEqual(error?.message, "The socket's event loop is shut down")
        XCTAssertEqual(delegate.disconnects().count, 1)
        let (_, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof)
        XCTAssertThrowsError(try client.connect(toHost: "127.0.0.1", onPort: 1)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError, "a socket on a shut-down loop cannot start again")
        }
        XCTAssertTrue(client.isDisconnected)
    }

    // MARK: disconnectAfter…

    func testDisconnectAfterReading() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        client.readData(toLength: 5, withTimeout: -1, tag: 1)
        client.write(patternData(2 << 20), withTimeout: -1, tag: 2)  // Cannot finish: the peer does not read.
        delegate.waitFor("the write to back up") { if case .wrotePartial = $0 { return true } else { return false } }
        client.disconnectAfterReading()
        client.readData(withTimeout: -1, tag: 3)  // Refused: no new I/O.
        client.write(Data("x".utf8), withTimeout: -1, tag: 4)
        delegate.waitFor("the refused write") { if case .failedWrite(4, _) = $0 { return true } else { return false } }
        XCTAssertTrue(client.isConnected, "still connected while the read is pending")
        try peer.send("12345")
        XCTAssertNil(delegate.waitForDisconnect(), "disconnectAfterReading is a requested disconnect")
        assertNothingAfterDisconnect(delegate, client)
        XCTAssertEqual(delegate.reads().map(\.1), [1])
        let sequence = delegate.events.map(\.description).filter { !$0.hasPrefix("wrotePartial") && !$0.hasPrefix("writability") }
        XCTAssertEqual(sequence.count, 5, "\(sequence)")
        XCTAssertTrue(sequence[1].hasPrefix("failedWrite(tag 4, GCDAsyncSocketError.badConfigError"), "\(sequence)")
        XCTAssertEqual(sequence[2], "read(5 bytes, tag 1)")
        XCTAssertTrue(sequence[3].hasPrefix("failedWrite(tag 2"), "the unfinished write is dropped: \(sequence)")
    }

    func testDisconnectAfterWriting() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        let payload = patternData(1 << 20)
        client.readData(withTimeout: -1, tag: 1)
        client.write(payload, withTimeout: -1, tag: 2)
        client.disconnectAfterWriting()
        client.write(Data("x".utf8), withTimeout: -1, tag: 3)
        var readProgress: Float = 0
        perform(client) { readProgress = client.progressOfRead(returningTag: nil, bytesDone: nil, total: nil) }
        XCTAssertTrue(readProgress.isNaN, "the queued read was dropped at once")
        // (The peer sends nothing: unread bytes at close() would make the kernel reset the connection.)
        let (received, end) = try peer.receiveToEnd()
        XCTAssertEqual(received, payload, "every queued byte is written before the close")
        XCTAssertEqual(end, .eof)
        XCTAssertNil(delegate.waitForDisconnect())
        assertNothingAfterDisconnect(delegate, client)
        XCTAssertTrue(delegate.reads().isEmpty, "queued reads are dropped at once: \(delegate.events)")
        XCTAssertEqual(delegate.count { if case .wrote(2) = $0 { return true } else { return false } }, 1)
        XCTAssertEqual(delegate.count { if case .failedWrite(3, _) = $0 { return true } else { return false } }, 1)
    }

    func testDisconnectAfterReadingAndWriting() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        let payload = patternData(512 * 1024)
        client.readData(toLength: 3, withTimeout: -1, tag: 1)
        client.write(payload, withTimeout: -1, tag: 2)
        client.disconnectAfterReadingAndWriting()
        XCTAssertEqual(try peer.receive(exactly: payload.count), payload)
        delegate.waitFor("the write") { if case .wrote(2) = $0 { return true } else { return false } }
        settle(client.eventLoop)
        XCTAssertTrue(client.isConnected, "the read is still pending")
        XCTAssertTrue(delegate.disconnects().isEmpty)
        try peer.send("abc")
        XCTAssertNil(delegate.waitForDisconnect())
        assertNothingAfterDisconnect(delegate, client)
        XCTAssertEqual(delegate.readBytes(tag: 1), Data("abc".utf8))
        let (rest, end) = try peer.receiveToEnd()
        XCTAssertTrue(rest.isEmpty)
        XCTAssertEqual(end, .eof)
    }

    func testDisconnectAfterWithNothingQueuedDisconnectsAtOnce() throws {
        for variant in 0..<3 {
            let delegate = makeDelegate("client \(variant)")
            let (client, peer) = try connectToRawPeer(delegate)
            switch variant {
            case 0: client.disconnectAfterReading()
            case 1: client.disconnectAfterWriting()
            default: client.disconnectAfterReadingAndWriting()
            }
            XCTAssertNil(delegate.waitForDisconnect())
            assertNothingAfterDisconnect(delegate, client)
            peer.close()
        }
    }

    func testDisconnectAfterWritingWhileListeningStopsListening() throws {
        let delegate = makeDelegate("server")
        let server = try makeServer(delegate)
        let port = server.localPort
        server.disconnectAfterWriting()
        XCTAssertNil(delegate.waitForDisconnect())
        XCTAssertThrowsError(try RawSocket(connectTo: "127.0.0.1", port: port)) { error in
            XCTAssertEqual((error as? RawSocketError)?.errno, ECONNREFUSED)
        }
    }

    // MARK: Half-close: the peer's end of stream

    func testPeerHalfCloseFlushesQueuedWritesThenDisconnectsWithClosedError() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        XCTAssertTrue(client.autoDisconnectOnClosedReadStream, "on by default")
        let payload = patternData(1 << 20)
        client.write(payload, withTimeout: -1, tag: 1)
        client.readData(withTimeout: -1, tag: 2)
        delegate.waitFor("the write to back up") { if case .wrotePartial = $0 { return true } else { return false } }
        try peer.shutdownWrite()
        // The socket sees the end of the stream while the write is still queued; it is not lost.
        let (received, end) = try peer.receiveToEnd()
        XCTAssertEqual(received, payload)
        XCTAssertEqual(end, .eof)
        let error = delegate.waitForDisconnect()
        XCTAssertEqual(error.socketCode, .closedError)
        assertNothingAfterDisconnect(delegate, client)
        XCTAssertEqual(delegate.count { if case .wrote(1) = $0 { return true } else { return false } }, 1)
        XCTAssertEqual(delegate.count { if case .closedReadStream = $0 { return true } else { return false } }, 0,
                       "socketDidCloseReadStream only without autoDisconnectOnClosedReadStream")
    }

    func testPeerCloseWithNoReadQueuedIsSeen() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        peer.close()
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .closedError)
        assertNothingAfterDisconnect(delegate, client)
    }

    func testHalfDuplexKeepsTheSocketOpenForWriting() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate) { $0.autoDisconnectOnClosedReadStream = false }
        peer.setNoDelay()
        client.readData(toLength: 10, withTimeout: -1, tag: 1)
        client.readData(toLength: 10, withTimeout: -1, tag: 2)
        try peer.send("abc")
        delegate.waitFor("partial read") { if case .readPartial(3, 1) = $0 { return true } else { return false } }
        try peer.shutdownWrite()
        delegate.waitFor("both reads failed") { if case .failedRead(2, _) = $0 { return true } else { return false } }
        let sequence = delegate.events.map(\.description)
        // Each failed read hands its bytes back to the prebuffer, so the next read gets them first.
        XCTAssertEqual(Array(sequence.dropFirst(2)), [
            "closedReadStream",
            "failedRead(tag 1, GCDAsyncSocketError.closedError: Socket closed by remote peer)",
            "readPartial(3, tag 2)",
            "failedRead(tag 2, GCDAsyncSocketError.closedError: Socket closed by remote peer)",
        ])
        XCTAssertTrue(client.isConnected)
        // The unfinished read's bytes went back to the prebuffer.
        client.readData(withTimeout: -1, tag: 3)
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 3), Data("abc".utf8))
        // Writing still works.
        client.write(Data("reply".utf8), withTimeout: -1, tag: 4)
        XCTAssertEqual(try peer.receive(exactly: 5), Data("reply".utf8))
        // A read now fails at once (the stream is over); socketDidCloseReadStream is not repeated.
        client.readData(withTimeout: -1, tag: 5)
        delegate.waitFor("read 5 fails") { if case .failedRead(5, _) = $0 { return true } else { return false } }
        XCTAssertEqual(delegate.count { if case .closedReadStream = $0 { return true } else { return false } }, 1)
        client.disconnect()
        XCTAssertNil(delegate.waitForDisconnect())
        assertNothingAfterDisconnect(delegate, client)
        let (_, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof)
    }

    // MARK: Half-close: our write side

    func testCloseWriteStreamLetsThePeerSeeEOFAndStillReadsTheReply() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.write(Data("request".utf8), withTimeout: -1, tag: 1)
        client.closeWriteStream()
        client.write(Data("refused".utf8), withTimeout: -1, tag: 2)
        client.readData(to: Data("\n".utf8), withTimeout: -1, tag: 3)
        let (request, end) = try peer.receiveToEnd()
        XCTAssertEqual(request, Data("request".utf8), "queued writes go out before the shutdown")
        XCTAssertEqual(end, .eof, "the peer sees end of stream")
        try peer.send("response\n")
        XCTAssertEqual(delegate.waitForReadBytes(9, tag: 3), Data("response\n".utf8), "our read side still works")
        XCTAssertEqual(delegate.count { if case .failedWrite(2, _) = $0 { return true } else { return false } }, 1,
                       "writes after closeWriteStream fail")
        peer.close()
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .closedError)
        assertNothingAfterDisconnect(delegate, client)
    }

    func testHalfCloseOverAUnixSocket() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("half.sock")
        let serverDelegate = makeDelegate("server")
        serverDelegate.configure { hooks in
            // Reads the whole request (to end of stream), then answers and closes.
            hooks.accept = { _, child in
                child.autoDisconnectOnClosedReadStream = false
                child.readData(withTimeout: -1, tag: 0)
            }
            hooks.read = { sock, _, _ in sock.readData(withTimeout: -1, tag: 0) }
            hooks.closedReadStream = { sock in
                sock.write(Data("answer".utf8), withTimeout: -1, tag: 1)
                sock.disconnectAfterWriting()
            }
        }
        let server = makeSocket(serverDelegate)
        try server.accept(on: URL(fileURLWithPath: path))
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(to: URL(fileURLWithPath: path), withTimeout: testTimeout)
        client.write(Data("question".utf8), withTimeout: -1, tag: 1)
        client.closeWriteStream()
        client.readData(toLength: 6, withTimeout: -1, tag: 2)
        XCTAssertEqual(clientDelegate.waitForReadBytes(6, tag: 2), Data("answer".utf8))
        XCTAssertEqual(clientDelegate.waitForDisconnect().socketCode, .closedError)
        let child = serverDelegate.waitForAccepts(1)[0]
        XCTAssertNil(serverDelegate.waitForDisconnect(of: child))
        XCTAssertEqual(serverDelegate.readBytes(of: child), Data("question".utf8))
        assertNothingAfterDisconnect(clientDelegate, client)
        assertNothingAfterDisconnect(serverDelegate, child)
    }

    /// Both directions closed while the socket is kept open (no auto-disconnect): the kernel reports
    /// EPOLLHUP for good, which must not turn into a busy loop.
    func testBothDirectionsClosedDoesNotSpin() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate) { $0.autoDisconnectOnClosedReadStream = false }
        try peer.shutdownWrite()
        delegate.waitFor("the read stream to close") { if case .closedReadStream = $0 { return true } else { return false } }
        client.closeWriteStream()
        let (_, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof)
        settle(client.eventLoop)
        let spins = try iterationsDuring(0.1, on: client.eventLoop)
        XCTAssertLessThan(spins, 50, "the loop went round \(spins) times in 100 ms with nothing to do")
        if client.isConnected {
            client.disconnect()
        }
        delegate.waitForDisconnect()
        assertNothingAfterDisconnect(delegate, client)
    }

    /// The same with unread bytes waiting in the prebuffer and no read queued: they stay readable, and the
    /// loop stays idle meanwhile.
    func testBothDirectionsClosedWithUnreadBytesDoesNotSpin() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.closeWriteStream()
        let (_, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof)
        try peer.send("the reply")
        try peer.shutdownWrite()
        settle(client.eventLoop)
        let spins = try iterationsDuring(0.1, on: client.eventLoop)
        XCTAssertLessThan(spins, 50, "the loop went round \(spins) times in 100 ms with nothing to do")
        XCTAssertTrue(client.isConnected, "unread bytes keep the socket open")
        client.readData(withTimeout: -1, tag: 1)
        XCTAssertEqual(delegate.waitForReadBytes(9, tag: 1), Data("the reply".utf8))
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .closedError)
        assertNothingAfterDisconnect(delegate, client)
    }

    /// How many times `loop` goes round during `seconds` (measured between two of its own timers).
    private func iterationsDuring(_ seconds: Double, on loop: EventLoop) throws -> UInt64 {
        let result = Locked<UInt64?>(nil)
        let done = Signal()
        try loop.execute {
            let start = loop.iterations
            _ = try? loop.schedule(after: .milliseconds(Int64(seconds * 1000))) {
                result.value = loop.iterations - start
                done.fire()
            }
        }
        try done.waitOrThrow("the measuring timer")
        return result.value ?? .max
    }

    // MARK: Resets

    func testPeerResetWhileReadingIsOneDisconnectWithECONNRESET() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(toLength: 10, withTimeout: -1, tag: 1)
        client.write(Data("x".utf8), withTimeout: -1, tag: 2)
        XCTAssertEqual(try peer.receive(exactly: 1), Data("x".utf8))
        peer.resetClose()
        let error = delegate.waitForDisconnect() as? GCDAsyncSocketError
        XCTAssertEqual(error?.errno, .connectionReset, "\(String(describing: error))")
        assertNothingAfterDisconnect(delegate, client)
        XCTAssertTrue(delegate.reads().isEmpty)
    }

    func testPeerResetWhileIdleIsNoticed() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        peer.resetClose()
        let error = delegate.waitForDisconnect() as? GCDAsyncSocketError
        XCTAssertEqual(error?.errno, .connectionReset, "\(String(describing: error))")
        assertNothingAfterDisconnect(delegate, client)
    }

    func testServerSideSeesClientResetOnce() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let (raw, child) = try rawClient(to: server, delegate: serverDelegate)
        try raw.send("ping")
        XCTAssertEqual(try raw.receive(exactly: 4), Data("ping".utf8))
        raw.resetClose()
        let error = serverDelegate.waitForDisconnect(of: child) as? GCDAsyncSocketError
        XCTAssertEqual(error?.errno, .connectionReset)
        assertNothingAfterDisconnect(serverDelegate, child)
        XCTAssertTrue(server.isConnected == false && server.isDisconnected == false, "the listener keeps listening")
    }
}
