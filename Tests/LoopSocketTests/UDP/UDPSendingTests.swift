import Dispatch
import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Sending under pressure and closing: timeouts, EAGAIN and ENOBUFS (injected through the syscall seam), the
/// queue bound, ICMP errors, closeAfterSending, close with sends queued, broadcast, multicast, reuse port.
final class UDPSendingTests: SocketTestCase {
    /// This test's injected failures, each on the test's own socket's descriptor.
    private var faults: FaultInjection.Scope!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let faults = FaultInjection.Scope()
        self.faults = faults
        addTeardown { faults.end() }
    }

    /// A socket bound on loopback whose sends all see `EAGAIN` until the injection is reset.
    private func blockedSender(_ delegate: UDPRecorder) throws -> GCDAsyncUdpSocket {
        let sender = makeUDP(delegate)
        try sender.bind(toPort: 0, interface: "127.0.0.1")
        faults.inject(.wouldBlock, into: .sendmmsg, count: .max, on: .descriptor(sender.socket4FD()))
        return sender
    }

    func testSendTimesOutWhileTheSocketStaysFull() throws {
        let delegate = UDPRecorder()
        let sender = try blockedSender(delegate)
        sender.send(Data("late".utf8), toHost: "127.0.0.1", port: 9, withTimeout: 0.05, tag: 1)
        sender.send(Data("patient".utf8), toHost: "127.0.0.1", port: 9, withTimeout: -1, tag: 2)
        delegate.waitForOutcomes(1)
        XCTAssertEqual(delegate.failedSends.map(\.tag), [1])
        XCTAssertEqual(delegate.failedSends.first?.error?.code, .sendTimeoutError)
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        sender.send(Data("after".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 3)
        faults.end()
        sender.perform {}  // a send queued now pumps the queue, which no longer blocks
        sender.send(Data("kick".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 4)
        delegate.waitForOutcomes(4)
        XCTAssertEqual(delegate.sentTags, [2, 3, 4])
        receiverDelegate.waitForReceived(2)
    }

    func testNoBufferSpaceIsRetriedNotDropped() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate)
        try sender.bind(toPort: 0, interface: "127.0.0.1")
        faults.inject(.noBufferSpace, into: .sendmmsg, count: 3, on: .descriptor(sender.socket4FD()))
        for i in 0..<5 { sender.send(Data("n\(i)".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: i) }
        delegate.waitForOutcomes(5)
        XCTAssertEqual(delegate.sentTags, Array(0..<5))
        XCTAssertEqual(faults.pendingFailures, 0)
        receiverDelegate.waitForReceived(5)
        XCTAssertEqual(receiverDelegate.received, (0..<5).map { Data("n\($0)".utf8) })
    }

    func testQueuedBytesAreBoundedWithAClearError() throws {
        let delegate = UDPRecorder()
        let sender = try blockedSender(delegate)
        sender.setMaxQueuedSendBytes(1000)
        for i in 0..<10 { sender.send(Data(count: 300), toHost: "127.0.0.1", port: 9, withTimeout: -1, tag: i) }
        delegate.waitForOutcomes(7)
        XCTAssertEqual(delegate.failedSends.map(\.tag), Array(3..<10), "three 300-byte sends fit under 1,000 bytes")
        let error = try XCTUnwrap(delegate.failedSends.first?.error)
        XCTAssertEqual(error.code, .otherError)
        XCTAssertEqual(error.errno, .noBufferSpace)
        XCTAssertTrue(error.message.contains("maxQueuedSendBytes"), error.message)
        sender.close()
        delegate.waitForClose()
        XCTAssertEqual(delegate.failedSends.map(\.tag), Array(3..<10) + [0, 1, 2])
        XCTAssertEqual(delegate.failedSends.suffix(3).map(\.error?.code), [.closedError, .closedError, .closedError])
        guard case .closed(nil)? = delegate.events.last else { return XCTFail("didClose comes last: \(delegate.events)") }
    }

    func testCloseAfterSendingSendsEverythingFirst() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate)
        for i in 0..<100 { sender.send(Data("c\(i)".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: i) }
        sender.closeAfterSending()
        delegate.waitForClose()
        XCTAssertEqual(delegate.sentTags, Array(0..<100))
        guard case .closed(nil)? = delegate.events.last else { return XCTFail("didClose comes last: \(delegate.events)") }
        receiverDelegate.waitForReceived(100)
        XCTAssertTrue(sender.isClosed())
        XCTAssertEqual(sender.socket4FD(), -1)
    }

    /// A delegate that takes the default `didSendDataWithTag` is not called for each datagram (the socket
    /// notes that the default ran), but a delegate set later that implements it hears of every send, and the
    /// default run on some other object, or off the loop, changes nothing for the socket.
    func testSendCompletionsReachADelegateSetAfterOneThatTakesTheDefault() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = try makeReceiver(receiverDelegate)
        let plain = PlainUDPDelegate()
        let sender = makeUDP(nil)
        sender.synchronouslySetDelegate(plain)
        sender.send(Data("one".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 1)
        receiverDelegate.waitForReceived(1)
        settle(sender.eventLoop)
        XCTAssertTrue(try onLoop(sender.eventLoop) { sender.sendCallbackIsDefault }, "the default ran and was noted")

        let recording = UDPRecorder()
        sender.synchronouslySetDelegate(recording)
        PlainUDPDelegate().udpSocket(sender, didSendDataWithTag: 0)
        _ = try onLoop(sender.eventLoop) { PlainUDPDelegate().udpSocket(sender, didSendDataWithTag: 0) }
        sender.send(Data("two".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 2)
        recording.waitForOutcomes(1)
        XCTAssertEqual(recording.sentTags, [2])
        receiverDelegate.waitForReceived(2)
    }

    func testSocketCanBeBoundAgainAfterClose() throws {
        let delegate = UDPRecorder()
        let socket = makeUDP(delegate)
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        socket.close()
        delegate.waitForClose()
        XCTAssertTrue(socket.isClosed())
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        XCTAssertFalse(socket.isClosed())
    }

    func testConnectedSocketReportsRefusalAndKeepsWorking() throws {
        // A port with nothing behind it: bind a socket, note its port, close it.
        let probe = makeUDP(nil)
        try probe.bind(toPort: 0, interface: "127.0.0.1")
        let deadPort = probe.localPort()
        probe.close()
        let delegate = UDPRecorder()
        let client = makeUDP(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: deadPort)
        try client.beginReceiving()
        client.send(Data("anyone?".utf8), withTimeout: -1, tag: 1)
        // The ICMP port unreachable comes back as ECONNREFUSED: on the next receive, or on the next send.
        client.send(Data("again".utf8), withTimeout: -1, tag: 2)
        delegate.wait("ECONNREFUSED") { self.refusals(in: $0) > 0 }
        XCTAssertFalse(client.isClosed(), "an ICMP error does not close the socket")
        XCTAssertEqual(delegate.sentTags.first, 1)
        delegate.waitForOutcomes(2)
    }

    /// ECONNREFUSED reports among `events`, from a receive or a send. Works on the events the wait hands over:
    /// the recorder's getters take the lock the wait holds.
    private func refusals(in events: [UDPEvent]) -> Int {
        events.filter { event in
            switch event {
            case .notReceived(let error), .notSent(_, let error?):
                return (error as? GCDAsyncUdpSocketError)?.errno == .connectionRefused
            default:
                return false
            }
        }.count
    }

    func testRefusalWhileNotReceivingDoesNotSpinOrClose() throws {
        let probe = makeUDP(nil)
        try probe.bind(toPort: 0, interface: "127.0.0.1")
        let deadPort = probe.localPort()
        probe.close()
        let delegate = UDPRecorder()
        let client = makeUDP(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: deadPort)
        client.send(Data("x".utf8), withTimeout: -1, tag: 1)
        // Not receiving: the pending error arrives as EPOLLERR and is taken and reported once.
        delegate.wait("ECONNREFUSED") { self.refusals(in: $0) > 0 }
        XCTAssertFalse(client.isClosed())
    }

    func testUnconnectedSendToAClosedPortIsSentAndTheSocketKeepsWorking() throws {
        let delegate = UDPRecorder()
        let socket = try makeReceiver(delegate)
        socket.send(Data("void".utf8), toHost: "127.0.0.1", port: 9, withTimeout: -1, tag: 1)
        socket.send(Data("self".utf8), toHost: "127.0.0.1", port: socket.localPort(), withTimeout: -1, tag: 2)
        delegate.waitForReceived(1)
        XCTAssertEqual(delegate.received, [Data("self".utf8)])
        XCTAssertEqual(delegate.sentTags, [1, 2])
    }

    func testBroadcastNeedsEnableBroadcast() throws {
        let receiverDelegate = UDPRecorder()
        let receiver = makeUDP(receiverDelegate)
        receiver.setIPv6Enabled(false)
        try receiver.bind(toPort: 0)  // INADDR_ANY: broadcasts reach it
        try receiver.beginReceiving()
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate)
        sender.setIPv6Enabled(false)
        sender.send(Data("denied".utf8), toHost: "127.255.255.255", port: receiver.localPort(), withTimeout: -1, tag: 1)
        delegate.waitForOutcomes(1)
        XCTAssertEqual(delegate.failedSends.first?.error?.errno, Errno(rawValue: EACCES))
        try sender.enableBroadcast(true)
        sender.send(Data("everyone".utf8), toHost: "127.255.255.255", port: receiver.localPort(), withTimeout: -1, tag: 2)
        receiverDelegate.waitForReceived(1)
        XCTAssertEqual(receiverDelegate.received, [Data("everyone".utf8)])
    }

    func testIPv4MulticastOnLoopback() throws {
        let group = "239.255.77.1"
        let receiverDelegate = UDPRecorder()
        let receiver = makeUDP(receiverDelegate)
        XCTAssertThrowsError(try receiver.joinMulticastGroup(group)) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
        try receiver.bind(toPort: 0)
        XCTAssertThrowsError(try receiver.joinMulticastGroup("not-a-group")) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badParamError) }
        XCTAssertThrowsError(try receiver.joinMulticastGroup(group, onInterface: "no-such-if0")) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badParamError) }
        try receiver.joinMulticastGroup(group, onInterface: "127.0.0.1")
        XCTAssertFalse(receiver.isIPv6(), "joining an IPv4 group closes the IPv6 descriptor, as in GCDAsyncUdpSocket")
        try receiver.beginReceiving()
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate)
        sender.setIPv6Enabled(false)
        try sender.sendIPv4Multicast(onInterface: "lo")
        sender.send(Data("group".utf8), toHost: group, port: receiver.localPort(), withTimeout: -1, tag: 1)
        receiverDelegate.waitForReceived(1)
        XCTAssertEqual(receiverDelegate.received, [Data("group".utf8)])
        // After leaving, a datagram to the group no longer arrives; one sent straight to the port still does.
        try receiver.leaveMulticastGroup(group, onInterface: "127.0.0.1")
        XCTAssertThrowsError(try receiver.leaveMulticastGroup(group, onInterface: "127.0.0.1"))
        sender.send(Data("gone".utf8), toHost: group, port: receiver.localPort(), withTimeout: -1, tag: 2)
        sender.send(Data("direct".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 3)
        receiverDelegate.waitForReceived(2)
        XCTAssertEqual(receiverDelegate.received, [Data("group".utf8), Data("direct".utf8)])
    }

    func testIPv6MulticastJoinAndLeave() throws {
        // Loopback has no IPv6 multicast route here: joining and leaving work, a send reports the kernel's error.
        let receiver = makeUDP(UDPRecorder())
        receiver.setIPv4Enabled(false)
        try receiver.bind(toPort: 0)
        try receiver.joinMulticastGroup("ff02::1:3", onInterface: "lo")
        try receiver.leaveMulticastGroup("ff02::1:3", onInterface: "lo")
        XCTAssertThrowsError(try receiver.joinMulticastGroup("239.255.77.1")) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badParamError) }
        let sender = makeUDP(UDPRecorder())
        sender.setIPv4Enabled(false)
        try sender.sendIPv6Multicast(onInterface: "lo")
        XCTAssertThrowsError(try sender.sendIPv6Multicast(onInterface: "no-such-if0"))
    }

    func testConnectedSocketCannotJoinAGroup() throws {
        let delegate = UDPRecorder()
        let socket = makeUDP(delegate)
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        try socket.connect(toHost: "127.0.0.1", onPort: 9)
        delegate.wait("connect") { $0.contains { if case .connected = $0 { return true } else { return false } } }
        XCTAssertThrowsError(try socket.joinMulticastGroup("239.255.77.1")) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
    }

    func testReusePortLetsTwoSocketsBindOnePort() throws {
        let first = makeUDP(UDPRecorder())
        try first.enableReusePort(true)
        try first.bind(toPort: 0, interface: "127.0.0.1")
        let second = makeUDP(UDPRecorder())
        try second.enableReusePort(true)
        try second.bind(toPort: first.localPort(), interface: "127.0.0.1")
        XCTAssertEqual(first.localPort(), second.localPort())
    }

    func testDescriptorsAreClosedExactlyOnce() throws {
        let before = SharedTestSupportCount.open()
        let delegate = UDPRecorder()
        let socket = makeUDP(delegate)
        try socket.bind(toPort: 0)
        XCTAssertEqual(SharedTestSupportCount.open(), before + 2, "one descriptor per family")
        socket.close()
        delegate.waitForClose()
        XCTAssertEqual(SharedTestSupportCount.open(), before)
        socket.close()  // a second close is harmless and reports nothing
        socket.perform {}
        XCTAssertEqual(delegate.events.filter { if case .closed = $0 { return true } else { return false } }.count, 1)
    }

    func testInjectedReceiveFailureClosesWithTheError() throws {
        let delegate = UDPRecorder()
        let socket = try makeReceiver(delegate)
        faults.inject(.badFileDescriptor, into: .recvmmsg, count: 1, on: .descriptor(socket.socket4FD()))
        socket.send(Data("x".utf8), toHost: "127.0.0.1", port: socket.localPort(), withTimeout: -1, tag: 1)
        delegate.waitForClose()
        guard case .closed(let error?)? = delegate.events.last else { return XCTFail("\(delegate.events)") }
        XCTAssertEqual((error as? GCDAsyncUdpSocketError)?.syscall, .recvmmsg)
    }
}

import SharedTestSupport

/// Counting the process's open descriptors.
enum SharedTestSupportCount {
    static func open() -> Int { openDescriptors().count }
}

/// A UDP delegate that implements no callback: every one is the protocol's default.
private final class PlainUDPDelegate: GCDAsyncUdpSocketDelegate, @unchecked Sendable {}
