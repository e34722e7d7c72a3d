import Dispatch
import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// receiveOnce versus beginReceiving, pausing mid-batch, filters, sizes, a flood.
final class UDPReceivingTests: SocketTestCase {
    /// Sends `count` datagrams `prefix0`, `prefix1`, … to `port` and waits until every send is reported.
    private func blast(_ count: Int, to port: UInt16, prefix: String = "d", host: String = "127.0.0.1") {
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate)
        for i in 0..<count { sender.send(Data("\(prefix)\(i)".utf8), toHost: host, port: port, withTimeout: -1, tag: i) }
        delegate.waitForOutcomes(count)
        XCTAssertEqual(delegate.sentTags.count, count)
    }

    /// Waits for one loop iteration of `socket`'s loop to pass, so what it would deliver has been delivered.
    private func settle(_ socket: GCDAsyncUdpSocket) {
        for _ in 0..<3 { socket.perform {} }
    }

    private func strings(_ delegate: UDPRecorder) -> [String] {
        delegate.received.map { String(decoding: $0, as: UTF8.self) }
    }

    func testReceiveOnceDeliversOneDatagramPerCall() throws {
        let delegate = UDPRecorder()
        let receiver = makeUDP(delegate)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        blast(3, to: receiver.localPort())
        try receiver.receiveOnce()
        delegate.waitForReceived(1)
        settle(receiver)
        XCTAssertEqual(strings(delegate), ["d0"])
        try receiver.receiveOnce()
        delegate.waitForReceived(2)
        settle(receiver)
        XCTAssertEqual(strings(delegate), ["d0", "d1"])
        try receiver.beginReceiving()
        delegate.waitForReceived(3)
        XCTAssertEqual(strings(delegate), ["d0", "d1", "d2"])
    }

    func testPauseInsideABatchLosesNothing() throws {
        let delegate = UDPRecorder()
        delegate.onReceive = { sock, _, _ in sock.pauseReceiving() }
        let receiver = makeUDP(delegate)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        blast(10, to: receiver.localPort())
        try receiver.beginReceiving()  // all ten are waiting: one recvmmsg takes them, the first callback pauses
        delegate.waitForReceived(1)
        settle(receiver)
        XCTAssertEqual(strings(delegate), ["d0"])
        delegate.onReceive = nil
        try receiver.beginReceiving()
        delegate.waitForReceived(10)
        XCTAssertEqual(strings(delegate), (0..<10).map { "d\($0)" })
    }

    func testBatchSizeOneStillReceivesEverything() throws {
        let delegate = UDPRecorder()
        let receiver = makeUDP(delegate)
        receiver.setReceiveBatchSize(1)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        try receiver.beginReceiving()
        blast(50, to: receiver.localPort())
        delegate.waitForReceived(50)
        XCTAssertEqual(strings(delegate), (0..<50).map { "d\($0)" })
    }

    func testZeroLengthAndMaximumSizeDatagrams() throws {
        let delegate = UDPRecorder()
        let receiver = try makeReceiver(delegate)
        let senderDelegate = UDPRecorder()
        let sender = makeUDP(senderDelegate)
        let largest = patternData(65_507)  // 65,535 - 20 (IPv4) - 8 (UDP)
        sender.send(Data(), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 1)
        sender.send(largest, toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 2)
        sender.send(largest + Data([0]), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 3)
        senderDelegate.waitForOutcomes(3)
        delegate.waitForReceived(2)
        XCTAssertEqual(delegate.received, [Data(), largest])
        XCTAssertEqual(senderDelegate.sentTags, [1, 2])
        XCTAssertEqual(senderDelegate.failedSends.first?.tag, 3)
        XCTAssertEqual(senderDelegate.failedSends.first?.error?.errno, Errno(rawValue: EMSGSIZE))
    }

    func testDatagramOverTheMaximumSendSizeIsRefused() throws {
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate)
        sender.setMaxSendBufferSize(100)
        sender.send(Data(count: 101), toHost: "127.0.0.1", port: 9, withTimeout: -1, tag: 1)
        delegate.waitForOutcomes(1)
        XCTAssertEqual(delegate.failedSends.first?.error?.code, .badParamError)
    }

    func testDatagramLargerThanTheReceiveSizeIsReportedAndDropped() throws {
        let delegate = UDPRecorder()
        let receiver = makeUDP(delegate)
        receiver.setMaxReceiveIPv4BufferSize(100)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        try receiver.beginReceiving()
        let sender = makeUDP(UDPRecorder())
        sender.send(Data(count: 200), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 1)
        sender.send(Data(count: 100), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 2)
        delegate.waitForReceived(1)
        XCTAssertEqual(delegate.received.map(\.count), [100], "the long datagram is not delivered cut")
        XCTAssertEqual(delegate.receiveErrors.map(\.errno), [Errno(rawValue: EMSGSIZE)])
        XCTAssertFalse(receiver.isClosed())
    }

    func testReceiveFilterInlineDropsAndPassesContext() throws {
        let delegate = UDPRecorder()
        let receiver = try makeReceiver(delegate)
        receiver.setReceiveFilter({ data, _, context in
            context.pointee = data.count as AnyObject
            return data.first != UInt8(ascii: "x")
        }, withQueue: nil)
        let sender = makeUDP(UDPRecorder())
        for text in ["a", "xx", "bbb"] { sender.send(Data(text.utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 0) }
        delegate.waitForReceived(2)
        settle(receiver)
        XCTAssertEqual(strings(delegate), ["a", "bbb"])
        XCTAssertEqual(delegate.receivedRecords.map { $0.context as? Int }, [1, 3])
    }

    func testReceiveFilterOnQueueWithReceiveOnce() throws {
        let delegate = UDPRecorder()
        let receiver = makeUDP(delegate)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        let filterQueue = makeQueue("filter")
        receiver.setReceiveFilter({ data, _, context in
            context.pointee = DispatchQueue.getSpecific(key: RecordingDelegate.queueKey).map { $0 as AnyObject }
            return data != Data("drop".utf8)
        }, withQueue: filterQueue, isAsynchronous: false)
        let sender = makeUDP(UDPRecorder())
        for text in ["drop", "drop", "keep", "later"] {
            sender.send(Data(text.utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 0)
        }
        try receiver.receiveOnce()
        delegate.waitForReceived(1)
        settle(receiver)
        filterQueue.sync {}
        settle(receiver)
        XCTAssertEqual(strings(delegate), ["keep"], "receiveOnce ends at the first datagram the filter lets through")
        XCTAssertEqual(delegate.receivedRecords.first?.context as? String, "filter")
    }

    func testSendFilterDropsAreReportedAsSent() throws {
        let delegate = UDPRecorder()
        let receiver = try makeReceiver(delegate)
        let senderDelegate = UDPRecorder()
        let sender = makeUDP(senderDelegate)
        let seen = Locked<[Int]>([])
        sender.setSendFilter({ _, address, tag in
            seen.withLock { $0.append(tag) }
            XCTAssertEqual(GCDAsyncUdpSocket.port(fromAddress: address), receiver.localPort())
            return tag % 2 == 0
        }, withQueue: makeQueue("send-filter"))
        for tag in 0..<6 { sender.send(Data("\(tag)".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: tag) }
        senderDelegate.waitForOutcomes(6)
        delegate.waitForReceived(3)
        XCTAssertEqual(senderDelegate.sentTags, Array(0..<6))
        XCTAssertEqual(seen.value, Array(0..<6))
        sender.send(Data("end".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 100)
        delegate.waitForReceived(4)
        XCTAssertEqual(strings(delegate), ["0", "2", "4", "end"])
    }

    func testFloodOverrunningTheSocketBufferLeavesTheSocketWorking() throws {
        let delegate = UDPRecorder()
        let receiver = makeUDP(delegate)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        receiver.perform { _ = try? Syscall.setOption(receiver.socket4FD(), level: SOL_SOCKET, name: SO_RCVBUF, value: 4096) }
        // Not receiving: the kernel's buffer fills and drops the rest.
        let senderDelegate = UDPRecorder()
        let sender = makeUDP(senderDelegate)
        sender.setMaxQueuedSendBytes(16 << 20)
        let count = 2_000
        for i in 0..<count { sender.send(patternData(1000), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: i) }
        senderDelegate.waitForOutcomes(count)
        XCTAssertEqual(senderDelegate.sentTags.count, count)
        try receiver.beginReceiving()
        delegate.waitForReceived(1)
        sender.send(Data("marker".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: -1)
        delegate.wait("the marker after the flood") { $0.contains { if case .received(let d, _, _) = $0 { return d == Data("marker".utf8) } else { return false } } }
        let received = delegate.received.count - 1
        XCTAssertGreaterThan(received, 0)
        XCTAssertLessThan(received, count, "a 4 KiB buffer cannot hold 2,000 datagrams")
        XCTAssertTrue(delegate.received.dropLast().allSatisfy { $0 == patternData(1000) })
    }

    /// A delegate queue that stops draining must not make the socket queue datagrams in memory without bound:
    /// past `maxDeliveriesInFlight` the loop stops reading and the kernel's socket buffer takes (and drops)
    /// the rest; once the queue drains, receiving resumes on its own.
    func testStalledDelegateQueueBoundsDatagramsQueuedInMemory() throws {
        let queue = DispatchQueue(label: "udp-stalled-delegate")
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }  // stalls every delivery until the gate opens
        let delegate = UDPRecorder()
        let receiver = try makeReceiver(delegate, queue: queue)
        let bound = GCDAsyncUdpSocket.maxDeliveriesInFlight
        let senderDelegate = UDPRecorder()
        let sender = makeUDP(senderDelegate)
        sender.setMaxQueuedSendBytes(16 << 20)
        let count = bound * 3
        for i in 0..<count { sender.send(patternData(32), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: i) }
        senderDelegate.waitForOutcomes(count)
        XCTAssertEqual(senderDelegate.sentTags.count, count)
        // Loopback delivers inside sendmmsg: the datagrams not dropped are in the receiver's buffer or queued.
        // Wait (bounded) for the loop to reach the bound, then check it stopped there and left the rest unread.
        let reached = ConditionWaiter().wait { receiver.deliveriesInFlight.load(ordering: .relaxed) >= bound }
        XCTAssertTrue(reached, "the loop should read until the bound")
        receiver.perform {}  // a full loop iteration after the readiness events
        let inFlight = receiver.deliveriesInFlight.load(ordering: .relaxed)
        XCTAssertLessThanOrEqual(inFlight, bound + DatagramScratch.maxBatch, "at most one batch past the bound")
        var pending: Int32 = 0
        XCTAssertEqual(ioctl(receiver.socket4FD(), UInt(FIONREAD), &pending), 0)
        XCTAssertGreaterThan(pending, 0, "the rest waits in the kernel's buffer, unread")
        gate.signal()
        delegate.waitForReceived(inFlight + 1)  // reading resumed after the queue drained
        sender.send(Data("marker".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: -1)
        delegate.wait("the marker after the stall") { $0.contains { if case .received(let d, _, _) = $0 { return d == Data("marker".utf8) } else { return false } } }
        XCTAssertTrue(delegate.received.dropLast().allSatisfy { $0 == patternData(32) })
        // The marker's delivery block still holds the socket (and so its loop's shared state, whose reserve
        // descriptor the tear-down counts) until it returns: let it.
        queue.sync {}
    }
}
