import Dispatch
import Foundation
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Two loops, each inside a delegate callback calling a socket of the other loop at the same moment: no call
/// may wait for the other loop there, or both would wait forever. Every scenario is bounded: a deadlock
/// fails the wait for the callbacks to return (the two loop threads stay blocked, and the group's shutdown
/// in tearDown times out and fails too), it does not hang the run.
final class CrossLoopTests: SocketTestCase {
    /// Loops 0 and 1 call each other; loop 2 sends the datagrams whose callbacks make the calls (a sender on
    /// loop 0 or 1 could be held up behind that loop's callback, waiting at the barrier for the other).
    override class var loopCount: Int { 3 }

    // MARK: UDP

    func testUDPGettersCalledFromAnotherLoopAnswerWithoutWaiting() throws {
        let pair = try makeCallbackPair()
        let ports = pair.sockets.map { $0.localPort() }
        let seen = Locked<[Int: [String]]>([:])
        try pair.overlap { index, other in
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

    func testUDPCloseCalledFromAnotherLoopStartsTheCloseAndReturns() throws {
        let pair = try makeCallbackPair()
        try pair.overlap { _, other in other.close() }
        for (socket, recorder) in zip(pair.sockets, pair.recorders) {
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

    func testUDPSynchronouslySetDelegateFromAnotherLoopTakesEffectWithoutWaiting() throws {
        let pair = try makeCallbackPair()
        let replacements = [UDPRecorder(), UDPRecorder()]
        let sawNewDelegate = Locked<[Int: Bool]>([:])
        try pair.overlap { index, other in
            other.synchronouslySetDelegate(replacements[1 - index])
            sawNewDelegate.withLock { $0[index] = other.delegate() === replacements[1 - index] }
        }
        XCTAssertEqual(sawNewDelegate.value, [0: true, 1: true], "the getter shows the new delegate at once")
        // The loops use it for what comes next.
        for socket in pair.sockets {
            pair.sender.send(Data("next".utf8), toHost: "127.0.0.1", port: socket.localPort(), withTimeout: -1, tag: 0)
        }
        for replacement in replacements { replacement.waitForReceived(1) }
        XCTAssertEqual(pair.recorders.map { $0.received.count }, [1, 1], "the previous delegates got nothing more")
    }

    func testUDPCallsThatMustThrowOrWaitRefuseAtOnceOnAnotherLoop() throws {
        let pair = try makeCallbackPair()
        let fresh = [makeUDP(nil, loop: group.loops[0]), makeUDP(nil, loop: group.loops[1])]
        let errors = Locked<[Int: [GCDAsyncUdpSocketError.Code]]>([:])
        try pair.overlap { index, _ in
            let target = fresh[1 - index]
            var codes: [GCDAsyncUdpSocketError.Code] = []
            let calls: [() throws -> Void] = [
                { try target.bind(toPort: 0, interface: "127.0.0.1") }, { try target.enableReusePort(true) },
                { try target.beginReceiving() },
            ]
            for call in calls {
                do {
                    try call()
                } catch let error as GCDAsyncUdpSocketError {
                    codes.append(error.code)
                    XCTAssertTrue(error.message.contains("another event loop's thread"), "\(error)")
                } catch {
                    XCTFail("untyped error \(error)")
                }
            }
            errors.withLock { $0[index] = codes }
        }
        let refused: [GCDAsyncUdpSocketError.Code] = [.badConfigError, .badConfigError, .badConfigError]
        XCTAssertEqual(errors.value, [0: refused, 1: refused])
        XCTAssertEqual(fresh.map { $0.isClosed() }, [true, true], "nothing was done")
        // The same calls work on the socket's own loop and off the loops.
        try fresh[0].bind(toPort: 0, interface: "127.0.0.1")
        XCTAssertNotEqual(fresh[0].localPort(), 0)
        let boundOnLoop = try onLoop(group.loops[1]) { () -> Bool in
            (try? fresh[1].bind(toPort: 0, interface: "127.0.0.1")) != nil
        }
        XCTAssertTrue(boundOnLoop)
    }

    // MARK: TCP

    func testTCPSynchronouslySetDelegateFromAnotherLoopTakesEffectWithoutWaiting() throws {
        let pair = try makeCallbackPair()
        let tcp = group.loops.prefix(2).map { makeSocket(nil, loop: $0) }
        let replacements = [makeDelegate("replacement-0"), makeDelegate("replacement-1")]
        let sawNewDelegate = Locked<[Int: Bool]>([:])
        try pair.overlap { index, _ in
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

    /// A UDP socket bound on each loop, receiving, with its recorder.
    private struct CallbackPair {
        let sockets: [GCDAsyncUdpSocket]
        let recorders: [UDPRecorder]
        let sender: GCDAsyncUdpSocket

        /// Sends one datagram to each socket; inside each socket's receive callback (on its own loop), once
        /// both callbacks have started (a two-party barrier, so the calls really overlap), runs
        /// `body(index, the other loop's socket)`. Throws if either callback has not returned within the
        /// test timeout.
        func overlap(
            file: StaticString = #filePath, line: UInt = #line,
            _ body: @escaping @Sendable (Int, GCDAsyncUdpSocket) -> Void
        ) throws {
            let arrived = [Signal(), Signal()]
            let returned = [Signal(), Signal()]
            let bothArrived = Locked(true)
            for index in 0..<2 {
                let other = sockets[1 - index]
                let once = Locked(false)
                recorders[index].onReceive = { sock, _, _ in
                    guard !once.withLock({ ran in defer { ran = true }; return ran }) else { return }
                    XCTAssertTrue(sock.eventLoop.inEventLoop)
                    arrived[index].fire()
                    if !arrived[1 - index].wait() { bothArrived.value = false }
                    body(index, other)
                    returned[index].fire()
                }
            }
            for socket in sockets {
                sender.send(Data("go".utf8), toHost: "127.0.0.1", port: socket.localPort(), withTimeout: -1, tag: 0)
            }
            for index in 0..<2 where !returned[index].wait() {
                // Stop the test here: its next steps could ask the blocked loops for something and hang too.
                throw TestTimeout(what: "loop \(index)'s callback to return: the loops wait for each other")
            }
            XCTAssertTrue(bothArrived.value, "the two callbacks did not overlap", file: file, line: line)
        }
    }

    private func makeCallbackPair() throws -> CallbackPair {
        let recorders = [UDPRecorder(), UDPRecorder()]
        let sockets = try group.loops.prefix(2).enumerated().map { index, loop -> GCDAsyncUdpSocket in
            let socket = makeUDP(recorders[index], loop: loop)
            try socket.bind(toPort: 0, interface: "127.0.0.1")
            try socket.beginReceiving()
            return socket
        }
        return CallbackPair(sockets: sockets, recorders: recorders, sender: makeUDP(nil, loop: group.loops[2]))
    }
}
