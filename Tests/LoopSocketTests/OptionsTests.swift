import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// `SocketOptions`, applied before connect/accept, read back with `getsockopt` on the socket's loop
/// (inside `perform` or `withSocketFD`), on connected, accepted and listening sockets.
final class OptionsTests: SocketTestCase {
    private func option(_ sock: GCDAsyncSocket, _ level: Int32, _ name: Int32) -> Int32 {
        var value: Int32 = -1
        perform(sock) {
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(sock.socketFD(), level, name, &value, &length)
        }
        return value
    }

    func testDefaults() throws {
        let options = SocketOptions()
        XCTAssertTrue(options.noDelay)
        XCTAssertNil(options.keepAlive)
        XCTAssertTrue(options.reuseAddress)
        XCTAssertFalse(options.reusePort)
        XCTAssertEqual(options.backlog, 1024)
        XCTAssertNil(options.maxQueuedWriteBytes)

        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        clientDelegate.waitForConnect()
        let child = serverDelegate.waitForAccepts(1)[0]
        XCTAssertEqual(option(client, Int32(IPPROTO_TCP), TCP_NODELAY), 1, "TCP_NODELAY is on by default")
        XCTAssertEqual(option(child, Int32(IPPROTO_TCP), TCP_NODELAY), 1, "accepted sockets get it too")
        XCTAssertEqual(option(client, SOL_SOCKET, SO_KEEPALIVE), 0)
        XCTAssertEqual(option(server, SOL_SOCKET, SO_REUSEADDR), 1)
        XCTAssertEqual(option(server, SOL_SOCKET, SO_REUSEPORT), 0)
    }

    func testNoDelayOffAndKeepAlive() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate) { server in
            server.options.keepAlive = .init(idle: 30, interval: 5, count: 4)
        }
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        var options = SocketOptions()
        options.noDelay = false
        options.keepAlive = .init(idle: 61, interval: 7, count: 3)
        client.options = options
        XCTAssertEqual(client.options, options)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        clientDelegate.waitForConnect()
        XCTAssertEqual(option(client, Int32(IPPROTO_TCP), TCP_NODELAY), 0)
        XCTAssertEqual(option(client, SOL_SOCKET, SO_KEEPALIVE), 1)
        XCTAssertEqual(option(client, Int32(IPPROTO_TCP), TCP_KEEPIDLE), 61)
        XCTAssertEqual(option(client, Int32(IPPROTO_TCP), TCP_KEEPINTVL), 7)
        XCTAssertEqual(option(client, Int32(IPPROTO_TCP), TCP_KEEPCNT), 3)

        let child = serverDelegate.waitForAccepts(1)[0]
        XCTAssertEqual(option(child, SOL_SOCKET, SO_KEEPALIVE), 1, "accepted sockets inherit the listener's options")
        XCTAssertEqual(option(child, Int32(IPPROTO_TCP), TCP_KEEPIDLE), 30)
        XCTAssertEqual(option(child, Int32(IPPROTO_TCP), TCP_KEEPINTVL), 5)
        XCTAssertEqual(option(child, Int32(IPPROTO_TCP), TCP_KEEPCNT), 4)
    }

    func testBufferSizes() throws {
        let listener = try RawListener()
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        client.options.receiveBufferSize = 32 * 1024
        client.options.sendBufferSize = 48 * 1024
        try client.connect(toHost: "127.0.0.1", onPort: listener.port)
        let peer = try listener.accept()
        delegate.waitForConnect()
        // The kernel doubles what it is given (for its bookkeeping).
        XCTAssertEqual(option(client, SOL_SOCKET, SO_RCVBUF), 2 * 32 * 1024)
        XCTAssertEqual(option(client, SOL_SOCKET, SO_SNDBUF), 2 * 48 * 1024)
        peer.close()
    }

    func testReusePortLetsTwoListenersShareAPort() throws {
        let first = try makeServer(makeDelegate("first")) { $0.options.reusePort = true }
        XCTAssertEqual(option(first, SOL_SOCKET, SO_REUSEPORT), 1)
        let second = makeSocket(makeDelegate("second"))
        second.options.reusePort = true
        try second.accept(onInterface: "127.0.0.1", port: first.localPort)
        XCTAssertEqual(second.localPort, first.localPort)
    }

    func testBacklog() throws {
        let server = try makeServer(makeDelegate("server")) { $0.options.backlog = 7 }
        var backlog: UInt32 = 0
        perform(server) {
            var info = tcp_info()
            var length = socklen_t(MemoryLayout<tcp_info>.size)
            getsockopt(server.socketFD(), Int32(IPPROTO_TCP), TCP_INFO, &info, &length)
            backlog = info.tcpi_sacked  // A listening socket reports its backlog here.
        }
        XCTAssertEqual(backlog, 7)
    }

    func testOptionsChangedAfterConnectApplyToTheNextConnection() throws {
        let server = try makeServer(makeDelegate("server"))
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        delegate.waitForConnect()
        client.options.noDelay = false
        XCTAssertEqual(option(client, Int32(IPPROTO_TCP), TCP_NODELAY), 1, "the live connection keeps its options")
        client.disconnect()
        delegate.waitForDisconnect()
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        delegate.wait("second connect") { records in
            records.filter { if case .connected = $0.event { return true } else { return false } }.count == 2
        }
        XCTAssertEqual(option(client, Int32(IPPROTO_TCP), TCP_NODELAY), 0)
    }

    func testPerformAndWithSocketFD() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        var fd: Int32 = -1
        var v4: Int32 = -1
        var v6: Int32 = -2
        var onLoop = false
        perform(client) {
            fd = client.socketFD()
            v4 = client.socket4FD()
            v6 = client.socket6FD()
            onLoop = client.eventLoop.inEventLoop
        }
        XCTAssertTrue(onLoop, "perform runs the block on the socket's loop")
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(v4, fd)
        XCTAssertEqual(v6, -1)
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        XCTAssertEqual(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length), 0)
        XCTAssertEqual(type, Int32(SOCK_STREAM.rawValue))

        let seen = Locked<Int32>(-2)
        let done = Signal()
        client.withSocketFD { descriptor in
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length)
            seen.value = value
            done.fire()
        }
        try done.waitOrThrow("withSocketFD")
        XCTAssertEqual(seen.value, 1)

        client.disconnect()
        delegate.waitForDisconnect()
        perform(client) { fd = client.socketFD() }
        XCTAssertEqual(fd, -1, "no descriptor once disconnected")
        peer.close()
    }
}
