import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// Every read variant against a raw peer the test drives byte by byte: tags, separators split at every
/// byte boundary, maxLength, the `NSMutableData` buffer variants, the documented no-ops, EOF, continuous mode.
final class ReadingTests: SocketTestCase {
    private func partialBytes(_ delegate: RecordingDelegate, tag: Int) -> UInt {
        delegate.events.reduce(0) { sum, event in
            if case .readPartial(let n, let t) = event, t == tag { return sum + n }
            return sum
        }
    }

    private func waitForPartial(_ delegate: RecordingDelegate, tag: Int, total: UInt, file: StaticString = #filePath, line: UInt = #line) {
        delegate.wait("\(total) partial bytes for tag \(tag)", file: file, line: line) { records in
            records.reduce(UInt(0)) { sum, record in
                if case .readPartial(let n, let t) = record.event, t == tag { return sum + n }
                return sum
            } >= total
        }
    }

    // MARK: Available bytes

    func testReadAvailableBytes() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(withTimeout: -1, tag: 1)
        try peer.send("hello")
        delegate.waitFor("a read") { if case .read = $0 { return true } else { return false } }
        let (data, tag) = delegate.reads()[0]
        XCTAssertEqual(tag, 1)
        XCTAssertFalse(data.isEmpty)
        XCTAssertEqual(data, Data("hello".utf8).prefix(data.count), "an available read returns what has arrived")
        XCTAssertEqual(delegate.count { if case .readPartial = $0 { return true } else { return false } }, 0,
                       "reads of available bytes report no partial progress")
    }

    func testReadAvailableWithMaxLengthLeavesTheRestForTheNextRead() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        try peer.send("abcdefgh")
        client.readData(toLength: 1, withTimeout: -1, tag: 0)  // Waits until the bytes are here.
        XCTAssertEqual(delegate.waitForReadBytes(1, tag: 0), Data("a".utf8))
        client.readData(withTimeout: -1, buffer: nil, bufferOffset: 0, maxLength: 3, tag: 1)
        client.readData(withTimeout: -1, buffer: nil, bufferOffset: 0, maxLength: 0, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 1), Data("bcd".utf8))
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 2), Data("efgh".utf8), "maxLength 0 means no cap")
    }

    // MARK: Readiness interest

    /// EPOLLIN stays armed after the last queued read completes (a reader that queues its next read later, as
    /// an `async` task does, costs no `epoll_ctl`), and is dropped once it fires with no read queued: the
    /// bytes stay in the kernel, so TCP still pushes back on the peer.
    func testReadInterestIsDroppedLazilyAndBytesStayInTheKernel() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let loop = client.eventLoop
        client.readData(withTimeout: -1, tag: 1)
        try peer.send("one")
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 1), Data("one".utf8))
        settle(loop)
        XCTAssertEqual(try onLoop(loop) { loop.interest(of: client.fd)?.contains(.readable) }, true,
                       "EPOLLIN is kept after the read completes")

        try peer.send("two")  // On loopback the bytes are queued on the socket when send returns.
        settle(loop)
        let (armed, buffered) = try onLoop(loop) { (loop.interest(of: client.fd)?.contains(.readable), client.pendingCount) }
        XCTAssertEqual(armed, false, "EPOLLIN is dropped after it fired with no read queued")
        XCTAssertEqual(buffered, 0, "nothing was read while no read was queued")

        client.readData(withTimeout: -1, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 2), Data("two".utf8))
        settle(loop)
        XCTAssertEqual(try onLoop(loop) { loop.interest(of: client.fd)?.contains(.readable) }, true)
    }

    /// Large chunks (normally one `recv` of the whole 40,000 bytes, as they wait in the kernel when the read is
    /// queued) are handed over in the loop's receive buffer instead of copied; the loop carries on with a new
    /// buffer. Every byte arrives, in order, round after round, in available reads and in continuous mode.
    func testLargeChunksArriveIntactRoundAfterRound() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        var received = Data()
        var expected = Data()
        for round in 0..<3 {
            var payload = patternData(40_000)
            payload[round] = 0xEE  // each round's bytes differ
            expected.append(payload)
            try peer.send(payload)
            settle(client.eventLoop)
            while received.count < expected.count {
                let before = delegate.reads().count
                client.readData(withTimeout: -1, tag: round)
                delegate.wait("read \(before + 1)") { records in
                    records.filter { if case .read = $0.event { return true } else { return false } }.count > before
                }
                received.append(delegate.reads()[before].0)
            }
        }
        XCTAssertEqual(received, expected)

        var continuous = Data()
        client.beginReceiving(tag: 9)
        let payload = patternData(100_000)
        let sent = onNewThread { try? peer.send(payload) }
        delegate.wait("100,000 continuous bytes") { records in
            records.reduce(0) { sum, record in
                if case .read(let data, 9) = record.event { return sum + data.count } else { return sum }
            } >= payload.count
        }
        for (data, tag) in delegate.reads() where tag == 9 { continuous.append(data) }
        XCTAssertEqual(continuous, payload)
        XCTAssertTrue(sent.wait())
    }

    // MARK: To length

    func testReadToLengthAcrossSeveralSegments() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        peer.setNoDelay()
        client.readData(toLength: 10, withTimeout: -1, tag: 3)
        try peer.send("01234")
        waitForPartial(delegate, tag: 3, total: 5)
        try peer.send("56789extra")
        XCTAssertEqual(delegate.waitForReadBytes(10, tag: 3), Data("0123456789".utf8))
        XCTAssertEqual(delegate.reads().count, 1, "one completion for one read")
        client.readData(toLength: 5, withTimeout: -1, tag: 4)
        XCTAssertEqual(delegate.waitForReadBytes(5, tag: 4), Data("extra".utf8), "bytes past the read wait in the prebuffer")
    }

    func testReadToLengthByteByByteReportsEveryIncrement() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        peer.setNoDelay()
        let message = Array("incremental".utf8)
        client.readData(toLength: UInt(message.count), withTimeout: -1, tag: 9)
        for (i, byte) in message.enumerated() {
            try peer.send(Data([byte]))
            if i < message.count - 1 { waitForPartial(delegate, tag: 9, total: UInt(i + 1)) }
        }
        XCTAssertEqual(delegate.waitForReadBytes(message.count, tag: 9), Data(message))
        let partials = delegate.events.compactMap { event -> UInt? in
            if case .readPartial(let n, 9) = event { return n }
            return nil
        }
        XCTAssertEqual(partials, Array(repeating: 1, count: message.count - 1), "one increment per byte, none for the completing byte")
    }

    func testLargeReadToLength() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let payload = patternData(3 << 20)
        client.readData(toLength: UInt(payload.count), withTimeout: -1, tag: 1)
        let sent = onNewThread { try? peer.send(payload) }
        XCTAssertEqual(delegate.waitForReadBytes(payload.count, tag: 1), payload)
        XCTAssertTrue(sent.wait())
    }

    // MARK: To separator

    func testReadToSeparatorReturnsEachLine() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(to: GCDAsyncSocket.crlfData(), withTimeout: -1, tag: 1)
        client.readData(to: GCDAsyncSocket.crlfData(), withTimeout: -1, tag: 2)
        client.readData(to: GCDAsyncSocket.lfData(), withTimeout: -1, tag: 3)
        try peer.send("line one\r\nline two\r\nthree\n")
        delegate.wait("three reads") { records in records.filter { if case .read = $0.event { return true } else { return false } }.count == 3 }
        let reads = delegate.reads()
        XCTAssertEqual(reads.map(\.1), [1, 2, 3])
        XCTAssertEqual(reads.map { String(decoding: $0.0, as: UTF8.self) }, ["line one\r\n", "line two\r\n", "three\n"])
    }

    /// The peer writes a message in two pieces, split at every possible byte; the socket must have taken
    /// in the first piece (its partial progress says so) before the second is sent.
    func testSeparatorSplitAtEveryByteBoundaryOverTheWire() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        peer.setNoDelay()
        let separator = Data("\r\n\r\n".utf8)
        let message = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        for split in 1..<message.count {
            let tag = 100 + split
            client.readData(to: separator, withTimeout: -1, tag: tag)
            try peer.send(Data(message[..<split]))
            waitForPartial(delegate, tag: tag, total: UInt(split))
            try peer.send(Data(message[split...]))
            XCTAssertEqual(delegate.waitForReadBytes(message.count, tag: tag), Data(message), "split at \(split)")
        }
        XCTAssertEqual(delegate.reads().count, message.count - 1)
    }

    func testSeparatorDeliveredOneByteAtATime() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        peer.setNoDelay()
        let separator = Data("--boundary--".utf8)
        // The message contains near-misses of the separator, and its prefix repeated.
        let message = Array("a--b--bound--boundar--boundary-x--boundary--".utf8)
        client.readData(to: separator, withTimeout: -1, tag: 1)
        for (i, byte) in message.enumerated() {
            try peer.send(Data([byte]))
            if i < message.count - 1 { waitForPartial(delegate, tag: 1, total: UInt(i + 1)) }
        }
        XCTAssertEqual(delegate.waitForReadBytes(message.count, tag: 1), Data(message))
        XCTAssertEqual(partialBytes(delegate, tag: 1), UInt(message.count - 1))
    }

    func testSeparatorWithMaxLength() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        // Exactly maxLength bytes ending in the separator is a success.
        client.readData(to: Data("\n".utf8), withTimeout: -1, maxLength: 4, tag: 1)
        try peer.send("abc\n")
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 1), Data("abc\n".utf8))
        // A maxLength shorter than the separator is a no-op.
        client.readData(to: Data("\r\n".utf8), withTimeout: -1, maxLength: 1, tag: 2)
        // maxLength bytes without the separator: the connection closes with readMaxedOutError.
        client.readData(to: Data("\n".utf8), withTimeout: -1, maxLength: 5, tag: 3)
        try peer.send("toolong\n")
        let error = delegate.waitForDisconnect()
        XCTAssertEqual(error.socketCode, .readMaxedOutError)
        XCTAssertEqual(delegate.reads().map(\.1), [1], "neither the no-op nor the maxed-out read completed")
        XCTAssertEqual(delegate.count { if case .read(_, 2) = $0 { return true } else { return false } }, 0)
    }

    // MARK: Tags

    func testTagsAreEchoedInOrder() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let tags = [0, -1, 42, Int.max, Int.min, 7]
        for tag in tags { client.readData(toLength: 2, withTimeout: -1, tag: tag) }
        for (i, tag) in tags.enumerated() { client.write(Data("w\(i)".utf8), withTimeout: -1, tag: tag) }
        try peer.send(String(repeating: "xy", count: tags.count))
        delegate.wait("all reads and writes") { records in
            records.filter { if case .read = $0.event { return true } else { return false } }.count == tags.count
                && records.filter { if case .wrote = $0.event { return true } else { return false } }.count == tags.count
        }
        XCTAssertEqual(delegate.reads().map(\.1), tags)
        let writeTags = delegate.events.compactMap { event -> Int? in if case .wrote(let tag) = event { return tag } else { return nil } }
        XCTAssertEqual(writeTags, tags)
        XCTAssertEqual(try peer.receive(exactly: 12), Data("w0w1w2w3w4w5".utf8))
    }

    // MARK: Buffer variants

    func testBufferVariantsWriteAtTheOffset() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)

        let available = NSMutableData(data: Data("XY".utf8))
        client.readData(withTimeout: -1, buffer: available, bufferOffset: 2, tag: 1)
        try peer.send("one")
        delegate.waitForReadBytes(3, tag: 1)
        XCTAssertEqual(available as Data, Data("XYone".utf8))

        let toLength = NSMutableData(data: Data("ABCDEF".utf8))
        client.readData(toLength: 3, withTimeout: -1, buffer: toLength, bufferOffset: 1, tag: 2)
        try peer.send("two")
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 2), Data("two".utf8), "the delegate gets only the bytes read")
        XCTAssertEqual(toLength as Data, Data("Atwo".utf8), "the buffer's length becomes offset + bytes read")

        let toSeparator = NSMutableData()
        client.readData(to: GCDAsyncSocket.crlfData(), withTimeout: -1, buffer: toSeparator, bufferOffset: 0, tag: 3)
        try peer.send("three\r\n")
        delegate.waitForReadBytes(7, tag: 3)
        XCTAssertEqual(toSeparator as Data, Data("three\r\n".utf8))

        let capped = NSMutableData(data: Data("#".utf8))
        client.readData(to: GCDAsyncSocket.zeroData(), withTimeout: -1, buffer: capped, bufferOffset: 1, maxLength: 5, tag: 4)
        try peer.send(Data([0x66, 0x6F, 0x75, 0x72, 0x00]))
        delegate.waitForReadBytes(5, tag: 4)
        XCTAssertEqual(capped as Data, Data([0x23, 0x66, 0x6F, 0x75, 0x72, 0x00]))

        let growing = NSMutableData()
        client.readData(toLength: 70_000, withTimeout: -1, buffer: growing, bufferOffset: 0, tag: 5)
        try peer.send(Data(repeating: 0x5A, count: 70_000))
        delegate.waitForReadBytes(70_000, tag: 5)
        XCTAssertEqual(growing.length, 70_000, "the buffer grows as needed")

        // A nil buffer behaves as the plain variant.
        client.readData(to: GCDAsyncSocket.crData(), withTimeout: -1, buffer: nil, bufferOffset: 0, tag: 6)
        try peer.send("six\r")
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 6), Data("six\r".utf8))
    }

    // MARK: Documented no-ops

    func testInvalidReadsAreSilentNoOps() throws {
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        client.readData(withTimeout: -1, tag: 99)  // Before connect: dropped.
        client.readData(toLength: 4, withTimeout: -1, tag: 98)
        let listener = try RawListener()
        try client.connect(toHost: "127.0.0.1", onPort: listener.port)
        let peer = try listener.accept()
        delegate.waitForConnect()

        let short = NSMutableData(data: Data("ab".utf8))
        client.readData(toLength: 0, withTimeout: -1, tag: 1)
        client.readData(to: Data(), withTimeout: -1, tag: 2)
        client.readData(to: Data(), withTimeout: -1, maxLength: 10, tag: 3)
        client.readData(to: Data("\r\n".utf8), withTimeout: -1, maxLength: 1, tag: 4)
        client.readData(withTimeout: -1, buffer: short, bufferOffset: 3, tag: 5)
        client.readData(toLength: 2, withTimeout: -1, buffer: short, bufferOffset: 3, tag: 6)
        client.readData(to: Data("x".utf8), withTimeout: -1, buffer: short, bufferOffset: 3, tag: 7)
        client.readData(to: Data("x".utf8), withTimeout: -1, buffer: short, bufferOffset: 9, maxLength: 4, tag: 8)
        client.readData(to: Data(), withTimeout: -1, buffer: nil, bufferOffset: 0, tag: 10)
        client.readData(toLength: 0, withTimeout: -1, buffer: nil, bufferOffset: 0, tag: 11)
        client.readData(toLength: 4, withTimeout: -1, tag: 12)
        try peer.send("data")
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 12), Data("data".utf8))
        settle(client.eventLoop)
        XCTAssertEqual(delegate.reads().map(\.1), [12], "only the valid read ran: \(delegate.events)")
        XCTAssertEqual(delegate.events.count, 2, "connect and one read, nothing else: \(delegate.events)")
        XCTAssertEqual(short as Data, Data("ab".utf8), "a no-op read leaves the buffer alone")
        var progress: Float = 0
        perform(client) { progress = client.progressOfRead(returningTag: nil, bytesDone: nil, total: nil) }
        XCTAssertTrue(progress.isNaN, "no read is in progress")
    }

    // MARK: Progress

    func testProgressOfRead() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(toLength: 10, withTimeout: -1, tag: 5)
        try peer.send("abc")
        waitForPartial(delegate, tag: 5, total: 3)
        var tag = 0
        var done: UInt = 0
        var total: UInt = 0
        var fraction: Float = 0
        perform(client) { fraction = client.progressOfRead(returningTag: &tag, bytesDone: &done, total: &total) }
        XCTAssertEqual(tag, 5)
        XCTAssertEqual(done, 3)
        XCTAssertEqual(total, 10)
        XCTAssertEqual(fraction, 0.3, accuracy: 0.0001)

        try peer.send("defghij")
        delegate.waitForReadBytes(10, tag: 5)
        client.readData(to: Data("!".utf8), withTimeout: -1, tag: 6)
        try peer.send("xy")
        waitForPartial(delegate, tag: 6, total: 2)
        perform(client) { fraction = client.progressOfRead(returningTag: &tag, bytesDone: &done, total: &total) }
        XCTAssertEqual(tag, 6)
        XCTAssertEqual(done, 2)
        XCTAssertEqual(fraction, 1, "a read with no fixed length reports 1.0")
    }

    // MARK: End of stream

    func testEOFMidReadDiscardsThePartialReadAndDisconnects() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        client.readData(toLength: 10, withTimeout: -1, tag: 1)
        client.readData(withTimeout: -1, tag: 2)
        try peer.send("abc")
        waitForPartial(delegate, tag: 1, total: 3)
        try peer.shutdownWrite()
        let error = delegate.waitForDisconnect()
        XCTAssertEqual(error.socketCode, .closedError)
        XCTAssertEqual((error as? GCDAsyncSocketError)?.message, "Socket closed by remote peer")
        settle(client.eventLoop)
        XCTAssertTrue(delegate.reads().isEmpty, "a partly filled read is discarded: \(delegate.events)")
        XCTAssertEqual(delegate.disconnects().count, 1)
        XCTAssertTrue(delegate.events.last?.isDisconnect ?? false)
    }

    func testBytesBufferedAtEOFAreNotLost() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        try peer.send("last words")
        try peer.shutdownWrite()
        // Nobody reads yet; the socket notices the hang-up and keeps the bytes.
        settle(client.eventLoop)
        XCTAssertTrue(client.isConnected, "still connected while unread bytes wait in the prebuffer")
        client.readData(toLength: 4, withTimeout: -1, tag: 1)
        client.readData(withTimeout: -1, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 1), Data("last".utf8))
        XCTAssertEqual(delegate.waitForReadBytes(6, tag: 2), Data(" words".utf8))
        // Once they are read, the end of the stream ends the connection.
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .closedError)
        settle(client.eventLoop)
        XCTAssertEqual(delegate.events.map(\.description).suffix(3), ["read(4 bytes, tag 1)", "read(6 bytes, tag 2)", "disconnected(GCDAsyncSocketError.closedError: Socket closed by remote peer)"])
    }

    // MARK: Callbacks that disconnect

    func testDisconnectInsideDidReadWhileBytesWaitInThePrebuffer() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        delegate.configure { hooks in
            hooks.read = { sock, _, tag in if tag == 2 { sock.disconnect() } }
        }
        client.readData(to: Data("\n".utf8), withTimeout: -1, tag: 1)
        try peer.send("a\nb\nc\nd\n")
        delegate.waitForReadBytes(2, tag: 1)
        settle(client.eventLoop)
        // "b\nc\nd\n" waits in the prebuffer; these complete from there, and the second disconnects.
        client.readData(to: Data("\n".utf8), withTimeout: -1, tag: 2)
        client.readData(to: Data("\n".utf8), withTimeout: -1, tag: 3)
        XCTAssertNil(delegate.waitForDisconnect())
        settle(client.eventLoop)
        XCTAssertEqual(delegate.reads().map(\.1), [1, 2])
        XCTAssertEqual(delegate.reads().map(\.0), [Data("a\n".utf8), Data("b\n".utf8)])
        XCTAssertTrue(delegate.events.last?.isDisconnect ?? false, "\(delegate.events)")
    }

    func testCallbacksChainReadsWithoutRecursion() throws {
        // 20,000 one-byte reads completed back to back from one chunk: each didRead queues the next read.
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let count = 20_000
        delegate.configure { hooks in
            hooks.read = { sock, _, tag in
                if tag + 1 < count { sock.readData(toLength: 1, withTimeout: -1, tag: tag + 1) }
            }
        }
        client.readData(toLength: 1, withTimeout: -1, tag: 0)
        try peer.send(Data(repeating: 0x41, count: count))
        delegate.wait("\(count) reads") { records in records.count == count + 1 }
        XCTAssertEqual(delegate.reads().map(\.1), Array(0..<count))
    }

    // MARK: Continuous mode

    func testBeginAndStopReceiving() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        peer.setNoDelay()
        client.beginReceiving(tag: 5)
        try peer.send("chunk1")
        delegate.waitForReadBytes(6, tag: 5)
        try peer.send("chunk2")
        XCTAssertEqual(delegate.waitForReadBytes(12, tag: 5), Data("chunk1chunk2".utf8))

        // A queued read takes precedence over continuous delivery.
        client.readData(toLength: 3, withTimeout: -1, tag: 6)
        perform(client) {}
        try peer.send("abc")
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 6), Data("abc".utf8))
        try peer.send("more")
        XCTAssertEqual(delegate.waitForReadBytes(16, tag: 5), Data("chunk1chunk2more".utf8))

        client.stopReceiving()
        perform(client) {}  // After this, stopReceiving has run.
        try peer.send("later")
        settle(client.eventLoop)
        XCTAssertEqual(delegate.readBytes(tag: 5), Data("chunk1chunk2more".utf8), "nothing is delivered after stopReceiving")
        client.readData(toLength: 5, withTimeout: -1, tag: 7)
        XCTAssertEqual(delegate.waitForReadBytes(5, tag: 7), Data("later".utf8), "the bytes waited in the kernel")
    }

    func testBeginReceivingBeforeConnectIsIgnored() throws {
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        client.beginReceiving(tag: 1)
        let listener = try RawListener()
        try client.connect(toHost: "127.0.0.1", onPort: listener.port)
        let peer = try listener.accept()
        delegate.waitForConnect()
        try peer.send("x")
        client.readData(toLength: 1, withTimeout: -1, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(1, tag: 2), Data("x".utf8))
        XCTAssertTrue(delegate.reads().allSatisfy { $0.1 == 2 })
    }
}
