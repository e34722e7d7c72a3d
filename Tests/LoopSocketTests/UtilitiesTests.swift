import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// GCDAsyncSocket's class helpers, introspection, `userData`, and adopting an already-connected descriptor.
final class UtilitiesTests: SocketTestCase {
    func testSeparatorConstants() {
        XCTAssertEqual(GCDAsyncSocket.crlfData(), Data([0x0D, 0x0A]))
        XCTAssertEqual(GCDAsyncSocket.crData(), Data([0x0D]))
        XCTAssertEqual(GCDAsyncSocket.lfData(), Data([0x0A]))
        XCTAssertEqual(GCDAsyncSocket.zeroData(), Data([0x00]))
    }

    func testAddressHelpers() throws {
        let v4 = rawAddress("192.0.2.7", port: 8080)
        let v4Data = withUnsafeBytes(of: v4.storage) { Data($0.prefix(Int(v4.length))) }
        XCTAssertEqual(GCDAsyncSocket.host(fromAddress: v4Data), "192.0.2.7")
        XCTAssertEqual(GCDAsyncSocket.port(fromAddress: v4Data), 8080)
        XCTAssertTrue(GCDAsyncSocket.isIPv4Address(v4Data))
        XCTAssertFalse(GCDAsyncSocket.isIPv6Address(v4Data))

        let v6 = rawAddress("2001:db8::1", port: 443)
        let v6Data = withUnsafeBytes(of: v6.storage) { Data($0.prefix(Int(v6.length))) }
        XCTAssertEqual(GCDAsyncSocket.host(fromAddress: v6Data), "2001:db8::1")
        XCTAssertEqual(GCDAsyncSocket.port(fromAddress: v6Data), 443)
        XCTAssertTrue(GCDAsyncSocket.isIPv6Address(v6Data))
        XCTAssertFalse(GCDAsyncSocket.isIPv4Address(v6Data))

        var host: String?
        var port: UInt16 = 0
        XCTAssertTrue(GCDAsyncSocket.getHost(&host, port: &port, fromAddress: v6Data))
        XCTAssertEqual(host, "2001:db8::1")
        XCTAssertEqual(port, 443)

        for garbage in [Data(), Data([1]), Data([2, 0, 1]), Data(repeating: 0xFF, count: 300)] {
            XCTAssertNil(GCDAsyncSocket.host(fromAddress: garbage))
            XCTAssertEqual(GCDAsyncSocket.port(fromAddress: garbage), 0)
            XCTAssertFalse(GCDAsyncSocket.isIPv4Address(garbage))
            XCTAssertFalse(GCDAsyncSocket.isIPv6Address(garbage))
            XCTAssertFalse(GCDAsyncSocket.getHost(nil, port: nil, fromAddress: garbage))
        }
    }

    func testLookupHost() throws {
        let localhost: [Data] = try GCDAsyncSocket.lookupHost("localhost", port: 80)
        XCTAssertEqual(Set(localhost.compactMap { GCDAsyncSocket.host(fromAddress: $0) }), ["127.0.0.1", "::1"])
        XCTAssertTrue(localhost.allSatisfy { GCDAsyncSocket.port(fromAddress: $0) == 80 })
        XCTAssertTrue(localhost.contains(where: GCDAsyncSocket.isIPv4Address))
        XCTAssertTrue(localhost.contains(where: GCDAsyncSocket.isIPv6Address))

        let numeric: [Data] = try GCDAsyncSocket.lookupHost("127.0.0.1", port: 9)
        XCTAssertEqual(numeric.count, 1)
        XCTAssertEqual(GCDAsyncSocket.host(fromAddress: numeric[0]), "127.0.0.1")
        XCTAssertEqual(try (GCDAsyncSocket.lookupHost("::1", port: 9) as [Data]).map { GCDAsyncSocket.host(fromAddress: $0) }, ["::1"])
    }

    func testIntrospectionAcrossTheLifecycle() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate)
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        XCTAssertTrue(client.isDisconnected)
        XCTAssertFalse(client.isConnected)
        XCTAssertNil(client.connectedHost)
        XCTAssertEqual(client.connectedPort, 0)
        XCTAssertNil(client.localHost)
        XCTAssertNil(client.connectedAddress)
        XCTAssertNil(client.localAddress)
        XCTAssertFalse(client.isSecure)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        XCTAssertFalse(client.isDisconnected, "connecting counts as not disconnected")
        delegate.waitForConnect()
        XCTAssertTrue(client.isConnected)
        XCTAssertEqual(client.connectedAddress.flatMap { GCDAsyncSocket.host(fromAddress: $0) }, "127.0.0.1")
        XCTAssertEqual(client.localAddress.map { GCDAsyncSocket.port(fromAddress: $0) }, client.localPort)
        client.disconnect()
        delegate.waitForDisconnect()
        XCTAssertNil(client.connectedHost)
        XCTAssertEqual(client.localPort, 0)
    }

    func testUserDataAndConfigurationProperties() throws {
        let client = makeSocket(makeDelegate())
        XCTAssertNil(client.userData)
        client.userData = "session 42"
        XCTAssertEqual(client.userData as? String, "session 42")
        let fromAnotherThread = Locked<String?>(nil)
        try onNewThread { fromAnotherThread.value = client.userData as? String }.waitOrThrow("the other thread")
        XCTAssertEqual(fromAnotherThread.value, "session 42")

        XCTAssertTrue(client.isIPv4Enabled)
        XCTAssertTrue(client.isIPv6Enabled)
        XCTAssertTrue(client.isIPv4PreferredOverIPv6)
        XCTAssertEqual(client.alternateAddressDelay, 0.3)
        XCTAssertTrue(client.autoDisconnectOnClosedReadStream)
        XCTAssertFalse(client.timeoutsFailOnlyTheOperation)
        client.alternateAddressDelay = -1
        XCTAssertEqual(client.alternateAddressDelay, 0, "negative delays are clamped")
    }

    // MARK: Adopting a connected descriptor

    func testAdoptASocketpairEnd() throws {
        let (raw, fd) = try RawSocket.pair()
        let delegate = makeDelegate("adopted")
        // GCDAsyncSocket's initialiser takes no loop: the socket lives on the default group.
        let sock = try GCDAsyncSocket(fromConnectedSocketFD: fd, delegate: delegate, delegateQueue: nil)
        XCTAssertTrue(sock.isConnected)
        XCTAssertNotNil(sock.connectedAddress)
        XCTAssertFalse(sock.isIPv4)
        XCTAssertFalse(sock.isIPv6)
        XCTAssertTrue(GCDAsyncSocket.defaultGroup.loops.contains { $0 === sock.eventLoop })
        var socketFD: Int32 = -1
        perform(sock) { socketFD = sock.socketFD() }
        XCTAssertEqual(socketFD, fd, "the socket owns the descriptor it was given")
        XCTAssertNotEqual(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "made nonblocking")

        sock.readData(to: GCDAsyncSocket.lfData(), withTimeout: -1, tag: 1)
        try raw.send("over the pair\n")
        XCTAssertEqual(delegate.waitForReadBytes(14, tag: 1), Data("over the pair\n".utf8))
        sock.write(Data("back".utf8), withTimeout: -1, tag: 2)
        XCTAssertEqual(try raw.receive(exactly: 4), Data("back".utf8))
        sock.disconnect()
        XCTAssertNil(delegate.waitForDisconnect())
        let (_, end) = try raw.receiveToEnd()
        XCTAssertEqual(end, .eof, "disconnect closes the adopted descriptor")
    }

    func testAdoptAConnectedTCPSocket() throws {
        let listener = try RawListener()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let address = rawAddress("127.0.0.1", port: listener.port)
        var storage = address.storage
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, address.length) }
        }
        XCTAssertEqual(connected, 0)
        let peer = try listener.accept()
        let delegate = makeDelegate("adopted")
        let sock = try GCDAsyncSocket(fromConnectedSocketFD: fd, delegate: delegate, delegateQueue: nil)
        XCTAssertEqual(sock.connectedHost, "127.0.0.1")
        XCTAssertEqual(sock.connectedPort, listener.port)
        XCTAssertTrue(sock.isIPv4)
        try peer.send("tcp")
        sock.readData(toLength: 3, withTimeout: -1, tag: 1)
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 1), Data("tcp".utf8))
        XCTAssertThrowsError(try sock.connect(toHost: "127.0.0.1", onPort: listener.port)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError, "an adopted socket is connected")
        }
        peer.close()
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .closedError)
    }

    func testAdoptRejectsDescriptorsThatAreNotConnectedStreams() throws {
        let unconnected = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(unconnected) }
        XCTAssertThrowsError(try GCDAsyncSocket(fromConnectedSocketFD: unconnected, delegate: nil, delegateQueue: nil)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        var pipeFDs: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        defer {
            close(pipeFDs[0])
            close(pipeFDs[1])
        }
        XCTAssertThrowsError(try GCDAsyncSocket(fromConnectedSocketFD: pipeFDs[0], delegate: nil, delegateQueue: nil)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertNotEqual(fcntl(unconnected, F_GETFD), -1, "a rejected descriptor is left open for its owner")
    }
}
