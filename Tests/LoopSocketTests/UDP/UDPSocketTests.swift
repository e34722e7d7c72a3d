import Dispatch
import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// GCDAsyncUdpSocket as its users write it: bind, receive, send, connect, over IPv4 and IPv6 loopback.
final class UDPSocketTests: SocketTestCase {
    func testEchoOverIPv4ReportsSendsAndSenderAddress() throws {
        let (server, _) = try makeEchoServer()
        let delegate = UDPRecorder()
        let client = makeUDP(delegate)
        try client.bind(toPort: 0, interface: "127.0.0.1")
        try client.beginReceiving()
        for i in 0..<20 { client.send(patternData(100 + i), toHost: "127.0.0.1", port: server.localPort(), withTimeout: -1, tag: i) }
        delegate.waitForReceived(20)
        XCTAssertEqual(delegate.sentTags, Array(0..<20))
        XCTAssertEqual(Set(delegate.received.map(\.count)), Set((0..<20).map { 100 + $0 }))
        let from = try XCTUnwrap(delegate.receivedRecords.first?.address)
        XCTAssertEqual(GCDAsyncUdpSocket.host(fromAddress: from), "127.0.0.1")
        XCTAssertEqual(GCDAsyncUdpSocket.port(fromAddress: from), server.localPort())
        XCTAssertTrue(GCDAsyncUdpSocket.isIPv4Address(from))
        XCTAssertTrue(delegate.ranOnLoop.allSatisfy { $0 }, "callbacks run inline on the loop without a delegate queue")
    }

    func testEchoOverIPv6() throws {
        let (server, _) = try makeEchoServer(host: "::1")
        XCTAssertTrue(server.isIPv6())
        XCTAssertFalse(server.isIPv4())
        XCTAssertEqual(server.localHost(), "::1")
        let delegate = UDPRecorder()
        let client = makeUDP(delegate)
        try client.bind(toPort: 0, interface: "::1")
        try client.beginReceiving()
        client.send(Data("ping6".utf8), toAddress: try XCTUnwrap(server.localAddress()), withTimeout: -1, tag: 7)
        delegate.waitForReceived(1)
        XCTAssertEqual(delegate.received, [Data("ping6".utf8)])
        XCTAssertTrue(GCDAsyncUdpSocket.isIPv6Address(try XCTUnwrap(delegate.receivedRecords.first?.address)))
        XCTAssertEqual(GCDAsyncUdpSocket.family(fromAddress: try XCTUnwrap(delegate.receivedRecords.first?.address)), AF_INET6)
    }

    func testUnboundSocketSendsThenReceivesTheReply() throws {
        let (server, _) = try makeEchoServer()
        let delegate = UDPRecorder()
        let client = makeUDP(delegate)
        XCTAssertThrowsError(try client.receiveOnce()) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
        client.send(Data("hello".utf8), toHost: "127.0.0.1", port: server.localPort(), withTimeout: -1, tag: 1)
        delegate.waitForOutcomes(1)
        try client.receiveOnce()  // the send created and bound the socket
        delegate.waitForReceived(1)
        XCTAssertEqual(delegate.received, [Data("hello".utf8)])
        XCTAssertNotEqual(client.localPort_IPv4(), 0)
    }

    func testConnectedSocketSendsWithoutAddressAndRejectsAddresses() throws {
        let (server, _) = try makeEchoServer()
        let delegate = UDPRecorder()
        let client = makeUDP(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort())
        delegate.wait("connect") { $0.contains { if case .connected = $0 { return true } else { return false } } }
        XCTAssertTrue(client.isConnected())
        XCTAssertEqual(client.connectedHost(), "127.0.0.1")
        XCTAssertEqual(client.connectedPort(), server.localPort())
        XCTAssertThrowsError(try client.connect(toHost: "127.0.0.1", onPort: 9)) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
        XCTAssertThrowsError(try client.bind(toPort: 0)) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
        try client.beginReceiving()
        client.send(Data("a".utf8), withTimeout: -1, tag: 1)
        client.send(Data("b".utf8), toHost: "127.0.0.1", port: server.localPort(), withTimeout: -1, tag: 2)
        client.send(Data("c".utf8), withTimeout: -1, tag: 3)
        delegate.waitForReceived(2)
        delegate.waitForOutcomes(3)
        XCTAssertEqual(delegate.sentTags, [1, 3])
        XCTAssertEqual(delegate.failedSends.map(\.tag), [2])
        XCTAssertEqual(delegate.failedSends.first?.error?.code, .badConfigError)
        XCTAssertEqual(delegate.received, [Data("a".utf8), Data("c".utf8)])
    }

    func testUnconnectedSendWithoutAddressIsBadConfig() throws {
        let delegate = UDPRecorder()
        let socket = makeUDP(delegate)
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        socket.send(Data("x".utf8), withTimeout: -1, tag: 5)
        socket.send(Data("x".utf8), toAddress: Data([1, 2, 3]), withTimeout: -1, tag: 6)
        socket.send(Data("x".utf8), toHost: "no-such-host.invalid", port: 9, withTimeout: -1, tag: 7)
        delegate.waitForOutcomes(3)
        XCTAssertEqual(delegate.failedSends.map(\.tag), [5, 6, 7])
        XCTAssertEqual(delegate.failedSends.map(\.error?.code), [.badConfigError, .badParamError, .badParamError])
    }

    func testConnectToUnresolvableHostReportsDidNotConnect() throws {
        let delegate = UDPRecorder()
        let socket = makeUDP(delegate)
        try socket.connect(toHost: "no-such-host.invalid", onPort: 9)
        delegate.wait("didNotConnect") { $0.contains { if case .notConnected = $0 { return true } else { return false } } }
        XCTAssertFalse(socket.isConnected())
        XCTAssertThrowsError(try socket.connect(toHost: "", onPort: 9)) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badParamError) }
    }

    func testBindErrors() throws {
        let socket = makeUDP(UDPRecorder())
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        XCTAssertThrowsError(try socket.bind(toPort: 0)) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
        let other = makeUDP(UDPRecorder())
        XCTAssertThrowsError(try other.bind(toPort: socket.localPort(), interface: "127.0.0.1")) { error in
            XCTAssertEqual((error as? GCDAsyncUdpSocketError)?.errno, .addressInUse)
        }
        XCTAssertThrowsError(try other.bind(toPort: 0, interface: "no-such-interface0")) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badParamError) }
        other.setIPv4Enabled(false)
        other.setIPv6Enabled(false)
        XCTAssertThrowsError(try other.bind(toPort: 0)) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
        XCTAssertTrue(other.isClosed(), "a failed bind leaves no descriptor open")
    }

    func testBindToPortUsesOnePortForBothFamilies() throws {
        let socket = makeUDP(UDPRecorder())
        try socket.bind(toPort: 0)
        XCTAssertTrue(socket.isIPv4())
        XCTAssertTrue(socket.isIPv6())
        XCTAssertNotEqual(socket.localPort_IPv4(), 0)
        XCTAssertEqual(socket.localPort_IPv4(), socket.localPort_IPv6())
        XCTAssertEqual(socket.socketFD(), -1, "two descriptors: socketFD is ambiguous")
        XCTAssertGreaterThanOrEqual(socket.socket4FD(), 0)
        XCTAssertGreaterThanOrEqual(socket.socket6FD(), 0)
    }

    func testIPv4DisabledBindsOnlyIPv6() throws {
        let socket = makeUDP(UDPRecorder())
        socket.setIPv4Enabled(false)
        XCTAssertFalse(socket.isIPv4Enabled())
        try socket.bind(toPort: 0)
        XCTAssertFalse(socket.isIPv4())
        XCTAssertTrue(socket.isIPv6())
        XCTAssertEqual(socket.socketFD(), socket.socket6FD())
        XCTAssertThrowsError(try socket.enableBroadcast(true)) { XCTAssertEqual(($0 as? GCDAsyncUdpSocketError)?.code, .badConfigError) }
    }

    func testPreferenceChoosesTheFamilyForLocalhost() throws {
        let v6Delegate = UDPRecorder()
        let v6 = try makeReceiver(v6Delegate, host: "::1")
        let delegate = UDPRecorder()
        let client = makeUDP(delegate)
        client.setPreferIPv6()
        XCTAssertTrue(client.isIPv6Preferred())
        client.send(Data("six".utf8), toHost: "localhost", port: v6.localPort(), withTimeout: -1, tag: 1)
        v6Delegate.waitForReceived(1)
        XCTAssertEqual(v6Delegate.received, [Data("six".utf8)])
        client.setIPVersionNeutral()
        XCTAssertTrue(client.isIPVersionNeutral())
        client.setPreferIPv4()
        XCTAssertTrue(client.isIPv4Preferred())
    }

    func testDelegateQueueReceivesEveryCallback() throws {
        let queue = makeQueue("udp-delegate")
        let delegate = UDPRecorder()
        let receiver = try makeReceiver(delegate, queue: queue)
        let sender = makeUDP(delegate, queue: queue)
        sender.send(Data("q".utf8), toHost: "127.0.0.1", port: receiver.localPort(), withTimeout: -1, tag: 1)
        delegate.waitForReceived(1)
        delegate.waitForOutcomes(1)
        XCTAssertTrue(delegate.queueTags.allSatisfy { $0 == "udp-delegate" })
        XCTAssertTrue(delegate.ranOnLoop.allSatisfy { !$0 })
        XCTAssertTrue(receiver.delegateQueue() === queue)
        XCTAssertTrue(receiver.delegate() === delegate)
    }

    func testUserDataAndSizes() {
        let socket = makeUDP(nil)
        socket.setUserData("hello")
        XCTAssertEqual(socket.userData() as? String, "hello")
        XCTAssertEqual(socket.maxReceiveIPv4BufferSize(), 65_535)
        socket.setMaxReceiveIPv4BufferSize(512)
        socket.setMaxReceiveIPv6BufferSize(1024)
        socket.setMaxSendBufferSize(9000)
        XCTAssertEqual(socket.maxReceiveIPv4BufferSize(), 512)
        XCTAssertEqual(socket.maxReceiveIPv6BufferSize(), 1024)
        XCTAssertEqual(socket.maxSendBufferSize(), 9000)
        socket.setReceiveBatchSize(1000)
        XCTAssertEqual(socket.receiveBatchSize(), 64)
        XCTAssertTrue(socket.isClosed())
        XCTAssertNil(socket.localAddress())
        XCTAssertEqual(socket.localPort(), 0)
        XCTAssertNil(socket.connectedAddress())
    }

    func testClassAddressHelpers() throws {
        let socket = makeUDP(nil)
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        let address = try XCTUnwrap(socket.localAddress())
        var host: String?
        var port: UInt16 = 0
        var family: Int32 = 0
        XCTAssertTrue(GCDAsyncUdpSocket.getHost(&host, port: &port, family: &family, fromAddress: address))
        XCTAssertEqual(host, "127.0.0.1")
        XCTAssertEqual(port, socket.localPort())
        XCTAssertEqual(family, AF_INET)
        XCTAssertFalse(GCDAsyncUdpSocket.getHost(&host, port: &port, fromAddress: Data([0, 0])))
        XCTAssertEqual(GCDAsyncUdpSocket.family(fromAddress: Data()), AF_UNSPEC)
        XCTAssertNil(GCDAsyncUdpSocket.host(fromAddress: Data([9])))
    }

    func testErrorsBridgeToNSError() {
        let error = GCDAsyncUdpSocketError(.sendTimeoutError, "Send operation timed out") as NSError
        XCTAssertEqual(error.domain, GCDAsyncUdpSocketErrorDomain)
        XCTAssertEqual(error.code, 3)
        XCTAssertEqual(error.localizedDescription, "Send operation timed out")
        XCTAssertTrue(GCDAsyncUdpSocketError.closedError ~= (GCDAsyncUdpSocketError.closed as any Error))
    }

    func testPerformRunsOnTheLoop() {
        let socket = makeUDP(nil)
        var ran = false
        socket.perform { ran = socket.eventLoop.inEventLoop }
        XCTAssertTrue(ran)
    }
}
