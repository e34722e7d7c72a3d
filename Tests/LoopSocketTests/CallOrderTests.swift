import Dispatch
import Foundation
import Glibc
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Happens-before for calls made off the loop, as on a GCD socket queue (whose blocks run in the order
/// submitted): what a thread asked of a socket before an event occurred has taken effect when the event is
/// handled. Each scenario holds the socket's loop inside a task, makes the call from the test's thread (it
/// is queued), makes the event happen (the bytes or datagram are in the kernel when the send returns), and
/// only then lets the loop go on: the one poll that follows returns the event and the call's task
/// together. The order inside that iteration is the whole question, so the scenario is repeated a few
/// times and, once more, with the loop asleep in `epoll_wait` instead (the race as users meet it).
final class CallOrderTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    private let rounds = 5

    /// Holds `loop` inside a task until the returned signal fires (bounded: the task gives up after
    /// ``testTimeout``). Calls made meanwhile from other threads queue up behind it.
    private func hold(_ loop: EventLoop) throws -> Signal {
        let entered = Signal()
        let release = Signal()
        try loop.execute {
            entered.fire()
            release.wait()
        }
        try entered.waitOrThrow("the loop to enter the holding task")
        return release
    }

    /// Sends `texts` from a socket on the other loop and returns once every send is reported (a loopback
    /// datagram is in the receiver's buffer when `sendto` returns).
    private func send(_ texts: [String], to port: UInt16) {
        let delegate = UDPRecorder()
        let sender = makeUDP(delegate, loop: group.loops[1])
        for (tag, text) in texts.enumerated() {
            sender.send(Data(text.utf8), toHost: "127.0.0.1", port: port, withTimeout: -1, tag: tag)
        }
        delegate.waitForOutcomes(texts.count)
    }

    /// A UDP socket on the first loop, bound to loopback, receiving continuously.
    private func receiver(_ delegate: UDPRecorder) throws -> GCDAsyncUdpSocket {
        let receiver = makeUDP(delegate, loop: loop)
        try receiver.bind(toPort: 0, interface: "127.0.0.1")
        try receiver.beginReceiving()
        return receiver
    }

    /// Two loop turns: whatever the loop would deliver by now has been delivered.
    private func settle(_ socket: GCDAsyncUdpSocket) {
        for _ in 0..<2 { socket.perform {} }
    }

    /// Disconnects `client`, waits for its delegate to hear it, and closes the raw peer.
    private func close(_ client: GCDAsyncSocket, _ delegate: RecordingDelegate, _ peer: RawSocket) {
        client.disconnect()
        delegate.waitForDisconnect()
        peer.close()
    }

    private func strings(_ delegate: UDPRecorder) -> [String] {
        delegate.received.map { String(decoding: $0, as: UTF8.self) }
    }

    // MARK: UDP

    /// The receive filter set from the user's thread refuses a datagram sent after the call.
    func testReceiveFilterSetBeforeADatagramArrivesFiltersIt() throws {
        for round in 0..<rounds {
            let delegate = UDPRecorder()
            let receiver = try receiver(delegate)
            let release = try hold(loop)
            receiver.setReceiveFilter({ data, _, _ in data != Data("refused".utf8) }, with: nil)
            send(["refused", "kept"], to: receiver.localPort())
            release.fire()
            delegate.waitForReceived(1)
            settle(receiver)
            XCTAssertEqual(strings(delegate), ["kept"], "round \(round): the filter was in place first")
            receiver.close()
        }
    }

    /// The same with the loop asleep when the call is made: no holding task, the race as it happens.
    func testReceiveFilterSetFromAnotherThreadWhileTheLoopSleeps() throws {
        let delegate = UDPRecorder()
        let receiver = try receiver(delegate)
        let port = receiver.localPort()
        let sender = makeUDP(UDPRecorder(), loop: group.loops[1])
        for round in 0..<200 {
            let marker = "refused \(round)"
            receiver.setReceiveFilter({ data, _, _ in data != Data(marker.utf8) }, with: nil)
            sender.send(Data(marker.utf8), toHost: "127.0.0.1", port: port, withTimeout: -1, tag: round)
            sender.send(Data("kept \(round)".utf8), toHost: "127.0.0.1", port: port, withTimeout: -1, tag: round)
            delegate.waitForReceived(round + 1)
        }
        settle(receiver)
        XCTAssertEqual(strings(delegate), (0..<200).map { "kept \($0)" }, "no datagram got past the filter set before it was sent")
    }

    /// `pauseReceiving()` from the user's thread: a datagram sent after it waits in the kernel, and comes
    /// with the next `beginReceiving()`.
    func testPauseReceivingBeforeADatagramArrivesKeepsItQueued() throws {
        for round in 0..<rounds {
            let delegate = UDPRecorder()
            let receiver = try receiver(delegate)
            let release = try hold(loop)
            receiver.pauseReceiving()
            send(["later"], to: receiver.localPort())
            release.fire()
            settle(receiver)
            XCTAssertEqual(strings(delegate), [], "round \(round): paused before the datagram came")
            try receiver.receiveOnce()
            delegate.waitForReceived(1)
            XCTAssertEqual(strings(delegate), ["later"], "round \(round)")
            receiver.close()
        }
    }

    /// A new delegate set from the user's thread gets the datagram sent after the call.
    func testUDPDelegateSetBeforeADatagramArrivesReceivesIt() throws {
        for round in 0..<rounds {
            let first = UDPRecorder()
            let second = UDPRecorder()
            let receiver = try receiver(first)
            let release = try hold(loop)
            receiver.setDelegate(second)
            send(["new"], to: receiver.localPort())
            release.fire()
            second.waitForReceived(1)
            settle(receiver)
            XCTAssertEqual(strings(first), [], "round \(round): the previous delegate got nothing")
            XCTAssertEqual(strings(second), ["new"], "round \(round)")
            receiver.close()
        }
    }

    // MARK: TCP

    /// A read queued from the user's thread comes before a read that a later event's callback queues: the
    /// bytes go to the reads in the order they were asked for.
    func testReadQueuedFromAnotherThreadComesBeforeOneALaterCallbackQueues() throws {
        for round in 0..<rounds {
            let delegate = makeDelegate("client \(round)")
            // Inline callbacks: the read the first completion asks for is queued during that event.
            delegate.configure { hooks in
                hooks.read = { sock, _, tag in
                    if tag == 0 { sock.readData(toLength: 6, withTimeout: -1, tag: 2) }
                }
            }
            let (client, peer) = try connectToRawPeer(delegate)
            client.readData(toLength: 5, withTimeout: -1, tag: 0)
            let release = try hold(client.eventLoop)
            client.readData(toLength: 6, withTimeout: -1, tag: 1)
            try peer.send("first")
            release.fire()
            delegate.waitForReadBytes(5, tag: 0)
            try peer.send("second")
            try peer.send("third!")
            delegate.waitForReadBytes(17)
            XCTAssertEqual(delegate.reads().map(\.1), [0, 1, 2], "round \(round): reads complete in the order asked")
            XCTAssertEqual(delegate.readBytes(tag: 1), Data("second".utf8), "round \(round)")
            close(client, delegate, peer)
        }
    }

    /// A listener closed from the user's thread accepts no connection that arrives after the call.
    func testListenerClosedBeforeAClientConnectsAcceptsNothing() throws {
        for round in 0..<rounds {
            let delegate = makeDelegate("server \(round)")
            let server = makeSocket(delegate, loop: loop)
            try server.accept(onInterface: "127.0.0.1", port: 0)
            let port = server.localPort
            let release = try hold(loop)
            server.disconnect()
            let client = try RawSocket(connectTo: "127.0.0.1", port: port)  // completed by the kernel's backlog
            release.fire()
            delegate.waitForDisconnect()
            settle(loop)
            XCTAssertEqual(delegate.accepted.count, 0, "round \(round): closed before the client came: \(delegate.events)")
            client.close()
        }
    }

    /// A delegate set from the user's thread gets the read completed by bytes that arrive after the call.
    func testDelegateSetBeforeBytesArriveGetsTheirRead() throws {
        for round in 0..<rounds {
            let first = makeDelegate("first \(round)")
            let second = makeDelegate("second \(round)")
            let (client, peer) = try connectToRawPeer(first)
            client.readData(withTimeout: -1, tag: 1)
            let release = try hold(client.eventLoop)
            client.delegate = second
            try peer.send("for the new delegate")
            release.fire()
            second.waitForReadBytes(20)
            XCTAssertEqual(first.reads().count, 0, "round \(round): the previous delegate got no read: \(first.events)")
            XCTAssertEqual(second.readBytes(tag: 1), Data("for the new delegate".utf8), "round \(round)")
            close(client, second, peer)
        }
    }

    /// `perform` from the user's thread runs before the loop handles bytes that arrived after the call.
    func testPerformRunsBeforeLaterBytesAreHandled() throws {
        for round in 0..<rounds {
            let delegate = makeDelegate("client \(round)")
            let order = Locked<[String]>([])
            delegate.configure { $0.read = { _, _, _ in order.withLock { $0.append("read") } } }
            let (client, peer) = try connectToRawPeer(delegate)
            client.readData(withTimeout: -1, tag: 1)
            let release = try hold(client.eventLoop)
            let performed = onNewThread { client.perform { order.withLock { $0.append("perform") } } }
            // The perform's task is queued once the loop holds it; the bytes come after the call.
            try waitUntil("the perform to be queued") { client.eventLoop.hasQueuedRemoteTasks(atLeast: 1) }
            try peer.send("x")
            release.fire()
            XCTAssertTrue(performed.wait(), "round \(round): perform returned")
            // The hook runs after the delegate records the read: wait for the hook itself.
            try waitUntil("the read's hook") { order.value.count == 2 }
            XCTAssertEqual(order.value, ["perform", "read"], "round \(round)")
            close(client, delegate, peer)
        }
    }

    // MARK: The async faces

    /// `AsyncListener.close()` from a task off the loop: a client that connects after the call is never
    /// handed out; `connections` just ends.
    func testAsyncListenerClosedBeforeAClientConnectsYieldsNothing() throws {
        for round in 0..<rounds {
            let listenerSocket = try closeAsyncListenerBeforeAClientConnects(round)
            // The tasks release the listener once they end: its loops must not outlive the test.
            try waitUntil("the listener to be released") { listenerSocket.value == nil }
        }
    }

    /// One round of the test above; returns the listener's socket, weakly.
    private func closeAsyncListenerBeforeAClientConnects(_ round: Int) throws -> Weak<GCDAsyncSocket> {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        let port = listener.localPort
        let taken = Locked<[String]>([])
        let ended = Signal()
        Task {
            do {
                for try await connection in listener.connections {
                    taken.withLock { $0.append("connection") }
                    await connection.close()
                }
                taken.withLock { $0.append("end") }
            } catch {
                taken.withLock { $0.append("\(error)") }
            }
            ended.fire()
        }
        let release = try hold(listener.socket.eventLoop)
        let closed = Signal()
        Task.detached {
            listener.close()
            closed.fire()
        }
        try closed.waitOrThrow("close() to return")
        let client = try RawSocket(connectTo: "127.0.0.1", port: port)
        release.fire()
        try ended.waitOrThrow("connections to end")
        XCTAssertEqual(taken.value, ["end"], "round \(round): closed before the client came")
        client.close()
        return Weak(listener.socket)
    }
}

/// A weak reference, to wait for an object's release.
final class Weak<Object: AnyObject>: @unchecked Sendable {
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}

extension SocketTestCase {
    /// Polls `condition` until it holds (bounded by ``testTimeout``): for a state only the library's
    /// internals show, with no callback to wait on.
    func waitUntil(_ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(testTimeout)
        while !condition() {
            if Date() > deadline { throw TestTimeout(what: what) }
            sched_yield()
        }
    }
}

extension EventLoop {
    /// Whether at least `count` tasks from other threads are waiting for the loop (tests only).
    func hasQueuedRemoteTasks(atLeast count: Int) -> Bool {
        remote.withLock { $0.tasks.count >= count }
    }
}
