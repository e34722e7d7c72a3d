import Dispatch
import Foundation
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// A client connecting to a listener of the same process has its `didConnect` after the listener's
/// `didAcceptNewSocket` (and `AsyncSocket.connect` returns after the accepted connection is in the
/// listener's `connections`), whatever loops and queues the two have: CocoaAsyncSocket's own tests read the
/// accepted socket when the client's connect is reported. One delegate records both sides, so its log is
/// the order in which the callbacks ran.
final class AcceptBeforeConnectTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    private let rounds = 30

    /// Connects `rounds` clients to one listener and checks, for each, that its accept ran first.
    private func checkAcceptsComeFirst(
        serverLoop: EventLoop, clientLoop: EventLoop, serverQueue: DispatchQueue?, clientQueue: DispatchQueue?,
        _ layout: String, host: String = "127.0.0.1", interface: String = "127.0.0.1"
    ) throws {
        let delegate = makeDelegate(layout)
        let server = makeSocket(delegate, queue: serverQueue, loop: serverLoop)
        try server.accept(onInterface: interface, port: 0)
        var clients: [GCDAsyncSocket] = []
        for round in 0..<rounds {
            let client = makeSocket(delegate, queue: clientQueue, loop: clientLoop)
            clients.append(client)
            try client.connect(toHost: host, onPort: server.localPort, withTimeout: testTimeout)
            delegate.wait("connect \(round)") { records in
                records.filter { if case .connected = $0.event { true } else { false } }.count > round
            }
            // This round's connect (the last one) came after this round's accept.
            let events = delegate.events
            let connect = events.indices.filter { if case .connected = events[$0] { true } else { false } }[round]
            let accepts = events[..<connect].filter { if case .accepted = $0 { true } else { false } }.count
            XCTAssertEqual(accepts, round + 1, "\(layout), round \(round): the accept came first: \(events)")
            // The accepted socket the client's callback would read is there.
            XCTAssertEqual(delegate.accepted.count, round + 1, "\(layout), round \(round)")
        }
        for client in clients { client.disconnect() }
        server.disconnect()
    }

    func testAcceptComesBeforeConnectOnTwoLoopsAndTwoQueues() throws {
        try checkAcceptsComeFirst(serverLoop: group.loops[0], clientLoop: group.loops[1],
                                  serverQueue: makeQueue("server"), clientQueue: makeQueue("client"), "two loops, two queues")
    }

    func testAcceptComesBeforeConnectOnTwoLoopsAndOneQueue() throws {
        let queue = makeQueue("shared")
        try checkAcceptsComeFirst(serverLoop: group.loops[0], clientLoop: group.loops[1],
                                  serverQueue: queue, clientQueue: queue, "two loops, one queue")
    }

    func testAcceptComesBeforeConnectOnOneLoop() throws {
        try checkAcceptsComeFirst(serverLoop: group.loops[0], clientLoop: group.loops[0],
                                  serverQueue: makeQueue("server"), clientQueue: makeQueue("client"), "one loop, two queues")
    }

    func testAcceptComesBeforeConnectWithCallbacksOnTheLoops() throws {
        try checkAcceptsComeFirst(serverLoop: group.loops[0], clientLoop: group.loops[1],
                                  serverQueue: nil, clientQueue: nil, "two loops, inline")
        try checkAcceptsComeFirst(serverLoop: group.loops[1], clientLoop: group.loops[1],
                                  serverQueue: nil, clientQueue: nil, "one loop, inline")
    }

    func testAcceptComesBeforeConnectOverIPv6AndOnEveryInterface() throws {
        try checkAcceptsComeFirst(serverLoop: group.loops[0], clientLoop: group.loops[1], serverQueue: makeQueue("server"),
                                  clientQueue: makeQueue("client"), "IPv6", host: "::1", interface: "::1")
        try checkAcceptsComeFirst(serverLoop: group.loops[0], clientLoop: group.loops[1], serverQueue: makeQueue("server"),
                                  clientQueue: makeQueue("client"), "any interface", host: "127.0.0.1", interface: "0.0.0.0")
    }

    /// A listener that never gets to tell its delegate (its queue is stuck) delays the client's connect by
    /// the bounded hold, and no more: the client is still told.
    func testAListenerThatNeverReportsItsAcceptDelaysTheConnectOnlyByTheHold() throws {
        let serverQueue = makeQueue("stuck server")
        let serverDelegate = makeDelegate("server")
        let server = makeSocket(serverDelegate, queue: serverQueue, loop: group.loops[0])
        try server.accept(onInterface: "127.0.0.1", port: 0)
        serverQueue.suspend()
        defer { serverQueue.resume() }
        let delegate = makeDelegate("client")
        let client = makeSocket(delegate, queue: makeQueue("client"), loop: group.loops[1])
        let start = Date()
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        delegate.waitForConnect()
        let waited = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(waited, LocalAccepts.holdLimit * 0.9, "the connect waited for the accept")
        XCTAssertTrue(serverDelegate.accepted.isEmpty, "the listener's queue never ran")
        client.disconnect()
        delegate.waitForDisconnect()
    }

    /// `AsyncSocket.connect` returns once the listener has yielded the connection to `connections`: a
    /// consumer waiting in `next()` has been handed it (it waits no longer) by then. (Driven from the
    /// test's thread with signals: no `Task.sleep`, whose timer descriptor would outlive the test.)
    func testAsyncConnectReturnsAfterTheListenerYieldedTheConnection() throws {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        let port = listener.localPort
        let queue = listener.connections.queue
        let clientLoop = group.loops[1]
        for round in 0..<rounds {
            let accepted = Locked<AsyncSocket?>(nil)
            let acceptDone = Signal()
            Task {
                var iterator = listener.connections.makeAsyncIterator()
                accepted.value = try? await iterator.next()
                acceptDone.fire()
            }
            try waitUntil("the consumer to wait") { queue.hasWaitingConsumer }
            let client = Locked<AsyncSocket?>(nil)
            let seen = Locked("")
            let connected = Signal()
            Task {
                do {
                    client.value = try await AsyncSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5), loop: clientLoop)
                    seen.value = queue.hasWaitingConsumer ? "the consumer still waits" : "yielded"
                } catch {
                    seen.value = "\(error)"
                }
                connected.fire()
            }
            try connected.waitOrThrow("the connect")
            XCTAssertEqual(seen.value, "yielded", "round \(round): the connection was yielded before connect returned")
            try acceptDone.waitOrThrow("the accept")
            XCTAssertNotNil(accepted.value, "round \(round)")
            accepted.value?.socket.disconnect()
            client.value?.socket.disconnect()
        }
        listener.close()
    }
}
