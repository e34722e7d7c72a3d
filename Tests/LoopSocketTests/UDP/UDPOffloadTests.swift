import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// UDP segmentation offload: runs of equal datagrams leave as one `UDP_SEGMENT` message (GSO) and coalesced
/// runs (`UDP_GRO`) are split back, with the same datagrams, order and callbacks as without it. Loopback
/// takes both on the kernels this runs on (4.18+ for GSO, 5.0+ for GRO); a kernel without them fails the
/// tests that need them, with that reason, instead of skipping them.
final class UDPOffloadTests: SocketTestCase {
    /// `sizes` as datagrams numbered in their first byte, queued in one loop turn (so they leave in one batch).
    private func queueRun(_ sender: GCDAsyncUdpSocket, _ sizes: [Int], to receiver: GCDAsyncUdpSocket) -> [Data] {
        let datagrams = sizes.enumerated().map { i, size -> Data in
            var data = patternData(size)
            if size > 0 { data[0] = UInt8(i) }
            return data
        }
        let port = receiver.localPort()
        sender.perform {
            for (i, data) in datagrams.enumerated() { sender.send(data, toHost: "127.0.0.1", port: port, withTimeout: -1, tag: i) }
        }
        return datagrams
    }

    private func counters(_ socket: GCDAsyncUdpSocket) -> (sent: Int, received: Int) {
        var result = (0, 0)
        socket.perform { result = (socket.segmentedMessagesSent, socket.coalescedMessagesReceived) }
        return result
    }

    /// Fails the test, with the reason, unless the socket's IPv4 descriptor took both `UDP_SEGMENT` and
    /// `UDP_GRO`; returns whether it did.
    private func requireOffload(_ socket: GCDAsyncUdpSocket, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        var available = false
        socket.perform { available = socket.channel4?.canSegment == true && socket.channel4?.coalesces == true }
        XCTAssertTrue(available, "no UDP GSO/GRO on this kernel's loopback (4.18+ and 5.0+ have them)", file: file, line: line)
        return available
    }

    private func makeSender() throws -> (GCDAsyncUdpSocket, UDPRecorder) {
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate)
        try sender.bind(toPort: 0, interface: "127.0.0.1")
        return (sender, delegate)
    }

    func testARunLeavesAsOneSegmentedMessageAndArrivesAsSeparateDatagrams() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = makeUDP(receiverDelegate)
        receiver.setSegmentationOffloadEnabled(false)  // the kernel splits the run: what a plain peer sees
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        try receiver.beginReceiving()
        let (sender, senderDelegate) = try makeSender()
        guard requireOffload(sender) else { return }

        let sent = queueRun(sender, Array(repeating: 100, count: 20) + [40], to: receiver)
        receiverDelegate.waitForReceived(sent.count)
        senderDelegate.waitForOutcomes(sent.count)
        XCTAssertEqual(receiverDelegate.received, sent, "every datagram, whole and in order")
        XCTAssertEqual(senderDelegate.sentTags, Array(0..<sent.count), "one didSend per datagram, in order")
        XCTAssertEqual(counters(sender).sent, 1, "the run left as one UDP_SEGMENT message")
        XCTAssertEqual(counters(receiver).received, 0)
    }

    func testACoalescedRunIsSplitBackIntoItsDatagrams() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        let (sender, _) = try makeSender()
        guard requireOffload(receiver) else { return }

        let sent = queueRun(sender, Array(repeating: 300, count: 30) + [7], to: receiver)
        receiverDelegate.waitForReceived(sent.count)
        XCTAssertEqual(receiverDelegate.received, sent)
        XCTAssertGreaterThanOrEqual(counters(receiver).received, 1, "loopback handed the run over coalesced")
        let senders = Set(receiverDelegate.receivedRecords.map { GCDAsyncUdpSocket.port(fromAddress: $0.address) })
        XCTAssertEqual(senders, [sender.localPort()], "every split datagram carries the sender's address")
    }

    func testMixedSizesAndEmptyDatagramsKeepTheirBoundariesAndOrder() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        let (sender, _) = try makeSender()
        // Runs broken by a longer datagram, a shorter one, an empty one, and one past the segment limit.
        let sizes = [64, 64, 64, 65, 65, 10, 64, 0, 0, 64, 64, 1_000, 1_000, 999, 1_000] + Array(repeating: 2_000, count: 40)
        let sent = queueRun(sender, sizes, to: receiver)
        receiverDelegate.waitForReceived(sent.count)
        XCTAssertEqual(receiverDelegate.received, sent)
    }

    func testWithOffloadDisabledEveryDatagramIsItsOwnMessage() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        let (sender, _) = try makeSender()
        sender.setSegmentationOffloadEnabled(false)
        XCTAssertFalse(sender.isSegmentationOffloadEnabled())
        let sent = queueRun(sender, Array(repeating: 100, count: 20), to: receiver)
        receiverDelegate.waitForReceived(sent.count)
        XCTAssertEqual(receiverDelegate.received, sent)
        XCTAssertEqual(counters(sender).sent, 0)
        XCTAssertEqual(counters(receiver).received, 0, "nothing was coalesced")
    }

    func testASegmentedSendTheRouteRefusesGoesAgainAsPlainDatagrams() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        let (sender, senderDelegate) = try makeSender()
        guard requireOffload(sender) else { return }
        // What a device without checksum offload answers to UDP_SEGMENT.
        let faults = FaultInjection.Scope()
        defer { faults.end() }
        faults.inject(Errno(rawValue: EIO), into: .sendmmsg, count: 1, on: .descriptor(sender.socket4FD()))

        let sent = queueRun(sender, Array(repeating: 100, count: 20), to: receiver)
        receiverDelegate.waitForReceived(sent.count)
        senderDelegate.waitForOutcomes(sent.count)
        XCTAssertEqual(receiverDelegate.received, sent)
        XCTAssertTrue(senderDelegate.failedSends.isEmpty, "the refusal cost no datagram: \(senderDelegate.failedSends)")
        XCTAssertEqual(faults.pendingFailures, 0)
        XCTAssertEqual(counters(sender).sent, 0, "the socket stopped segmenting")
        // A plain send failing with EIO is still reported, not retried forever.
        faults.inject(Errno(rawValue: EIO), into: .sendmmsg, count: 1, on: .descriptor(sender.socket4FD()))
        sender.send(Data([1]), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 99)
        senderDelegate.wait("the failed send") { events in
            events.contains { if case .notSent(99, _) = $0 { return true } else { return false } }
        }
    }

    func testReceiveOnceTakesOneDatagramOfACoalescedRunAtATime() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = makeUDP(receiverDelegate)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        let (sender, senderDelegate) = try makeSender()
        let sent = queueRun(sender, Array(repeating: 200, count: 5), to: receiver)
        senderDelegate.waitForOutcomes(sent.count)
        for i in 0..<sent.count {
            try receiver.receiveOnce()
            receiverDelegate.waitForReceived(i + 1)
            XCTAssertEqual(receiverDelegate.received.count, i + 1, "one datagram per receiveOnce")
        }
        XCTAssertEqual(receiverDelegate.received, sent)
        if requireOffload(receiver) { XCTAssertEqual(counters(receiver).received, 1, "the five came as one message") }
    }

    func testDatagramsOfACoalescedRunLongerThanTheReceiveLimitAreReportedNotDelivered() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = makeUDP(receiverDelegate)
        receiver.setMaxReceiveIPv4BufferSize(150)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        try receiver.beginReceiving()
        let (sender, _) = try makeSender()
        let sent = queueRun(sender, Array(repeating: 200, count: 4) + [100], to: receiver)
        receiverDelegate.waitForReceived(1)
        receiverDelegate.wait("four oversized reports") { events in
            events.filter { if case .notReceived = $0 { return true } else { return false } }.count >= 4
        }
        XCTAssertEqual(receiverDelegate.received, [sent[4]])
        if requireOffload(receiver) { XCTAssertEqual(counters(receiver).received, 1, "the five came as one message") }
        XCTAssertTrue(receiverDelegate.receiveErrors.allSatisfy { $0.errno?.rawValue == EMSGSIZE })
    }
}
