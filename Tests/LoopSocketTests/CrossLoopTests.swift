import Dispatch
import Foundation
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Loops whose callbacks call sockets of other loops. Such a call waits for the other loop, as from any
/// thread, unless the other loop already waits (itself or through others) for the caller's: then it falls
/// back instead of deadlocking. Every scenario is bounded: a deadlock fails the wait for the callbacks to
/// return (the loop threads stay blocked, and the group's shutdown in tearDown times out and fails too), it
/// does not hang the run. The datagrams that start the callbacks come from the test's thread, so that no
/// loop's callback can hold up a sender.
final class CrossLoopTests: SocketTestCase {
    override class var loopCount: Int { 3 }

    // MARK: A call on another loop's thread waits for that loop

    /// The case every loop-thread caller meets: a callback on loop 0 sets up a socket of loop 1, which is
    /// idle, and gets the synchronous meaning of each call.
    func testUDPCallsFromACallbackWaitForAnIdleLoopAndSucceed() throws {
        let target = UDPRecorder()
        let socket = makeUDP(target, loop: group.loops[1])
        let peerRecorder = UDPRecorder()
        let peer = makeUDP(peerRecorder, loop: group.loops[2])
        try peer.bind(toPort: 0, interface: "127.0.0.1")
        try peer.beginReceiving()
        let peerPort = peer.localPort()
        let replacement = UDPRecorder()
        let seen = Locked<[String]>([])
        try ring(1).overlap { _ in
            var notes: [String] = []
            func attempt(_ name: String, _ call: () throws -> Void) {
                do { try call(); notes.append("\(name) ok") } catch { notes.append("\(name) \(error)") }
            }
            attempt("reuse") { try socket.enableReusePort(true) }
            attempt("bind") { try socket.bind(toPort: 0, interface: "127.0.0.1") }
            notes.append("bound \(socket.localPort() != 0)")
            attempt("receive") { try socket.beginReceiving() }
            // Before the connect, whose outcome may come at once: it must reach the new delegate.
            socket.synchronouslySetDelegate(replacement)
            notes.append("delegate \(socket.delegate() === replacement)")
            attempt("connect") { try socket.connect(toHost: "127.0.0.1", onPort: peerPort) }
            // CocoaAsyncSocket's own example: a socket on the default group, from inside a callback.
            let other = GCDAsyncUdpSocket()
            attempt("default group bind") { try other.bind(toPort: 0, interface: "127.0.0.1") }
            notes.append("default group bound \(other.localPort() != 0)")
            other.close()
            notes.append("default group closed \(other.isClosed())")
            seen.value = notes
        }
        XCTAssertEqual(seen.value, [
            "reuse ok", "bind ok", "bound true", "receive ok", "delegate true", "connect ok",
            "default group bind ok", "default group bound true", "default group closed true",
        ])
        replacement.wait("the connect's outcome") { $0.contains { if case .connected = $0 { true } else { false } } }
        XCTAssertTrue(socket.isConnected())
        XCTAssertEqual(socket.connectedPort(), peerPort)
        XCTAssertTrue(target.events.isEmpty, "the previous delegate got nothing: \(target.events)")
        socket.send(Data("connected".utf8), withTimeout: -1, tag: 1)
        peerRecorder.waitForReceived(1)
        XCTAssertEqual(peerRecorder.received, [Data("connected".utf8)])
        // And a close from a callback returns once closed.
        let closedOnReturn = Locked(false)
        try ring(1).overlap { _ in
            socket.close()
            closedOnReturn.value = socket.isClosed() && socket.socket4FD() == -1
        }
        XCTAssertTrue(closedOnReturn.value, "close() waited for the socket's loop")
        replacement.waitForClose()
    }

    // MARK: Two loops calling each other: the second to check falls back

    func testUDPGettersCalledFromAnotherLoopAnswerWithoutWaiting() throws {
        let ring = try ring(2)
        let ports = ring.sockets.map { $0.localPort() }
        let seen = Locked<[Int: [String]]>([:])
        try ring.overlap { index in
            let other = ring.next(index)
            let answers = [
                "connected \(other.isConnected())", "closed \(other.isClosed())",
                "ipv4 \(other.isIPv4())", "ipv6 \(other.isIPv6())", "fd4 \(other.socket4FD() >= 0)",
                "fd6 \(other.socket6FD())", "fd \(other.socketFD() == other.socket4FD())",
                "port \(other.localPort())", "host \(other.localHost() ?? "nil")",
                "peer \(other.connectedAddress() == nil ? "nil" : "set") \(other.connectedPort())",
            ]
            seen.withLock { $0[index] = answers }
        }
        for index in 0..<2 {
            XCTAssertEqual(seen.value[index], [
                "connected false", "closed false", "ipv4 true", "ipv6 false", "fd4 true", "fd6 -1", "fd true",
                "port \(ports[1 - index])", "host 127.0.0.1", "peer nil 0",
            ], "loop \(index) read the other socket's state as published")
        }
    }

    /// Both close the other's socket at once: the first to check waits for the other loop, which, waiting
    /// for nothing, would take its turn once its own callback returns; the second finds the first waiting
    /// for it, so it starts the close and returns, before the socket is closed (the first loop, waiting,
    /// cannot close it yet). Then the second's callback returns and the first's close completes.
    func testUDPCloseFromEachOthersLoopOneWaitsTheOtherStartsTheClose() throws {
        let ring = try ring(2)
        let closedOnReturn = Locked<[Int: Bool]>([:])
        try ring.overlap { index in
            let other = ring.next(index)
            other.close()
            closedOnReturn.withLock { $0[index] = other.isClosed() }
        }
        XCTAssertEqual(closedOnReturn.value.values.sorted { !$0 && $1 }, [false, true],
                       "one close waited, the other fell back: \(closedOnReturn.value)")
        for (socket, recorder) in zip(ring.sockets, ring.recorders) {
            recorder.waitForClose()
            XCTAssertTrue(socket.isClosed())
            XCTAssertEqual(socket.localPort(), 0)
            XCTAssertEqual(socket.socket4FD(), -1)
        }
    }

    func testUDPCloseOffTheLoopsStillReturnsOnceClosed() throws {
        let recorder = UDPRecorder()
        let socket = try makeReceiver(recorder)
        socket.close()
        XCTAssertTrue(socket.isClosed(), "a close from a thread that is no loop's waits for it")
        XCTAssertEqual(socket.socketFD(), -1)
        recorder.waitForClose()
    }

    func testUDPSynchronouslySetDelegateFromEachOthersLoopTakesEffectWithoutDeadlock() throws {
        let ring = try ring(2)
        let replacements = [UDPRecorder(), UDPRecorder()]
        let sawNewDelegate = Locked<[Int: Bool]>([:])
        try ring.overlap { index in
            let other = ring.next(index)
            other.synchronouslySetDelegate(replacements[1 - index])
            sawNewDelegate.withLock { $0[index] = other.delegate() === replacements[1 - index] }
        }
        XCTAssertEqual(sawNewDelegate.value, [0: true, 1: true], "the getter shows the new delegate at once")
        // The loops use it for what comes next. The change the second caller queued runs on the loop's next
        // turn, in order with its other work: let both loops go round once, so that the datagrams below
        // cannot be read before it, in the turn that delivered the first ones.
        settle(group.loops[0])
        settle(group.loops[1])
        for socket in ring.sockets { try sendDatagram(to: socket.localPort()) }
        for replacement in replacements { replacement.waitForReceived(1) }
        XCTAssertEqual(ring.recorders.map { $0.received.count }, [1, 1], "the previous delegates got nothing more")
    }

    /// Both set up a fresh socket of the other's loop at once: the first to check waits, and each of its
    /// calls succeeds once the other's callback has returned; the second finds the first waiting for it,
    /// and each of its calls throws the typed error at once, doing nothing.
    func testUDPCallsThatMustThrowFromEachOthersLoopOneWaitsTheOtherRefuses() throws {
        let ring = try ring(2)
        let fresh = [makeUDP(nil, loop: group.loops[0]), makeUDP(nil, loop: group.loops[1])]
        let outcomes = Locked<[Int: [String]]>([:])
        try ring.overlap { index in
            let target = fresh[1 - index]
            let calls: [() throws -> Void] = [
                { try target.enableReusePort(true) }, { try target.bind(toPort: 0, interface: "127.0.0.1") },
                { try target.beginReceiving() },
            ]
            let results = calls.map { call -> String in
                do {
                    try call()
                    return "ok"
                } catch let error as GCDAsyncUdpSocketError {
                    let explained = error.message.contains("would deadlock with the other loop")
                        && error.message.contains(target.eventLoop.name)
                    return "\(error.code)\(explained ? "" : ": \(error.message)")"
                } catch {
                    return "untyped \(error)"
                }
            }
            outcomes.withLock { $0[index] = results }
        }
        let refusedSide = try XCTUnwrap(outcomes.value.first { $0.value.first != "ok" }?.key, "\(outcomes.value)")
        XCTAssertEqual(outcomes.value[refusedSide], ["badConfigError", "badConfigError", "badConfigError"])
        XCTAssertEqual(outcomes.value[1 - refusedSide], ["ok", "ok", "ok"])
        XCTAssertTrue(fresh[1 - refusedSide].isClosed(), "the refused calls did nothing")
        XCTAssertNotEqual(fresh[refusedSide].localPort(), 0, "the calls that waited took effect")
        // The refused calls work once nothing waits for the caller's loop.
        try fresh[1 - refusedSide].bind(toPort: 0, interface: "127.0.0.1")
        XCTAssertNotEqual(fresh[1 - refusedSide].localPort(), 0)
    }

    /// `perform(_:)` records its wait as the other calls do: inside the block (on loop 1, while loop 0
    /// waits in `perform`), calls on loop 0's sockets fall back instead of waiting for loop 0.
    func testUDPCallsInsidePerformForAnotherLoopDoNotWaitForTheWaitingLoop() throws {
        let ring = try ring(1)
        let onLoop1 = makeUDP(nil, loop: group.loops[1])
        let onLoop0 = makeUDP(nil, loop: group.loops[0])
        let replacement = UDPRecorder()
        let seen = Locked<[String]>([])
        try ring.overlap { _ in
            var notes: [String] = []
            onLoop1.perform {
                do {
                    try onLoop0.bind(toPort: 0, interface: "127.0.0.1")
                    notes.append("bind ok")
                } catch let error as GCDAsyncUdpSocketError {
                    notes.append("bind \(error.code) \(error.message.contains("would deadlock"))")
                } catch {
                    notes.append("bind untyped \(error)")
                }
                onLoop0.synchronouslySetDelegate(replacement)
                notes.append("delegate \(onLoop0.delegate() === replacement)")
                onLoop0.close()
                notes.append("returned")
            }
            seen.value = notes
        }
        XCTAssertEqual(seen.value, ["bind badConfigError true", "delegate true", "returned"])
        XCTAssertTrue(onLoop0.isClosed(), "the refused bind did nothing")
        let loopUsesIt = try onLoop(group.loops[0]) { onLoop0.loopDelegate === replacement }
        XCTAssertTrue(loopUsesIt, "the queued delegate change reached the loop")
    }

    // MARK: Three loops in a cycle

    /// Loop i binds a fresh socket of loop i+1 (mod 3), all at once: the first two to check wait, the third
    /// finds A → B → C leading back to itself and refuses. Its callback returns, and the two waits complete.
    func testUDPThreeLoopCycleRefusesExactlyTheCallThatClosesIt() throws {
        let ring = try ring(3)
        let fresh = group.loops.map { makeUDP(nil, loop: $0) }
        let outcomes = Locked<[Int: String]>([:])
        try ring.overlap { index in
            let target = fresh[(index + 1) % 3]
            let outcome: String
            do {
                try target.bind(toPort: 0, interface: "127.0.0.1")
                outcome = target.localPort() != 0 ? "bound" : "bound without a port"
            } catch let error as GCDAsyncUdpSocketError {
                outcome = error.message.contains("would deadlock") ? "refused" : "\(error)"
            } catch {
                outcome = "untyped \(error)"
            }
            outcomes.withLock { $0[index] = outcome }
        }
        XCTAssertEqual(outcomes.value.values.sorted(), ["bound", "bound", "refused"], "\(outcomes.value)")
        for (index, outcome) in outcomes.value {
            XCTAssertEqual(fresh[(index + 1) % 3].isClosed(), outcome == "refused")
        }
    }

    /// The same cycle built by nesting, so that which call closes it is known: loop 0 waits in `perform` on
    /// loop 1's socket, whose block waits in `perform` on loop 2's, whose block calls loop 0's socket.
    func testUDPThreeLoopCycleThroughNestedPerformFallsBackOnTheLastLoop() throws {
        let ring = try ring(1)
        let onLoop1 = makeUDP(nil, loop: group.loops[1])
        let onLoop2 = makeUDP(nil, loop: group.loops[2])
        let onLoop0 = makeUDP(nil, loop: group.loops[0])
        let seen = Locked<[String]>([])
        try ring.overlap { _ in
            onLoop1.perform {
                // On loop 1, which waits for nothing yet: loop 2 is idle, so this waits for it.
                onLoop2.perform {
                    var notes = ["on loop 2 \(onLoop2.eventLoop.inEventLoop)"]
                    do {
                        try onLoop0.bind(toPort: 0, interface: "127.0.0.1")
                        notes.append("bind ok")
                    } catch let error as GCDAsyncUdpSocketError {
                        notes.append("bind \(error.code) \(error.message.contains("'\(onLoop2.eventLoop.name)''s thread"))")
                    } catch {
                        notes.append("bind untyped \(error)")
                    }
                    // Loop 1 waits for this loop (in `perform`): a call on its socket is refused too.
                    do {
                        try onLoop1.enableBroadcast(true)
                        notes.append("loop 1 ok")
                    } catch {
                        notes.append("loop 1 refused")
                    }
                    seen.value = notes
                }
            }
            // Back on loop 0, nothing waits any more: the refused bind works (inline, on its own loop).
            seen.withLock { $0.append("after \((try? onLoop0.bind(toPort: 0, interface: "127.0.0.1")) != nil)") }
        }
        XCTAssertEqual(seen.value, ["on loop 2 true", "bind badConfigError true", "loop 1 refused", "after true"])
    }

    // MARK: TCP

    func testTCPSynchronouslySetDelegateFromEachOthersLoopTakesEffectWithoutDeadlock() throws {
        let ring = try ring(2)
        let tcp = group.loops.prefix(2).map { makeSocket(nil, loop: $0) }
        let replacements = [makeDelegate("replacement-0"), makeDelegate("replacement-1")]
        let sawNewDelegate = Locked<[Int: Bool]>([:])
        try ring.overlap { index in
            let target = tcp[1 - index]
            target.synchronouslySetDelegate(replacements[1 - index])
            sawNewDelegate.withLock { $0[index] = target.delegate === replacements[1 - index] }
        }
        XCTAssertEqual(sawNewDelegate.value, [0: true, 1: true], "the getter shows the new delegate at once")
        for (index, socket) in tcp.enumerated() {
            let loopUsesIt = try onLoop(group.loops[index]) { socket.loopDelegate === replacements[index] }
            XCTAssertTrue(loopUsesIt, "the loop applied the change in order with its other work")
        }
    }

    // MARK: Harness

    /// A UDP socket bound on each of the first `count` loops, receiving, with its recorder.
    private struct Ring: Sendable {
        let sockets: [GCDAsyncUdpSocket]
        let recorders: [UDPRecorder]

        /// The socket of the next loop round the ring.
        func next(_ index: Int) -> GCDAsyncUdpSocket { sockets[(index + 1) % sockets.count] }

        /// Sends one datagram to each socket from the test's thread; inside each socket's receive callback
        /// (on its own loop), once every callback has started (a barrier, so that the calls really overlap),
        /// runs `body(index)`. Throws if a callback has not returned within the test timeout.
        func overlap(file: StaticString = #filePath, line: UInt = #line, _ body: @escaping @Sendable (Int) -> Void) throws {
            let barrier = Barrier(parties: sockets.count)
            let returned = sockets.map { _ in Signal() }
            let allArrived = Locked(true)
            for index in sockets.indices {
                let once = Locked(false)
                recorders[index].onReceive = { sock, _, _ in
                    guard !once.withLock({ ran in defer { ran = true }; return ran }) else { return }
                    XCTAssertTrue(sock.eventLoop.inEventLoop)
                    if !barrier.arriveAndWait() { allArrived.value = false }
                    body(index)
                    returned[index].fire()
                }
            }
            for socket in sockets { try sendDatagram(to: socket.localPort()) }
            for index in sockets.indices where !returned[index].wait() {
                // Stop the test here: its next steps could ask the blocked loops for something and hang too.
                throw TestTimeout(what: "loop \(index)'s callback to return: the loops wait for each other")
            }
            // `body` may hold this ring, whose recorders hold the callbacks: a cycle that would keep the
            // sockets, and through them the loops and their descriptors, alive after the test.
            for recorder in recorders { recorder.onReceive = nil }
            XCTAssertTrue(allArrived.value, "the callbacks did not overlap", file: file, line: line)
        }
    }

    /// Sockets on the first `count` loops for ``Ring/overlap(file:line:_:)``.
    private func ring(_ count: Int) throws -> Ring {
        let recorders = (0..<count).map { _ in UDPRecorder() }
        let sockets = try group.loops.prefix(count).enumerated().map { index, loop -> GCDAsyncUdpSocket in
            let socket = makeUDP(recorders[index], loop: loop)
            try socket.bind(toPort: 0, interface: "127.0.0.1")
            try socket.beginReceiving()
            return socket
        }
        return Ring(sockets: sockets, recorders: recorders)
    }
}

/// A one-shot barrier for `parties` threads, each wait bounded by the test timeout.
private final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private let parties: Int
    private var arrived = 0

    init(parties: Int) { self.parties = parties }

    /// Arrives, then waits for the others; false if they did not all arrive in time.
    func arriveAndWait() -> Bool {
        let deadline = Date(timeIntervalSinceNow: testTimeout)
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        condition.broadcast()
        while arrived < parties {
            if !condition.wait(until: deadline) { return arrived >= parties }
        }
        return true
    }
}

/// Sends one datagram to 127.0.0.1:`port` from the calling thread, through a descriptor of its own.
private func sendDatagram(to port: UInt16) throws {
    let fd = try check("socket", socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0))
    defer { Glibc.close(fd) }
    var address = rawAddress("127.0.0.1", port: port)
    let sent = withUnsafePointer(to: &address.storage) { storage in
        storage.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, "go", 2, 0, $0, address.length) }
    }
    if sent != 2 { throw RawSocketError(call: "sendto", errno: errno) }
}
