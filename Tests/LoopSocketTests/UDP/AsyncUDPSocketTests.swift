import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import XCTest

@testable import LoopSocket

/// `AsyncUDPSocket` as async code uses it: echo, connected sends and ICMP errors, the receive bound,
/// close ending the datagrams, cancellation, and no thread hop for a task on the socket's loop.
final class AsyncUDPSocketTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    override func setUpWithError() throws {
        // `withDeadline` sleeps on the global executor, whose first timer opens a timerfd it keeps for the
        // process: open it before the base class counts descriptors.
        let slept = DispatchSemaphore(value: 0)
        Task.detached {
            try? await Task.sleep(for: .milliseconds(1))
            slept.signal()
        }
        slept.wait()
        try super.setUpWithError()
    }

    /// An echo server on loop 0, its task preferring the loop; returns the socket and the task.
    private static func startEcho(host: String, loop: EventLoop) async throws -> (AsyncUDPSocket, Task<Int, any Error>) {
        let server = try await AsyncUDPSocket.bind(host: host, port: 0, loop: loop)
        let task = Task(executorPreference: server.eventLoop) { () async throws -> Int in
            var echoed = 0
            for try await datagram in server.datagrams {
                XCTAssertTrue(server.eventLoop.inEventLoop, "the task runs on the socket's loop")
                try await server.send(datagram.data, to: datagram.sender)
                echoed += 1
            }
            return echoed
        }
        return (server, task)
    }

    private func echo(host: String) async throws {
        let loops = group.loops
        try await withDeadline {
            let (server, echoTask) = try await Self.startEcho(host: host, loop: loops[0])
            let client = try await AsyncUDPSocket.bind(host: host, port: 0, loop: loops[1])
            let sent = (0..<20).map { patternData(50 + $0) }
            for data in sent { try await client.send(data, toHost: host, port: server.localPort) }
            var received: [Data] = []
            for _ in sent {
                let received1 = try await client.receive()
                let datagram = try XCTUnwrap(received1)
                XCTAssertEqual(datagram.senderPort, server.localPort)
                XCTAssertEqual(datagram.senderHost, host)
                received.append(datagram.data)
            }
            XCTAssertEqual(received, sent, "every datagram echoed, whole, in order (loopback keeps order)")
            await server.close()
            let echoed = try await echoTask.value
            XCTAssertEqual(echoed, sent.count, "closing ended the server's datagrams")
            await client.close()
        }
    }

    func testEchoOverIPv4() async throws {
        try await echo(host: "127.0.0.1")
    }

    func testEchoOverIPv6() async throws {
        try await echo(host: "::1")
    }

    func testADatagramAlreadyReceivedIsReturnedOnTheLoopWithoutSuspending() async throws {
        let loops = group.loops
        try await withDeadline {
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            let sender = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[1])
            for i in 0..<3 { try await sender.send(Data([UInt8(i)]), toHost: "127.0.0.1", port: socket.localPort) }
            try await Self.eventually(socket) { socket.handler.bufferedCount == 3 }
            let taken = try await Task(executorPreference: socket.eventLoop) { () async throws -> [UInt8] in
                var bytes: [UInt8] = []
                for _ in 0..<3 {
                    let datagram = try await socket.receive()
                    bytes.append(datagram?.data.first ?? 255)
                    XCTAssertTrue(socket.eventLoop.inEventLoop)
                }
                return bytes
            }.value
            XCTAssertEqual(taken, [0, 1, 2])
            await socket.close()
            await sender.close()
        }
    }

    /// The socket's events come to the task by the engine's sink, not through a delegate: one set on the
    /// underlying socket is never called, and the task still gets its datagrams, its sends and its close.
    func testADelegateSetOnTheUnderlyingSocketNeitherSeesNorStealsItsEvents() async throws {
        let loops = group.loops
        try await withDeadline {
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            let sender = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[1])
            XCTAssertNil(socket.socket.delegate(), "the task's socket has no delegate")
            let recorder = UDPRecorder()
            socket.socket.synchronouslySetDelegate(recorder, delegateQueue: nil)
            try await sender.send(Data("ping".utf8), toHost: "127.0.0.1", port: socket.localPort)
            let received = try await socket.receive()
            XCTAssertEqual(received?.data, Data("ping".utf8))
            try await socket.send(Data("pong".utf8), to: try XCTUnwrap(received).sender)
            let reply = try await sender.receive()
            XCTAssertEqual(reply?.data, Data("pong".utf8))
            await socket.close()
            let afterClose = try await socket.receive()
            XCTAssertNil(afterClose, "the close ended the datagrams")
            XCTAssertTrue(recorder.events.isEmpty, "the delegate was called: \(recorder.events)")
            await sender.close()
        }
    }

    func testAConnectedSocketSendsToItsPeerAndReportsAClosedPort() async throws {
        let loops = group.loops
        try await withDeadline {
            let (server, echoTask) = try await Self.startEcho(host: "127.0.0.1", loop: loops[0])
            let client = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[1])
            try await client.connect(host: "127.0.0.1", port: server.localPort)
            try await client.send(Data("ping".utf8))
            let reply = try await client.receive()
            XCTAssertEqual(reply?.data, Data("ping".utf8))
            // The peer goes away: the next send draws an ICMP port unreachable, thrown by receive.
            await server.close()
            _ = try await echoTask.value
            try await client.send(Data("anyone?".utf8))
            do {
                let unexpected = try await client.receive()
                XCTFail("expected ECONNREFUSED, received \(String(describing: unexpected))")
            } catch let error as GCDAsyncUdpSocketError {
                XCTAssertEqual(error.errno?.rawValue, ECONNREFUSED, "\(error)")
            }
            await client.close()
        }
    }

    func testReceivedDatagramsWaitingForTheTaskAreBoundedAndNoneIsLost() async throws {
        let loops = group.loops
        try await withDeadline {
            let bound = 8
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, maxBufferedDatagrams: bound, loop: loops[0])
            let sender = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[1])
            let count = 200  // well within the kernel's default socket buffer
            for i in 0..<count { try await sender.send(Self.withUInt16(i), toHost: "127.0.0.1", port: socket.localPort) }
            // Nobody receives: the socket stops reading at the bound.
            try await Self.eventually(socket) { socket.handler.paused }
            let waiting = try await Self.onLoop(socket) { socket.handler.bufferedCount }
            XCTAssertEqual(waiting, bound, "no more than the bound waits in memory")
            var received: [Int] = []
            while received.count < count, let datagram = try await socket.receive() {
                received.append(datagram.data.withUnsafeBytes { Int($0.loadUnaligned(as: UInt16.self)) })
            }
            XCTAssertEqual(received, Array(0..<count), "the rest waited in the kernel and came in order")
            await socket.close()
            await sender.close()
        }
    }

    func testCloseEndsTheDatagramsAndFailsLaterSends() async throws {
        let loops = group.loops
        try await withDeadline {
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            let reader = Task { () async throws -> Int in
                var count = 0
                for try await _ in socket.datagrams { count += 1 }
                return count
            }
            try await Self.eventually(socket) { socket.handler.hasReceiver }
            await socket.close()
            let count = try await reader.value
            XCTAssertEqual(count, 0)
            let after = try await socket.receive()
            XCTAssertNil(after)
            do {
                try await socket.send(Data([1]), toHost: "127.0.0.1", port: 9)
                XCTFail("a send after close must fail")
            } catch let error as GCDAsyncUdpSocketError {
                XCTAssertEqual(error.code, .closedError)
            }
        }
    }

    func testCancellingAWaitingReceiveLosesNoDatagram() async throws {
        let loops = group.loops
        try await withDeadline {
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            let sender = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[1])
            let waiting = Task { try await socket.receive() }
            try await Self.eventually(socket) { socket.handler.hasReceiver }
            waiting.cancel()
            do {
                _ = try await waiting.value
                XCTFail("the receive should have been cancelled")
            } catch is CancellationError {}
            try await sender.send(Data("after".utf8), toHost: "127.0.0.1", port: socket.localPort)
            let next = try await socket.receive()
            XCTAssertEqual(next?.data, Data("after".utf8))
            // A second receiver while one waits is refused, not queued.
            let first = Task { try await socket.receive() }
            try await Self.eventually(socket) { socket.handler.hasReceiver }
            do {
                _ = try await socket.receive()
                XCTFail("a second concurrent receiver must be refused")
            } catch let error as GCDAsyncUdpSocketError {
                XCTAssertEqual(error.code, .badConfigError)
            }
            await socket.close()
            let end = try await first.value
            XCTAssertNil(end)
            await sender.close()
        }
    }

    func testASendOverTheQueueBoundFailsWithATypedError() async throws {
        let loops = group.loops
        try await withDeadline {
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            socket.socket.setMaxSendBufferSize(100)
            do {
                try await socket.send(Data(count: 101), toHost: "127.0.0.1", port: 9)
                XCTFail("a datagram over maxSendBufferSize must fail")
            } catch let error as GCDAsyncUdpSocketError {
                XCTAssertEqual(error.code, .badParamError)
            }
            await socket.close()
        }
    }

    // MARK: Helpers

    private static func withUInt16(_ value: Int) -> Data {
        withUnsafeBytes(of: UInt16(value)) { Data($0) }
    }

    private static func onLoop<T: Sendable>(_ socket: AsyncUDPSocket, _ body: @escaping @Sendable () -> T) async throws -> T {
        await Task(executorPreference: socket.eventLoop) { body() }.value
    }

    /// Polls `condition` on the socket's loop (each poll a round trip through the loop, not a sleep) until
    /// it holds; bounded by the test's deadline.
    private static func eventually(_ socket: AsyncUDPSocket, _ condition: @escaping @Sendable () -> Bool) async throws {
        while !(try await Self.onLoop(socket, condition)) {
            try Task.checkCancellation()
            await Task.yield()
        }
    }
}

