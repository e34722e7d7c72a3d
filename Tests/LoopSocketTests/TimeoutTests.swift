import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// Read and write timeouts: firing, extension through `shouldTimeout…` (elapsed grows with each extension),
/// the start-at-dequeue rule, and `timeoutsFailOnlyTheOperation`.
final class TimeoutTests: SocketTestCase {
    private func timeoutQuestions(_ delegate: RecordingDelegate) -> [(tag: Int, elapsed: TimeInterval, done: UInt)] {
        delegate.events.compactMap { event in
            switch event {
            case .shouldTimeoutRead(let tag, let elapsed, let done), .shouldTimeoutWrite(let tag, let elapsed, let done):
                return (tag, elapsed, done)
            default:
                return nil
            }
        }
    }

    func testReadTimeoutDisconnects() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let start = Deadline.now()
        client.readData(toLength: 10, withTimeout: 0.05, tag: 4)
        let error = delegate.waitForDisconnect() as? GCDAsyncSocketError
        let elapsed = Double(Deadline.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        XCTAssertEqual(error?.code, .readTimeoutError)
        XCTAssertEqual(error?.message, "Read operation timed out")
        XCTAssertGreaterThanOrEqual(elapsed, 0.05, "a timer never fires early")
        let questions = timeoutQuestions(delegate)
        XCTAssertEqual(questions.count, 1)
        XCTAssertEqual(questions.first?.tag, 4)
        XCTAssertEqual(questions.first?.elapsed ?? 0, 0.05, accuracy: 1e-9)
        let (_, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof, "a timeout closes the whole connection, as in GCDAsyncSocket")
    }

    /// A connection that ran untimed operations first (no timer bookkeeping at all) still times out the
    /// first read and write that carry a timeout.
    func testTimeoutAfterUntimedOperations() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.write(Data("ping".utf8), withTimeout: -1, tag: 1)
        client.readData(toLength: 4, withTimeout: -1, tag: 2)
        try peer.send("pong")
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 2), Data("pong".utf8))
        client.readData(toLength: 10, withTimeout: 0.05, tag: 3)
        let error = delegate.waitForDisconnect() as? GCDAsyncSocketError
        XCTAssertEqual(error?.code, .readTimeoutError)
        XCTAssertEqual(timeoutQuestions(delegate).map(\.tag), [3])
    }

    func testReadTimeoutExtensionsAddUp() throws {
        let delegate = makeDelegate("client")
        delegate.configure { hooks in
            hooks.readTimeout = { _, elapsed, _ in elapsed < 0.14 ? 0.05 : 0 }
        }
        let (client, peer) = try connectToRawPeer(delegate)
        peer.setNoDelay()
        client.readData(toLength: 10, withTimeout: 0.05, tag: 1)
        try peer.send("ab")
        delegate.waitFor("partial") { if case .readPartial = $0 { return true } else { return false } }
        let start = Deadline.now()
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .readTimeoutError)
        let elapsed = Double(Deadline.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let questions = timeoutQuestions(delegate)
        XCTAssertEqual(questions.map(\.tag), [1, 1, 1])
        XCTAssertEqual(questions.map(\.done), [2, 2, 2], "bytesDone counts the partial read")
        for (i, question) in questions.enumerated() {
            XCTAssertEqual(question.elapsed, 0.05 * Double(i + 1), accuracy: 1e-9,
                           "elapsed is the original timeout plus the extensions so far")
        }
        XCTAssertGreaterThanOrEqual(elapsed, 0.09, "two extensions of 50 ms ran after the partial bytes")
    }

    func testExtendedReadCompletesWhenTheDataArrives() throws {
        let delegate = makeDelegate("client")
        let asked = Signal()
        delegate.configure { hooks in
            hooks.readTimeout = { _, _, _ in
                asked.fire()
                return testTimeout
            }
        }
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(toLength: 4, withTimeout: 0.02, tag: 1)
        try asked.waitOrThrow("the timeout question")
        try peer.send("late")
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 1), Data("late".utf8))
        XCTAssertTrue(client.isConnected)
        XCTAssertTrue(delegate.disconnects().isEmpty)
    }

    func testTimeoutStartsWhenTheReadReachesTheFront() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(toLength: 3, withTimeout: -1, tag: 1)
        client.readData(toLength: 3, withTimeout: 0.05, tag: 2)
        // The first read is answered after 150 ms: three times the second read's timeout.
        let start = Deadline.now()
        _ = try client.eventLoop.schedule(after: .milliseconds(150)) { try? peer.send("one") }
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .readTimeoutError)
        let elapsed = Double(Deadline.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let sequence = delegate.events.map(\.description)
        XCTAssertEqual(Array(sequence.dropFirst()), [
            "read(3 bytes, tag 1)",
            "shouldTimeoutRead(tag 2, 0.05, 0)",
            "disconnected(GCDAsyncSocketError.readTimeoutError: Read operation timed out)",
        ])
        XCTAssertGreaterThanOrEqual(elapsed, 0.2, "150 ms for the first read, then 50 ms for the second")
    }

    func testTimeoutsFailOnlyTheReadOperation() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate) { $0.timeoutsFailOnlyTheOperation = true }
        XCTAssertTrue(client.timeoutsFailOnlyTheOperation)
        peer.setNoDelay()
        client.readData(toLength: 10, withTimeout: 0.05, tag: 1)
        try peer.send("abc")
        delegate.waitFor("the failed read") { if case .failedRead(1, _) = $0 { return true } else { return false } }
        guard case .failedRead(1, let error)? = delegate.events.last else { return XCTFail("\(delegate.events)") }
        XCTAssertEqual(error.socketError?.code, .readTimeoutError)
        XCTAssertTrue(client.isConnected, "the connection stays up")
        // The failed read's bytes are not lost.
        client.readData(toLength: 5, withTimeout: -1, tag: 2)
        try peer.send("de")
        XCTAssertEqual(delegate.waitForReadBytes(5, tag: 2), Data("abcde".utf8))
        client.write(Data("still".utf8), withTimeout: -1, tag: 3)
        XCTAssertEqual(try peer.receive(exactly: 5), Data("still".utf8))
        XCTAssertTrue(delegate.disconnects().isEmpty)
    }

    // MARK: Writes

    private func congestedPair(_ delegate: RecordingDelegate, configure: (GCDAsyncSocket) -> Void = { _ in }) throws -> (GCDAsyncSocket, RawSocket) {
        try connectToRawPeer(delegate, listenerReceiveBuffer: 4096) { client in
            client.options.sendBufferSize = 4096
            configure(client)
        }
    }

    func testWriteTimeoutDisconnects() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        client.write(patternData(4 << 20), withTimeout: 0.05, tag: 8)
        let error = delegate.waitForDisconnect() as? GCDAsyncSocketError
        XCTAssertEqual(error?.code, .writeTimeoutError)
        XCTAssertEqual(error?.message, "Write operation timed out")
        let questions = timeoutQuestions(delegate)
        XCTAssertEqual(questions.map(\.tag), [8])
        XCTAssertGreaterThan(questions.first?.done ?? 0, 0, "bytesDone counts what was written")
        XCTAssertEqual(delegate.count { if case .failedWrite(8, _) = $0 { return true } else { return false } }, 1)
        XCTAssertTrue(delegate.events.last?.isDisconnect ?? false)
        peer.close()
    }

    func testWriteTimeoutExtension() throws {
        let delegate = makeDelegate("client")
        let asked = Locked(0)
        delegate.configure { hooks in
            hooks.writeTimeout = { _, _, _ in
                asked.value += 1
                return asked.value == 1 ? 0.05 : 0
            }
        }
        let (client, peer) = try congestedPair(delegate)
        client.write(patternData(4 << 20), withTimeout: 0.05, tag: 2)
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .writeTimeoutError)
        let questions = timeoutQuestions(delegate)
        XCTAssertEqual(questions.count, 2)
        XCTAssertEqual(questions.map(\.elapsed), [0.05, 0.1])
        XCTAssertEqual(questions.map(\.tag), [2, 2])
        peer.close()
    }

    /// A write that times out after part of it went out cannot fail alone: the peer has its first bytes, and
    /// the next write's would follow them as if they were its rest. The connection closes with the timeout
    /// error, as it does without the option.
    func testTimeoutsFailOnlyTheOperationStillClosesOnAPartlyWrittenWrite() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate) { $0.timeoutsFailOnlyTheOperation = true }
        client.write(patternData(4 << 20), withTimeout: 0.05, tag: 1)
        client.write(Data("after".utf8), withTimeout: -1, tag: 2)
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .writeTimeoutError)
        let written = try XCTUnwrap(timeoutQuestions(delegate).last?.done)
        XCTAssertGreaterThan(written, 0, "the write had begun")
        XCTAssertEqual(delegate.count { if case .wrote = $0 { return true } else { return false } }, 0)
        XCTAssertEqual(delegate.count { if case .failedWrite = $0 { return true } else { return false } }, 2,
                       "both writes end in a failure: neither reached the peer whole")
        // The peer gets a prefix of the first write and then the end of the stream: never the second's bytes.
        let (received, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof)
        XCTAssertLessThan(received.count, 4 << 20)
        XCTAssertEqual(received, patternData(received.count), "only the first write's bytes, in order")
    }

    /// A write not one byte of which was sent fails alone with the option, and the stream goes on whole.
    func testTimeoutsFailOnlyTheOperationFailsAWriteNotYetStarted() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate) { $0.timeoutsFailOnlyTheOperation = true }
        // Fill the kernel's buffers behind the socket's back, so the next write cannot send a byte.
        let filled = Locked(0)
        perform(client) {
            let pattern = [UInt8](patternData(4 << 20))
            while filled.value < pattern.count {
                let sent = pattern.withUnsafeBytes { all in
                    Glibc.send(client.fd, all.baseAddress! + filled.value, all.count - filled.value, Int32(MSG_DONTWAIT))
                }
                if sent <= 0 { break }
                filled.value += sent
            }
        }
        let fill = filled.value
        XCTAssertGreaterThan(fill, 0)
        client.write(Data("lost".utf8), withTimeout: 0.05, tag: 1)
        delegate.waitFor("the failed write") { if case .failedWrite(1, _) = $0 { return true } else { return false } }
        XCTAssertEqual(delegate.disconnects().count, 0)
        XCTAssertEqual(timeoutQuestions(delegate).last?.done, 0)
        client.write(Data("after".utf8), withTimeout: -1, tag: 2)
        let received = try peer.receive(exactly: fill + 5)
        XCTAssertEqual(received.prefix(fill), patternData(fill))
        XCTAssertEqual(received.suffix(5), Data("after".utf8), "the failed write left no byte behind")
        delegate.waitFor("write 2") { if case .wrote(2) = $0 { return true } else { return false } }
        XCTAssertTrue(client.isConnected)
    }
}
