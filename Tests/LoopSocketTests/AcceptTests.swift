import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// Listening and accepting: what accepted sockets inherit, listener lifetime, errors.
final class AcceptTests: SocketTestCase {
    func testAcceptedSocketInheritsDelegateAndEchoes() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let (raw, child) = try rawClient(to: server, delegate: serverDelegate)
        XCTAssertTrue(child.delegate === serverDelegate, "the child inherits the listener's delegate")
        XCTAssertNil(child.delegateQueue)
        XCTAssertTrue(child.eventLoop === server.eventLoop, "a one-loop group has only one loop to offer")
        XCTAssertEqual(child.connectedHost, "127.0.0.1")
        XCTAssertEqual(child.connectedPort, raw.localPort)
        XCTAssertTrue(child.isIPv4)
        try raw.send("echo me")
        XCTAssertEqual(try raw.receive(exactly: 7), Data("echo me".utf8))
        let onLoop = serverDelegate.records.filter { $0.socket == ObjectIdentifier(child) }.allSatisfy(\.onLoop)
        XCTAssertTrue(onLoop, "without a delegate queue, callbacks run on the socket's loop")
    }

    func testChildGetsTheQueueFromNewSocketQueueForConnection() throws {
        let childQueue = makeQueue("child-queue")
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        serverDelegate.configure { $0.newSocketQueue = childQueue }
        let server = try makeServer(serverDelegate)
        let (raw, child) = try rawClient(to: server, delegate: serverDelegate)
        XCTAssertTrue(child.delegateQueue === childQueue)
        try raw.send("q")
        XCTAssertEqual(try raw.receive(exactly: 1), Data("q".utf8))
        childQueue.sync {}
        let childRecords = serverDelegate.records.filter { $0.socket == ObjectIdentifier(child) }
        XCTAssertFalse(childRecords.isEmpty)
        XCTAssertTrue(childRecords.allSatisfy { $0.queueTag == "child-queue" && !$0.onLoop }, "\(childRecords.map(\.queueTag))")
        let listenerRecords = serverDelegate.records.filter { $0.socket == ObjectIdentifier(server) }
        XCTAssertTrue(listenerRecords.allSatisfy(\.onLoop), "the listener's own callbacks stay inline")
    }

    /// A delegate whose type takes the default `newSocketQueueForConnection` is not asked again (the listener
    /// remembers the type, and no longer copies each peer's address for it), while a delegate set later that
    /// implements it is asked for every connection: GCDAsyncSocket's `respondsToSelector:` rule.
    func testOnlyADelegateThatImplementsNewSocketQueueForConnectionIsAsked() throws {
        let plain = DefaultQueueDelegate()
        let server = GCDAsyncSocket(delegate: plain, delegateQueue: nil, loop: loop)
        try server.accept(onInterface: "127.0.0.1", port: 0)
        defer { server.disconnect() }
        var clients: [RawSocket] = []
        for _ in 0..<2 {
            clients.append(try RawSocket(connectTo: "127.0.0.1", port: server.localPort))
            XCTAssertEqual(plain.accepted.wait(timeout: .now() + 10), .success)
        }
        let remembered = try onLoop(loop) { () -> ObjectIdentifier? in
            guard case .listeningDelegate(let memo) = server.recipient else { return nil }
            return memo.defaultAnswerType
        }
        XCTAssertEqual(remembered, ObjectIdentifier(DefaultQueueDelegate.self), "the default ran and was noted")

        let childQueue = makeQueue("chosen")
        let choosing = makeDelegate("choosing")
        choosing.configure { $0.newSocketQueue = childQueue }
        server.delegate = choosing
        let landed = try onLoop(loop) { server.loopDelegate === choosing }  // after the setter's own hop
        XCTAssertTrue(landed)
        for _ in 0..<2 {
            let (raw, child) = try rawClient(to: server, delegate: choosing)
            clients.append(raw)
            XCTAssertTrue(child.delegateQueue === childQueue, "a type that implements it is asked every time")
        }
    }

    /// `newSocketQueueForConnection` is given the connecting peer's address, as GCDAsyncSocket gives it (the
    /// listener asks the kernel for it only when it asks a delegate).
    func testNewSocketQueueForConnectionIsGivenThePeersAddress() throws {
        let chooser = AddressRecordingDelegate()
        let server = GCDAsyncSocket(delegate: chooser, delegateQueue: nil, loop: loop)
        try server.accept(onInterface: "127.0.0.1", port: 0)
        defer { server.disconnect() }
        let client = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        XCTAssertEqual(chooser.accepted.wait(timeout: .now() + testTimeout), .success)
        let address = try XCTUnwrap(chooser.addresses.withLock { $0.first })
        XCTAssertEqual(GCDAsyncSocket.host(fromAddress: address), "127.0.0.1")
        XCTAssertEqual(GCDAsyncSocket.port(fromAddress: address), client.localPort)
    }

    func testStoppingTheListenerLeavesAcceptedSocketsAlone() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let port = server.localPort
        let (raw, child) = try rawClient(to: server, delegate: serverDelegate)
        server.disconnect()
        XCTAssertNil(serverDelegate.waitForDisconnect(of: server))
        XCTAssertTrue(server.isDisconnected)
        XCTAssertEqual(server.localPort, 0)
        XCTAssertThrowsError(try RawSocket(connectTo: "127.0.0.1", port: port)) { error in
            XCTAssertEqual((error as? RawSocketError)?.errno, ECONNREFUSED, "the listening descriptor is closed")
        }
        try raw.send("alive")
        XCTAssertEqual(try raw.receive(exactly: 5), Data("alive".utf8))
        XCTAssertTrue(child.isConnected)
        // The listener can listen again.
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let second = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        try second.send("again")
        XCTAssertEqual(try second.receive(exactly: 5), Data("again".utf8))
    }

    func testAcceptErrors() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeServer(serverDelegate)
        XCTAssertThrowsError(try server.accept(onInterface: "127.0.0.1", port: 0)) { error in
            XCTAssertEqual(error.socketError?.code, .badConfigError, "already listening")
        }
        let other = makeSocket(makeDelegate("other"))
        other.options.reuseAddress = false
        XCTAssertThrowsError(try other.accept(onInterface: "127.0.0.1", port: server.localPort)) { error in
            XCTAssertEqual(error.socketError?.code, .otherError)
            XCTAssertEqual(error.socketError?.errno, .addressInUse)
            XCTAssertEqual(error.socketError?.syscall, .bind)
        }
        XCTAssertTrue(other.isDisconnected)
        XCTAssertThrowsError(try other.accept(onInterface: "no-such-interface9", port: 0)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertThrowsError(try other.accept(onInterface: "300.1.1.1", port: 0)) { error in
            XCTAssertEqual(error.socketError?.code, .badParamError)
        }
        XCTAssertTrue(other.isDisconnected)
    }

    /// Listening on both loopbacks when the IPv6 port is taken: the IPv4 listener already opened must be
    /// closed again (the descriptor check in tearDown sees a leak otherwise).
    func testFailureOnTheSecondFamilyClosesTheFirst() throws {
        let taken = try RawListener(host: "::1")
        let server = makeSocket(makeDelegate("server"))
        XCTAssertThrowsError(try server.accept(onInterface: "localhost", port: taken.port)) { error in
            XCTAssertEqual(error.socketError?.errno, .addressInUse)
        }
        XCTAssertTrue(server.isDisconnected)
        XCTAssertThrowsError(try RawSocket(connectTo: "127.0.0.1", port: taken.port)) { error in
            XCTAssertEqual((error as? RawSocketError)?.errno, ECONNREFUSED, "nothing listens on the IPv4 side")
        }
    }

    func testAcceptOnInterfaceName() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate, interface: "lo")
        XCTAssertTrue(server.isIPv4)
        let raw = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        try raw.send("lo")
        XCTAssertEqual(try raw.receive(exactly: 2), Data("lo".utf8))
    }

    func testUnixListenerDoesNotReplaceARegularFile() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("not-a-socket")
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        let server = makeSocket(makeDelegate("server"))
        XCTAssertThrowsError(try server.accept(on: URL(fileURLWithPath: path))) { error in
            XCTAssertEqual(error.socketError?.errno, .addressInUse)
        }
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data("keep me".utf8), "only stale sockets are removed")
        XCTAssertTrue(server.isDisconnected)
    }

    func testUnixListenerFileMode() throws {
        let directory = try makeTempDirectory()
        let path = directory.file("mode.sock")
        let server = makeSocket(makeDelegate("server"))
        server.options.unixSocketMode = 0o600
        try server.accept(on: URL(fileURLWithPath: path))
        var status = stat()
        XCTAssertEqual(stat(path, &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o600)
        XCTAssertTrue(server.localAddress.map { $0.count > 2 } ?? false)
    }

    func testManyClientsAtOnce() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        var clients: [RawSocket] = []
        for i in 0..<100 {
            let raw = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
            try raw.send("client \(i);")
            clients.append(raw)
        }
        for (i, raw) in clients.enumerated() {
            let expected = Data("client \(i);".utf8)
            XCTAssertEqual(try raw.receive(exactly: expected.count), expected)
        }
        XCTAssertEqual(serverDelegate.waitForAccepts(100).count, 100)
    }
}

/// Accepted sockets are spread over the listener's group.
final class AcceptSpreadTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    func testAcceptedSocketsAreSpreadOverTheGroupsLoops() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        var clients: [RawSocket] = []
        for i in 0..<6 {
            let raw = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
            try raw.send("\(i)")
            XCTAssertEqual(try raw.receive(exactly: 1), Data("\(i)".utf8))
            clients.append(raw)
        }
        let accepted = serverDelegate.waitForAccepts(6)
        let loops = accepted.map { ObjectIdentifier($0.eventLoop) }
        XCTAssertEqual(Set(loops), Set(group.loops.map { ObjectIdentifier($0) }), "every loop of the group gets connections")
        for i in 1..<loops.count {
            XCTAssertNotEqual(loops[i], loops[i - 1], "consecutive accepts go to different loops (round robin)")
        }
        // Each child's callbacks run on its own loop.
        for child in accepted {
            let records = serverDelegate.records.filter { $0.socket == ObjectIdentifier(child) }
            XCTAssertTrue(records.allSatisfy(\.onLoop))
        }
    }

    func testClientOnOneLoopServerOnAnother() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = makeSocket(serverDelegate, loop: group.loops[0])
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate, loop: group.loops[1])
        XCTAssertTrue(client.eventLoop === group.loops[1])
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        client.write(Data("cross-loop".utf8), withTimeout: -1, tag: 1)
        client.readData(toLength: 10, withTimeout: -1, tag: 2)
        XCTAssertEqual(clientDelegate.waitForReadBytes(10, tag: 2), Data("cross-loop".utf8))
        XCTAssertTrue(serverDelegate.accepted.allSatisfy { $0.eventLoop === group.loops[0] },
                      "a listener pinned to a loop (no group) accepts onto that loop")
    }
}

/// A delegate that implements nothing but the accept callback: `newSocketQueueForConnection` is the default.
private final class DefaultQueueDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {
    let accepted = DispatchSemaphore(value: 0)

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        accepted.signal()
    }
}

/// A delegate that implements `newSocketQueueForConnection` (choosing no queue) and records the addresses it
/// is given.
private final class AddressRecordingDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {
    let accepted = DispatchSemaphore(value: 0)
    let addresses = Locked<[Data]>([])

    func newSocketQueueForConnection(fromAddress address: Data, on sock: GCDAsyncSocket) -> DispatchQueue? {
        addresses.withLock { $0.append(address) }
        return nil
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        accepted.signal()
    }
}
