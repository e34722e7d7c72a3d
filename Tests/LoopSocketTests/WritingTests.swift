import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// Writes: completion and progress, gathering, backpressure (water marks, the hard cap), and the rule that
/// every write ends in `didWriteDataWithTag` or `didFailToWriteDataWithTag`.
final class WritingTests: SocketTestCase {
    private func writeOutcomes(_ delegate: RecordingDelegate) -> [Int: [String]] {
        var outcomes: [Int: [String]] = [:]
        for event in delegate.events {
            switch event {
            case .wrote(let tag): outcomes[tag, default: []].append("wrote")
            case .failedWrite(let tag, _): outcomes[tag, default: []].append("failed")
            default: break
            }
        }
        return outcomes
    }

    /// A client whose writes back up quickly: tiny send buffer, tiny receive buffer at the peer, which
    /// does not read until told to.
    private func congestedPair(_ delegate: RecordingDelegate, configure: (inout SocketOptions) -> Void = { _ in }) throws -> (GCDAsyncSocket, RawSocket) {
        try connectToRawPeer(delegate, listenerReceiveBuffer: 4096) { client in
            var options = client.options
            options.sendBufferSize = 4096
            configure(&options)
            client.options = options
        }
    }

    func testWritesArriveInOrderWithTheirTags() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.write(Data("one ".utf8), withTimeout: -1, tag: 1)
        client.write(Data("two ".utf8), withTimeout: -1, tag: 2)
        client.write(Data("three".utf8), withTimeout: 5, tag: 3)
        XCTAssertEqual(try peer.receive(exactly: 13), Data("one two three".utf8))
        delegate.wait("three writes") { records in records.filter { if case .wrote = $0.event { return true } else { return false } }.count == 3 }
        XCTAssertEqual(writeOutcomes(delegate), [1: ["wrote"], 2: ["wrote"], 3: ["wrote"]])
    }

    func testEmptyWriteIsANoOp() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.write(Data(), withTimeout: -1, tag: 1)
        client.write(Data("x".utf8), withTimeout: -1, tag: 2)
        XCTAssertEqual(try peer.receive(exactly: 1), Data("x".utf8))
        delegate.waitFor("write 2") { if case .wrote(2) = $0 { return true } else { return false } }
        settle(client.eventLoop)
        XCTAssertEqual(writeOutcomes(delegate), [2: ["wrote"]])
    }

    /// Many small writes queued in one go go out gathered (`sendmsg` of up to 64 iovecs) and arrive intact.
    func testManySmallWritesQueuedTogetherArriveIntactAndInOrder() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        var expected = Data()
        let count = 1000
        perform(client) {
            for i in 0..<count {
                let piece = Data("<\(i):\(String(repeating: "x", count: i % 37))>".utf8)
                expected.append(piece)
                client.write(piece, withTimeout: -1, tag: i)
            }
            XCTAssertEqual(client.queuedWriteByteCount, expected.count, "nothing is sent inside the caller's own call")
        }
        XCTAssertEqual(try peer.receive(exactly: expected.count), expected)
        delegate.wait("\(count) writes") { records in records.filter { if case .wrote = $0.event { return true } else { return false } }.count == count }
        let tags = delegate.events.compactMap { event -> Int? in if case .wrote(let tag) = event { return tag } else { return nil } }
        XCTAssertEqual(tags, Array(0..<count), "completions in queue order")
        var left = -1
        perform(client) { left = client.queuedWriteByteCount }
        XCTAssertEqual(left, 0)
    }

    func testLargeWriteReportsPartialProgress() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        let payload = patternData(4 << 20)
        client.write(payload, withTimeout: -1, tag: 7)
        XCTAssertEqual(try peer.receive(exactly: payload.count), payload)
        delegate.waitFor("the write") { if case .wrote(7) = $0 { return true } else { return false } }
        let partials = delegate.events.compactMap { event -> UInt? in
            if case .wrotePartial(let n, 7) = event { return n }
            return nil
        }
        XCTAssertFalse(partials.isEmpty, "a 4 MiB write through a 4 KiB buffer goes out in pieces")
        XCTAssertLessThan(partials.reduce(0, +), UInt(payload.count))
    }

    func testProgressOfWrite() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        var fraction: Float = 0
        perform(client) { fraction = client.progressOfWrite(returningTag: nil, bytesDone: nil, total: nil) }
        XCTAssertTrue(fraction.isNaN, "no write in progress")
        let size = 2 << 20
        client.write(patternData(size), withTimeout: -1, tag: 4)
        delegate.waitFor("partial write") { if case .wrotePartial = $0 { return true } else { return false } }
        var tag = 0
        var done: UInt = 0
        var total: UInt = 0
        perform(client) { fraction = client.progressOfWrite(returningTag: &tag, bytesDone: &done, total: &total) }
        XCTAssertEqual(tag, 4)
        XCTAssertEqual(total, UInt(size))
        XCTAssertGreaterThan(done, 0)
        XCTAssertLessThan(done, UInt(size))
        XCTAssertEqual(fraction, Float(done) / Float(size), accuracy: 0.0001)
        _ = try peer.receive(exactly: size)
    }

    // MARK: Backpressure

    func testHighAndLowWaterMarks() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate) { options in
            options.writeHighWaterMark = 64 * 1024
            options.writeLowWaterMark = 16 * 1024
        }
        XCTAssertEqual(client.options.writeHighWaterMark, 64 * 1024)
        perform(client) {
            client.write(patternData(40 * 1024), withTimeout: -1, tag: 1)
            XCTAssertEqual(delegate.count { if case .writability = $0 { return true } else { return false } }, 0,
                           "below the high water mark: no callback")
            client.write(patternData(40 * 1024), withTimeout: -1, tag: 2)
        }
        delegate.waitFor("not writable") { if case .writability(false) = $0 { return true } else { return false } }
        _ = try peer.receive(exactly: 80 * 1024)
        delegate.waitFor("write 2") { if case .wrote(2) = $0 { return true } else { return false } }
        let sequence = delegate.events.compactMap { event -> String? in
            switch event {
            case .writability(let writable): return writable ? "writable" : "not writable"
            case .wrote(let tag): return "wrote \(tag)"
            default: return nil
            }
        }
        XCTAssertEqual(sequence.first, "not writable", "\(sequence)")
        XCTAssertEqual(sequence.filter { $0 == "writable" }.count, 1, "\(sequence)")
        XCTAssertEqual(sequence.filter { $0 == "not writable" }.count, 1, "\(sequence)")
        let writableAt = try XCTUnwrap(sequence.firstIndex(of: "writable"))
        XCTAssertLessThan(writableAt, try XCTUnwrap(sequence.firstIndex(of: "wrote 2")), "writable again before the queue is empty: \(sequence)")
    }

    func testMaxQueuedWriteBytesFailsTheWriteThatWouldExceedIt() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate) { $0.maxQueuedWriteBytes = 100_000 }
        perform(client) {
            client.write(patternData(60_000), withTimeout: -1, tag: 1)
            client.write(patternData(60_000), withTimeout: -1, tag: 2)
            client.write(patternData(40_000), withTimeout: -1, tag: 3)
        }
        delegate.waitFor("the refused write") { if case .failedWrite(2, _) = $0 { return true } else { return false } }
        guard case .failedWrite(2, let error)? = delegate.events.dropFirst().first else {
            return XCTFail("the over-cap write fails at once: \(delegate.events)")
        }
        XCTAssertEqual(error.socketError?.code, .otherError)
        XCTAssertTrue(error.socketError?.message.contains("Write queue full") ?? false, "\(error)")
        XCTAssertEqual(try peer.receive(exactly: 100_000), patternData(60_000) + patternData(40_000))
        delegate.waitFor("write 3") { if case .wrote(3) = $0 { return true } else { return false } }
        XCTAssertEqual(writeOutcomes(delegate), [1: ["wrote"], 2: ["failed"], 3: ["wrote"]])
        XCTAssertTrue(client.isConnected, "a refused write does not close the socket")
        client.write(patternData(90_000), withTimeout: -1, tag: 4)
        XCTAssertEqual(try peer.receive(exactly: 90_000).count, 90_000, "the cap counts only queued bytes")
    }

    // MARK: Failures

    func testEveryQueuedWriteEndsInWroteOrFailedWhenDisconnected() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try congestedPair(delegate)
        for tag in 0..<10 { client.write(patternData(512 * 1024), withTimeout: -1, tag: tag) }
        delegate.waitFor("the kernel buffer to fill") { if case .wrotePartial = $0 { return true } else { return false } }
        client.disconnect()
        XCTAssertNil(delegate.waitForDisconnect())
        settle(client.eventLoop)
        let outcomes = writeOutcomes(delegate)
        XCTAssertEqual(outcomes.count, 10, "\(outcomes)")
        for tag in 0..<10 {
            XCTAssertEqual(outcomes[tag]?.count, 1, "write \(tag) ended exactly once: \(outcomes)")
        }
        XCTAssertEqual(outcomes[9], ["failed"])
        for event in delegate.events {
            if case .failedWrite(_, let error) = event {
                XCTAssertEqual(error.socketError?.code, .closedError, "\(error)")
            }
        }
        XCTAssertTrue(delegate.events.last?.isDisconnect ?? false, "socketDidDisconnect comes last: \(delegate.events)")
        peer.close()
    }

    func testWriteAfterPeerClosedEndsInOneDisconnectWithAnError() throws {
        let delegate = makeDelegate("client")
        // Without autoDisconnectOnClosedReadStream the socket stays open after the peer's FIN, "until a
        // write fails" (GCDAsyncSocket's half-duplex rule): the peer has closed completely, so it resets.
        let (client, peer) = try connectToRawPeer(delegate) { $0.autoDisconnectOnClosedReadStream = false }
        peer.close()
        delegate.waitFor("the read stream to close") { if case .closedReadStream = $0 { return true } else { return false } }
        // Keep writing until the peer's reset comes back.
        delegate.configure { hooks in
            hooks.wrote = { sock, tag in sock.write(Data("again".utf8), withTimeout: -1, tag: tag + 1) }
        }
        client.write(Data("hello?".utf8), withTimeout: -1, tag: 0)
        let error = try XCTUnwrap(delegate.waitForDisconnect() as? GCDAsyncSocketError)
        XCTAssertTrue([.brokenPipe, .connectionReset].contains(error.errno), "\(error)")
        settle(client.eventLoop)
        XCTAssertEqual(delegate.disconnects().count, 1)
        XCTAssertTrue(delegate.events.last?.isDisconnect ?? false, "\(delegate.events)")
        let outcomes = writeOutcomes(delegate)
        XCTAssertTrue(outcomes.values.allSatisfy { $0.count == 1 }, "\(outcomes)")
        client.write(Data("after".utf8), withTimeout: -1, tag: 1000)
        delegate.waitFor("the refused write") { if case .failedWrite(1000, _) = $0 { return true } else { return false } }
        guard case .failedWrite(1000, let late)? = delegate.events.last else { return XCTFail("\(delegate.events)") }
        XCTAssertEqual(late.socketError?.code, .badConfigError, "a write on a disconnected socket fails")
    }

    func testWriteBeforeConnectFails() throws {
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        client.write(Data("early".utf8), withTimeout: -1, tag: 5)
        delegate.waitFor("failed write") { if case .failedWrite(5, _) = $0 { return true } else { return false } }
        XCTAssertEqual(delegate.events.count, 1)
        XCTAssertTrue(client.isDisconnected)
    }

    func testWriteOnAShutDownLoopFailsOnTheCallersThread() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        defer { peer.close() }
        try group.shutdownGracefully(timeout: .seconds(10))
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .badConfigError, "the loop's shutdown disconnects the socket")
        client.write(Data("late".utf8), withTimeout: -1, tag: 3)
        guard case .failedWrite(3, let error)? = delegate.events.last else { return XCTFail("\(delegate.events)") }
        XCTAssertEqual(error.socketError?.code, .badConfigError)
    }

    /// Whether `socket` skips write completions (its delegate took the default), read on its loop.
    private func ignoresWrites(_ socket: GCDAsyncSocket) throws -> Bool {
        try onLoop(socket.eventLoop) {
            if case .delegateIgnoringWrites = socket.recipient { return true }
            return false
        }
    }

    /// A delegate that takes the default `didWriteDataWithTag` is not called for completed writes (the
    /// socket notes that the default ran, and new sockets for that delegate type start so), but a delegate
    /// set later that implements it hears of every write, and the default run on some other object, or off
    /// the loop, changes nothing for the socket.
    func testWriteCompletionsReachADelegateSetAfterOneThatTakesTheDefault() throws {
        let recording = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(recording)
        defer { peer.close() }
        let plain = PlainDelegate()
        client.delegate = plain
        XCTAssertTrue(try onLoop(client.eventLoop) { client.loopDelegate === plain })
        client.write(Data("one".utf8), withTimeout: -1, tag: 1)
        XCTAssertEqual(try peer.receive(exactly: 3), Data("one".utf8))
        settle(client.eventLoop)
        XCTAssertTrue(try ignoresWrites(client), "the default ran on the socket's own delegate and was noted")
        XCTAssertTrue(try ignoresWrites(makeSocket(PlainDelegate())), "a new socket for that type starts without it")
        XCTAssertFalse(try ignoresWrites(makeSocket(recording)))

        client.delegate = recording
        XCTAssertTrue(try onLoop(client.eventLoop) { client.loopDelegate === recording })
        client.write(Data("two".utf8), withTimeout: -1, tag: 2)
        recording.waitFor("write 2") { if case .wrote(2) = $0 { return true } else { return false } }

        // The default, called on an object that is not the socket's delegate (on the loop and off it).
        PlainDelegate().socket(client, didWriteDataWithTag: 0)
        _ = try onLoop(client.eventLoop) { PlainDelegate().socket(client, didWriteDataWithTag: 0) }
        XCTAssertFalse(try ignoresWrites(client))
        client.write(Data("three".utf8), withTimeout: -1, tag: 3)
        recording.waitFor("write 3") { if case .wrote(3) = $0 { return true } else { return false } }
        XCTAssertEqual(try peer.receive(exactly: 8), Data("twothree".utf8))
        XCTAssertEqual(writeOutcomes(recording), [2: ["wrote"], 3: ["wrote"]])
    }
}

/// A delegate that implements no callback: every one is the protocol's default.
private final class PlainDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {}
