import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// Connecting over IPv4, IPv6 and Unix sockets; Happy Eyeballs; connect failures and misuse.
final class ConnectTests: SocketTestCase {
    // MARK: Families

    func testConnectAndAcceptOverIPv4() throws {
        try assertConnectAndEcho(host: "127.0.0.1", interface: "127.0.0.1", isIPv6: false)
    }

    func testConnectAndAcceptOverIPv6() throws {
        try assertConnectAndEcho(host: "::1", interface: "::1", isIPv6: true)
    }

    private func assertConnectAndEcho(host: String, interface: String, isIPv6: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate, interface: interface)
        XCTAssertEqual(server.localHost, host, file: file, line: line)
        XCTAssertEqual(server.isIPv6, isIPv6, file: file, line: line)
        XCTAssertEqual(server.isIPv4, !isIPv6, file: file, line: line)
        XCTAssertFalse(server.isConnected, "a listener is not connected", file: file, line: line)
        XCTAssertFalse(server.isDisconnected, file: file, line: line)

        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        XCTAssertTrue(client.isDisconnected, file: file, line: line)
        try client.connect(toHost: host, onPort: server.localPort, withTimeout: testTimeout)
        clientDelegate.waitForConnect(file: file, line: line)
        guard case .connected(let connectedHost, let port)? = clientDelegate.events.first else {
            return XCTFail("expected didConnectToHost first: \(clientDelegate.events)", file: file, line: line)
        }
        XCTAssertEqual(connectedHost, host, file: file, line: line)
        XCTAssertEqual(port, server.localPort, file: file, line: line)
        XCTAssertTrue(client.isConnected, file: file, line: line)
        XCTAssertEqual(client.connectedHost, host, file: file, line: line)
        XCTAssertEqual(client.connectedPort, server.localPort, file: file, line: line)
        XCTAssertEqual(client.localHost, host, file: file, line: line)
        XCTAssertNotEqual(client.localPort, 0, file: file, line: line)
        XCTAssertEqual(client.isIPv6, isIPv6, file: file, line: line)
        XCTAssertEqual(client.isIPv4, !isIPv6, file: file, line: line)
        XCTAssertEqual(client.connectedAddress.map { GCDAsyncSocket.port(fromAddress: $0) }, server.localPort, file: file, line: line)

        let child = serverDelegate.waitForAccepts(1, file: file, line: line)[0]
        XCTAssertTrue(child.isConnected, file: file, line: line)
        XCTAssertEqual(child.connectedPort, client.localPort, file: file, line: line)
        XCTAssertEqual(child.localPort, server.localPort, file: file, line: line)

        client.write(Data("ping".utf8), withTimeout: -1, tag: 11)
        client.readData(toLength: 4, withTimeout: -1, tag: 12)
        XCTAssertEqual(clientDelegate.waitForReadBytes(4, tag: 12, file: file, line: line), Data("ping".utf8), file: file, line: line)
        XCTAssertEqual(clientDelegate.count { if case .wrote(11) = $0 { return true } else { return false } }, 1, file: file, line: line)

        client.disconnect()
        XCTAssertTrue(client.isDisconnected, "disconnect() from another thread reports disconnected at once", file: file, line: line)
        XCTAssertNil(clientDelegate.waitForDisconnect(of: client, file: file, line: line), "a requested disconnect has no error", file: file, line: line)
        let childError = serverDelegate.waitForDisconnect(of: child, file: file, line: line)
        XCTAssertEqual(childError.socketCode, .closedError, "the peer's close reaches the server as closedError", file: file, line: line)
    }

    func testConnectAndAcceptOverUnixSocket() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("echo.sock")
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = makeSocket(serverDelegate)
        try server.accept(on: URL(fileURLWithPath: path))
        var status = stat()
        XCTAssertEqual(lstat(path, &status), 0, "the socket file exists while listening")
        XCTAssertEqual(status.st_mode & S_IFMT, S_IFSOCK)

        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(to: URL(fileURLWithPath: path), withTimeout: testTimeout)
        clientDelegate.waitForConnect()
        guard case .connectedURL(let url)? = clientDelegate.events.first else {
            return XCTFail("expected didConnectTo(url): \(clientDelegate.events)")
        }
        XCTAssertEqual(url.path, path)
        XCTAssertEqual(client.connectedUrl?.path, path)
        XCTAssertNil(client.connectedHost)
        XCTAssertEqual(client.connectedPort, 0)
        XCTAssertFalse(client.isIPv4)
        XCTAssertFalse(client.isIPv6)

        client.write(Data("over unix".utf8), withTimeout: -1, tag: 1)
        client.readData(to: Data("x".utf8), withTimeout: -1, tag: 2)
        XCTAssertEqual(clientDelegate.waitForReadBytes(9, tag: 2), Data("over unix".utf8))

        server.disconnect()
        serverDelegate.waitForDisconnect(of: server)
        XCTAssertNotEqual(lstat(path, &status), 0, "the listener removes its socket file when it stops")
        XCTAssertThrowsError(try RawSocket(connectToUnixPath: path))
    }

    func testStaleUnixSocketFileIsReplaced() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("stale.sock")
        // A socket file left behind by a process that died.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = rawUnixAddress(path)
        _ = withUnsafePointer(to: &address.storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) } }
        close(fd)
        XCTAssertEqual(access(path, F_OK), 0)

        let serverDelegate = makeDelegate("server")
        let server = makeSocket(serverDelegate)
        try server.accept(on: URL(fileURLWithPath: path))
        let raw = try RawSocket(connectToUnixPath: path)
        XCTAssertEqual(serverDelegate.waitForAccepts(1).count, 1)
        raw.close()
    }

    func testLoopbackListenerIsDualStackWithV6Only() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate, interface: "localhost")
        XCTAssertTrue(server.isIPv4)
        XCTAssertTrue(server.isIPv6)
        try assertDualStack(server, serverDelegate)
    }

    /// `accept(onPort:)` listens on the IPv4 and IPv6 wildcards with the same OS-chosen port; binding the
    /// second would fail with EADDRINUSE without IPV6_V6ONLY. Only loopback addresses connect to it.
    func testWildcardListenerSharesOnePortAcrossFamilies() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = makeSocket(serverDelegate)
        try server.accept(onPort: 0)
        XCTAssertNotEqual(server.localPort, 0)
        try assertDualStack(server, serverDelegate)
    }

    private func assertDualStack(_ server: GCDAsyncSocket, _ serverDelegate: RecordingDelegate, file: StaticString = #filePath, line: UInt = #line) throws {
        var v6Only: Int32 = -1
        var fds: (Int32, Int32) = (-1, -1)
        perform(server) {
            fds = (server.socket4FD(), server.socket6FD())
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(server.socket6FD(), Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6Only, &length)
        }
        XCTAssertGreaterThanOrEqual(fds.0, 0, file: file, line: line)
        XCTAssertGreaterThanOrEqual(fds.1, 0, file: file, line: line)
        XCTAssertNotEqual(fds.0, fds.1, file: file, line: line)
        XCTAssertEqual(v6Only, 1, "the IPv6 listener sets IPV6_V6ONLY", file: file, line: line)

        var clients: [RawSocket] = []
        for host in ["127.0.0.1", "::1"] {
            let raw = try RawSocket(connectTo: host, port: server.localPort)
            try raw.send("hi from \(host)")
            XCTAssertEqual(try raw.receive(exactly: 8 + host.utf8.count), Data("hi from \(host)".utf8), file: file, line: line)
            clients.append(raw)
        }
        let accepted = serverDelegate.waitForAccepts(2, file: file, line: line)
        XCTAssertEqual(accepted.compactMap(\.connectedHost), ["127.0.0.1", "::1"], file: file, line: line)
        XCTAssertEqual(accepted.map(\.localPort), [server.localPort, server.localPort], file: file, line: line)
        for client in clients { client.close() }
    }

    func testConnectToAddressData() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate, interface: "::1")
        let address = try XCTUnwrap((GCDAsyncSocket.lookupHost("::1", port: server.localPort) as [Data]).first)
        XCTAssertTrue(GCDAsyncSocket.isIPv6Address(address))

        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toAddress: address, withTimeout: testTimeout)
        clientDelegate.waitForConnect()
        XCTAssertEqual(client.connectedHost, "::1")
        XCTAssertEqual(client.connectedPort, server.localPort)

        let other = makeSocket(makeDelegate())
        XCTAssertThrowsError(try other.connect(toAddress: Data([1, 2, 3]))) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertTrue(other.isDisconnected)
    }

    func testConnectViaInterfaceBindsLocally() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, viaInterface: "127.0.0.1:0", withTimeout: testTimeout)
        clientDelegate.waitForConnect()
        XCTAssertEqual(client.localHost, "127.0.0.1")

        let bad = makeSocket(makeDelegate())
        XCTAssertThrowsError(try bad.connect(toHost: "127.0.0.1", onPort: server.localPort, viaInterface: "no-such-if0", withTimeout: 1)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertThrowsError(try bad.connect(toHost: "127.0.0.1", onPort: server.localPort, viaInterface: ":notaport", withTimeout: 1)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertTrue(bad.isDisconnected, "a failed connect leaves the socket reusable")
    }

    func testReconnectAfterDisconnect() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        for round in 0..<3 {
            try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
            client.write(Data("round \(round)".utf8), withTimeout: -1, tag: round)
            client.readData(toLength: 7, withTimeout: -1, tag: round)
            XCTAssertEqual(clientDelegate.waitForReadBytes(7, tag: round), Data("round \(round)".utf8))
            client.disconnect()
            clientDelegate.wait("disconnect \(round)") { records in records.filter { $0.event.isDisconnect }.count == round + 1 }
        }
        XCTAssertEqual(serverDelegate.waitForAccepts(3).count, 3)
    }

    /// GCDAsyncSocket's `disconnect` is synchronous, so code reconnects right after it, from any thread.
    func testReconnectImmediatelyAfterDisconnectFromAnotherThread() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        clientDelegate.waitForConnect()
        // The second connection hangs (its SYN is dropped), so the socket stays in "connecting".
        let blackhole = try RawListener(host: "127.0.0.1", backlog: 0)
        let filler = try fillAcceptQueue(blackhole)
        client.disconnect()
        XCTAssertTrue(client.isDisconnected)
        try client.connect(toHost: "127.0.0.1", onPort: blackhole.port)
        XCTAssertFalse(client.isDisconnected, "connecting again")
        settle(client.eventLoop)
        XCTAssertNil(clientDelegate.waitForDisconnect())
        XCTAssertFalse(client.isDisconnected, "the old connection's close does not make the new one look idle")
        XCTAssertThrowsError(try client.connect(toHost: "127.0.0.1", onPort: server.localPort)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError, "still connecting: another connect is refused")
        }
        client.disconnect()
        clientDelegate.wait("the second disconnect") { records in records.filter { $0.event.isDisconnect }.count == 2 }
        XCTAssertTrue(client.isDisconnected)
        filler.close()
    }

    // MARK: Reads and writes queued before the connection completes

    func testReadsAndWritesQueuedBeforeConnectCompletes() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        var connectedWhileQueueing = true
        var thrown: (any Error)?
        perform(client) {
            // All on the loop, before it can poll: a TCP connect is still in progress (EINPROGRESS).
            do {
                try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
            } catch { thrown = error }
            client.write(Data("early bird".utf8), withTimeout: -1, tag: 1)
            client.readData(toLength: 10, withTimeout: -1, tag: 2)
            connectedWhileQueueing = client.isConnected
        }
        XCTAssertNil(thrown)
        XCTAssertFalse(connectedWhileQueueing, "the operations were queued while connecting")
        XCTAssertEqual(clientDelegate.waitForReadBytes(10, tag: 2), Data("early bird".utf8))
        let events = clientDelegate.events.map(\.description)
        XCTAssertEqual(events.first, "connected(127.0.0.1:\(server.localPort))", "didConnect comes before the queued I/O completes: \(events)")
        XCTAssertTrue(events.contains("wrote(tag 1)"))
    }

    func testOperationsQueuedFromAnotherThreadBeforeConnectAreKept() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "localhost", onPort: server.localPort)
        client.write(Data("abc".utf8), withTimeout: -1, tag: 7)
        client.readData(toLength: 3, withTimeout: -1, tag: 8)
        XCTAssertEqual(clientDelegate.waitForReadBytes(3, tag: 8), Data("abc".utf8))
    }

    // MARK: Happy Eyeballs

    func testLocalhostFallsBackToTheOtherFamilyWhenRefused() throws {
        // The server listens on ::1 only; 127.0.0.1 on the same port is bound but not listening, so the
        // preferred IPv4 attempt is refused and the IPv6 one connects.
        let (server, serverDelegate, blocker) = try serverOnIPv6WithIPv4Port { port in try RawListener(host: "127.0.0.1", port: port, listen: false) }
        _ = blocker
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        XCTAssertTrue(client.isIPv4PreferredOverIPv6, "IPv4 is preferred by default, as in GCDAsyncSocket")
        try client.connect(toHost: "localhost", onPort: server.localPort, withTimeout: testTimeout)
        clientDelegate.waitForConnect()
        XCTAssertEqual(client.connectedHost, "::1")
        XCTAssertEqual(serverDelegate.waitForAccepts(1).count, 1)
    }

    func testPreferIPv6TriesIPv6First() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate, interface: "localhost")
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        client.isIPv4PreferredOverIPv6 = false
        try client.connect(toHost: "localhost", onPort: server.localPort)
        clientDelegate.waitForConnect()
        XCTAssertEqual(client.connectedHost, "::1")

        let v4Delegate = makeDelegate("v4")
        let v4 = makeSocket(v4Delegate)
        try v4.connect(toHost: "localhost", onPort: server.localPort)
        v4Delegate.waitForConnect()
        XCTAssertEqual(v4.connectedHost, "127.0.0.1")
    }

    /// The preferred (IPv4) attempt hangs — its SYN is dropped by a listener whose accept queue is full —
    /// so the IPv6 attempt starts after `alternateAddressDelay` and wins; the hung attempt is closed.
    func testAlternateAddressDelayStartsTheNextAttempt() throws {
        var filler: RawSocket?
        let (server, serverDelegate, blackhole) = try serverOnIPv6WithIPv4Port { port in
            let listener = try RawListener(host: "127.0.0.1", port: port, backlog: 0)
            filler = try fillAcceptQueue(listener)
            return listener
        }
        _ = (blackhole, filler)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        client.alternateAddressDelay = 0.05
        XCTAssertEqual(client.alternateAddressDelay, 0.05)
        let start = Deadline.now()
        try client.connect(toHost: "localhost", onPort: server.localPort, withTimeout: testTimeout)
        clientDelegate.waitForConnect()
        let elapsed = Double(Deadline.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        XCTAssertEqual(client.connectedHost, "::1")
        XCTAssertGreaterThanOrEqual(elapsed, 0.05, "the second attempt waited for alternateAddressDelay")
        XCTAssertEqual(serverDelegate.waitForAccepts(1).count, 1)
    }

    /// A server on ::1 whose port is also held on 127.0.0.1 by `blocker` (retrying if that port is taken).
    private func serverOnIPv6WithIPv4Port<T>(_ blocker: (UInt16) throws -> T) throws -> (GCDAsyncSocket, RecordingDelegate, T) {
        var lastError: (any Error)?
        for _ in 0..<20 {
            let delegate = makeDelegate("v6 server")
            let server = try makeServer(delegate, interface: "::1")
            do {
                return (server, delegate, try blocker(server.localPort))
            } catch {
                lastError = error
                server.disconnect()
            }
        }
        throw lastError!
    }

    // MARK: Failures

    func testConnectTimeout() throws {
        let blackhole = try RawListener(host: "127.0.0.1", backlog: 0)
        let filler = try fillAcceptQueue(blackhole)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        client.readData(withTimeout: -1, tag: 1)  // Dropped: not connecting yet.
        try client.connect(toHost: "127.0.0.1", onPort: blackhole.port, withTimeout: 0.1)
        client.write(Data("never".utf8), withTimeout: -1, tag: 2)
        let error = clientDelegate.waitForDisconnect()
        XCTAssertEqual(error.socketCode, .connectTimeoutError, "\(String(describing: error))")
        XCTAssertTrue(client.isDisconnected)
        settle(client.eventLoop)
        let events = clientDelegate.events.map(\.description)
        XCTAssertEqual(events.count, 2, "\(events)")
        XCTAssertTrue(events[0].hasPrefix("failedWrite(tag 2"), "the queued write fails: \(events)")
        XCTAssertTrue(events[1].hasPrefix("disconnected("), "\(events)")
        filler.close()
    }

    func testDisconnectWhileConnecting() throws {
        let blackhole = try RawListener(host: "127.0.0.1", backlog: 0)
        let filler = try fillAcceptQueue(blackhole)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: blackhole.port)
        XCTAssertFalse(client.isDisconnected)
        XCTAssertFalse(client.isConnected)
        client.disconnect()
        XCTAssertNil(clientDelegate.waitForDisconnect())
        settle(client.eventLoop)
        XCTAssertEqual(clientDelegate.events.count, 1, "\(clientDelegate.events)")
        filler.close()
    }

    func testConnectionRefusedKeepsErrno() throws {
        let closed = try RawListener(host: "127.0.0.1", listen: false)  // bound, so nobody else listens there
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: closed.port, withTimeout: testTimeout)
        let error = clientDelegate.waitForDisconnect()
        let socketError = try XCTUnwrap(error as? GCDAsyncSocketError)
        XCTAssertEqual(socketError.errno, .connectionRefused)
        XCTAssertEqual(socketError.errno?.rawValue, ECONNREFUSED)
        XCTAssertEqual(socketError.syscall, .connect)
        XCTAssertEqual(socketError.code, .otherError)
        settle(client.eventLoop)
        XCTAssertEqual(clientDelegate.events.count, 1, "exactly one callback: \(clientDelegate.events)")
    }

    func testUnknownHostFailsWithBadParam() throws {
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        // `.invalid` never resolves (RFC 6761); the lookup runs off the loop and fails in the delegate.
        try client.connect(toHost: "nonexistent.invalid", onPort: 80, withTimeout: testTimeout)
        let error = clientDelegate.waitForDisconnect()
        XCTAssertEqual(error.socketCode, .badParamError, "\(String(describing: error))")
        XCTAssertTrue(client.isDisconnected)
        XCTAssertThrowsError(try GCDAsyncSocket.lookupHost("nonexistent.invalid", port: 80)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
    }

    func testConnectTwiceThrowsBadConfig() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        XCTAssertThrowsError(try client.connect(toHost: "127.0.0.1", onPort: server.localPort)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError)
        }
        XCTAssertThrowsError(try client.accept(onInterface: "127.0.0.1", port: 0)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError)
        }
        XCTAssertThrowsError(try server.connect(toHost: "127.0.0.1", onPort: server.localPort), "a listener cannot connect") { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError)
        }
        // The first connection is unharmed.
        client.write(Data("still fine".utf8), withTimeout: -1, tag: 1)
        client.readData(toLength: 10, withTimeout: -1, tag: 1)
        XCTAssertEqual(clientDelegate.waitForReadBytes(10), Data("still fine".utf8))
        XCTAssertEqual(clientDelegate.count { if case .connected = $0 { return true } else { return false } }, 1)
    }

    func testEmptyHostThrowsBadParam() throws {
        let client = makeSocket(makeDelegate())
        do {
            try client.connect(toHost: "", onPort: 80)
            XCTFail("connect to an empty host must throw")
        } catch GCDAsyncSocketError.badParamError {
            // Expected.
        }
        XCTAssertTrue(client.isDisconnected)
    }

    func testBothFamiliesDisabledThrowsBadConfig() throws {
        let client = makeSocket(makeDelegate())
        client.isIPv4Enabled = false
        client.isIPv6Enabled = false
        XCTAssertThrowsError(try client.connect(toHost: "127.0.0.1", onPort: 80)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError)
        }
        XCTAssertThrowsError(try client.accept(onInterface: "127.0.0.1", port: 0)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError)
        }
    }

    func testDisabledFamilyIsNotUsed() throws {
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        client.isIPv4Enabled = false
        try client.connect(toHost: "127.0.0.1", onPort: 9)
        XCTAssertEqual(clientDelegate.waitForDisconnect().socketCode, .badConfigError)

        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate, interface: "localhost") { $0.isIPv6Enabled = false }
        XCTAssertTrue(server.isIPv4)
        XCTAssertFalse(server.isIPv6, "IPv6 disabled: only the IPv4 loopback listens")
    }

    func testUnixPathTooLongThrowsBadParam() throws {
        let long = "/tmp/" + String(repeating: "p", count: 200) + ".sock"
        let client = makeSocket(makeDelegate())
        XCTAssertThrowsError(try client.connect(to: URL(fileURLWithPath: long), withTimeout: 1)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertTrue(client.isDisconnected)
        XCTAssertThrowsError(try client.accept(on: URL(fileURLWithPath: long))) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertTrue(client.isDisconnected, "the failed accept leaves the socket idle")
    }

    func testConnectToAUnixSocketNobodyListensOnIsRefused() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("stale.sock")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = rawUnixAddress(path)
        _ = withUnsafePointer(to: &address.storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) } }
        close(fd)  // The file stays; nobody listens.
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(to: URL(fileURLWithPath: path), withTimeout: testTimeout)
        let error = clientDelegate.waitForDisconnect() as? GCDAsyncSocketError
        XCTAssertEqual(error?.errno, .connectionRefused)
        settle(client.eventLoop)
        XCTAssertEqual(clientDelegate.events.count, 1)
    }

    func testConnectToMissingUnixSocketFails() throws {
        let directory = try makeTempDirectory()
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(to: URL(fileURLWithPath: directory.file("absent.sock")), withTimeout: 1)
        let error = clientDelegate.waitForDisconnect() as? GCDAsyncSocketError
        XCTAssertEqual(error?.errno, .noSuchFileOrDirectory)
    }
}

/// Fills a backlog-0 listener's accept queue with one connection, so that the kernel drops further SYNs
/// (a connect to it then hangs in SYN_SENT: the only deterministic "no answer" on loopback).
func fillAcceptQueue(_ listener: RawListener) throws -> RawSocket {
    let filler = try RawSocket(connectTo: "127.0.0.1", port: listener.port)
    let deadline = Date(timeIntervalSinceNow: testTimeout)
    while listener.acceptQueueLength < 1 {
        guard Date() < deadline else { throw TestTimeout(what: "the accept queue to fill") }
        sched_yield()
    }
    return filler
}
