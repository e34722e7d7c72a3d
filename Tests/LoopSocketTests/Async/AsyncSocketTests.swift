import EpollLoop
import FoundationEssentials
import Glibc
@testable import LoopSocket
import Synchronization
import XCTest

/// Fails the test instead of hanging: runs `body` with a deadline (a bound on the wait, not synchronization).
/// On timeout the test fails and `body` is cancelled but not waited for, so a body stuck in a wait that
/// ignores cancellation (a `Task`'s value, a lost continuation) still cannot hang the test run.
func withDeadline<T: Sendable>(
    _ seconds: Double = 10, file: StaticString = #filePath, line: UInt = #line,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let work = Task { try await body() }
    let decided = Mutex(false)
    let outcome: Result<T, any Error> = await withCheckedContinuation { continuation in
        let finish = { @Sendable (result: Result<T, any Error>) -> Bool in
            guard decided.withLock({ done in defer { done = true }; return !done }) else { return false }
            continuation.resume(returning: result)
            return true
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(seconds))
            if !Task.isCancelled, finish(.failure(CancellationError())) {
                XCTFail("timed out after \(seconds) s", file: file, line: line)
                work.cancel()
            }
        }
        Task {
            let result = await work.result
            if finish(result) { timer.cancel() }
        }
    }
    return try outcome.get()
}

final class AsyncSocketTests: XCTestCase {
    var group: EventLoopGroup!

    override func setUpWithError() throws {
        group = try EventLoopGroup(numberOfLoops: 2, name: "async")
    }

    override func tearDownWithError() throws {
        try group.shutdownGracefully(timeout: .seconds(10))
    }

    /// A server and a client written only with async/await.
    func testEchoWithAsyncClientAndServer() async throws {
        let group = self.group!
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        let port = listener.localPort
        let server = Task {
            try await withThrowingDiscardingTaskGroup { tasks in
                for try await connection in listener.connections {
                    tasks.addTask(executorPreference: connection.eventLoop) {
                        XCTAssertTrue(connection.eventLoop.inEventLoop)
                        while let chunk = try await connection.read() {
                            try await connection.write(chunk)
                        }
                        await connection.close()
                    }
                }
            }
        }
        let echoed = try await withDeadline {
            let client = try await AsyncSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5), group: group)
            var received: [Data] = []
            for i in 0..<100 {
                let line = Data("message \(i)\n".utf8)
                try await client.write(line)
                received.append(try await client.read(upTo: Data("\n".utf8), maxLength: 100))
            }
            try await client.closeWrite()
            let end = try await client.read()
            XCTAssertNil(end, "the server closes after our end of stream")
            await client.close()
            return received
        }
        XCTAssertEqual(echoed.count, 100)
        XCTAssertEqual(echoed[42], Data("message 42\n".utf8))
        listener.close()
        _ = try await withDeadline { try await server.value }
    }

    /// The three read kinds, and the chunk sequence, against a blocking peer.
    func testReadKindsAndChunks() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            Self.send(peer, "abcdef\r\nrest")
            let line = try await client.read(upTo: GCDAsyncSocket.crlfData(), maxLength: 64)
            XCTAssertEqual(line, Data("abcdef\r\n".utf8))
            let four = try await client.read(toLength: 4)
            XCTAssertEqual(four, Data("rest".utf8))
            Self.send(peer, "xyz")
            Glibc.shutdown(peer, Int32(SHUT_WR))
            var chunks = Data()
            for try await chunk in client.chunks { chunks.append(chunk) }
            XCTAssertEqual(chunks, Data("xyz".utf8))
            await client.close()
        }
    }

    /// `close()` closes an open connection, called on its loop or from another thread: the peer reads the end
    /// of the stream. Called again once closed, it returns at once.
    func testCloseClosesAnOpenConnectionOnOrOffItsLoop() async throws {
        for onLoop in [true, false] {
            let (client, peer) = try await connectedPair()
            defer { Glibc.close(peer) }
            var bound = timeval(tv_sec: 10, tv_usec: 0)  // a close that never happens fails the test, not hangs it
            setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &bound, socklen_t(MemoryLayout<timeval>.size))
            try await withDeadline {
                if onLoop {
                    await Task(executorPreference: client.eventLoop) { await client.close() }.value
                } else {
                    await client.close()
                }
            }
            var byte: UInt8 = 0
            XCTAssertEqual(recv(peer, &byte, 1, 0), 0, "the peer reads the end of the stream (on the loop: \(onLoop))")
            try await withDeadline {
                await Task(executorPreference: client.eventLoop) { await client.close() }.value
                await client.close()
            }
        }
    }

    /// On the socket's loop, a read that buffered bytes satisfy completes from the prebuffer.
    func testReadFromBufferedBytesNeedsNoQueuedRead() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            Self.send(peer, "0123456789")
            let first = try await Task(executorPreference: client.eventLoop) { try await client.read(toLength: 2) }.value
            XCTAssertEqual(first, Data("01".utf8))
            // Everything else the peer sent arrived with the first segment and waits in the prebuffer.
            let immediate = try await Task(executorPreference: client.eventLoop) { () -> Data? in
                try client.socket.readImmediately(.length(3), maxLength: 0)
            }.value
            XCTAssertEqual(immediate, Data("234".utf8))
            let rest = try await Task(executorPreference: client.eventLoop) { try await client.read(toLength: 5) }.value
            XCTAssertEqual(rest, Data("56789".utf8))
            await client.close()
        }
    }

    /// Cancelling the task that iterates `listener.connections` ends the iteration and closes the listener:
    /// new connections are refused instead of piling up in a backlog nobody serves.
    func testCancellingTheAcceptLoopClosesTheListener() async throws {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        let port = listener.localPort
        try await withDeadline {
            let acceptor = Task { () throws -> Int in
                var accepted = 0
                for try await connection in listener.connections {
                    accepted += 1
                    await connection.close()
                }
                return accepted
            }
            let first = try RawSocket(connectTo: "127.0.0.1", port: port)
            let (_, end) = try await Task.detached { try first.receiveToEnd() }.value  // closed by the acceptor
            XCTAssertEqual(end, .eof)
            acceptor.cancel()
            let accepted = try await acceptor.value
            XCTAssertEqual(accepted, 1)
            // The close reaches the loop asynchronously: connects are refused from then on (a connect that
            // still got in is accepted and closed; only a refusal ends the wait).
            try await Self.eventually {
                do {
                    _ = try RawSocket(connectTo: "127.0.0.1", port: port)
                    return false
                } catch {
                    return (error as? RawSocketError)?.errno == ECONNREFUSED
                }
            }
        }
    }

    /// An `AsyncSocket` dropped without a close closes its connection (its descriptor is not left open).
    func testDroppingAnAsyncSocketClosesItsConnection() async throws {
        // Only the underlying socket is kept: the AsyncSocket is released when the helper returns.
        let (socket, peer) = try await { () async throws -> (GCDAsyncSocket, Int32) in
            let (client, peer) = try await self.connectedPair()
            return (client.socket, peer)
        }()
        defer { Glibc.close(peer) }
        try await withDeadline {
            let end = await Self.receive(peer, count: 1).value
            XCTAssertTrue(end.isEmpty, "the peer reads end of stream")
            try await Self.eventually { socket.isDisconnected }
        }
    }

    /// On the socket's loop, a write reaches the kernel within the call (no loop iteration in between).
    func testWriteOnTheLoopIsSentWithinTheCall() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            let queuedAfterWrite = try await Task(executorPreference: client.eventLoop) { () -> Int in
                try await client.write(Data("sent at once".utf8))
                return client.socket.queuedWriteByteCount
            }.value
            XCTAssertEqual(queuedAfterWrite, 0)
            XCTAssertEqual(Self.drain(peer, count: 12), 12)
            await client.close()
        }
    }

    /// Writes the kernel takes only in part (a shrunk send buffer) arrive whole and in order: the first
    /// write's remainder is queued behind what was sent, later writes queue behind it, and once the queue
    /// drains writes go straight to the kernel again.
    func testWritesTheKernelTakesInPartArriveWholeAndInOrder() async throws {
        var options = SocketOptions()
        options.sendBufferSize = 4096
        let (client, peer) = try await connectedPair(options: options)
        defer { Glibc.close(peer) }
        var receiveBuffer: Int32 = 1 << 20  // a wide window on the peer: only the sender is short of room
        setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
        let chunks = (0..<24).map { i in Data((0..<(i % 4 == 0 ? 200_000 : 1 + i * 37)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }) }
        let expected = chunks.reduce(into: Data()) { $0.append($1) }
        let receiver = Self.receive(peer, count: expected.count)
        try await withDeadline {
            try await Task(executorPreference: client.eventLoop) {
                for chunk in chunks { try await client.write(chunk) }
            }.value
            let received = await receiver.value
            XCTAssertEqual(received.count, expected.count)
            XCTAssertTrue(received == expected, "the bytes differ from what was written")
            await client.close()
        }
    }

    /// A write whose own send fails (the peer reset the connection) throws that error within the call,
    /// closes the socket, and every later operation throws.
    func testWriteThatFailsInItsSendThrowsAtOnce() async throws {
        let (client, peer) = try await connectedPair()
        try await withDeadline {
            try await Task(executorPreference: client.eventLoop) {
                // Reset from the loop's own thread, so the loop cannot see the RST before the write does.
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(peer, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                Glibc.close(peer)
                do {
                    try await client.write(Data("into a reset connection".utf8))
                    XCTFail("the write should have thrown")
                } catch let error as GCDAsyncSocketError {
                    XCTAssertTrue(error.errno == .connectionReset || error.errno == .brokenPipe, "\(error)")
                }
                XCTAssertTrue(client.handler.disconnected)
                do {
                    try await client.write(Data("again".utf8))
                    XCTFail("a write after the failure should throw")
                } catch is GCDAsyncSocketError {
                }
                let read = try await client.read()
                XCTAssertNil(read, "a read after the failure reports the end of the stream")
            }.value
        }
    }

    /// An actor isolated to the socket's loop reads too: completed, and cancelled, reads behave the same.
    func testReadsFromAnActorOnTheSocketsLoop() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            let reader = LoopReader(loop: client.eventLoop)
            let waiting = Task { try await reader.read(client, length: 3) }
            Self.send(peer, "abc")
            let first = try await waiting.value
            XCTAssertEqual(first, Data("abc".utf8))

            let cancelled = Task { try await reader.read(client, length: 3) }
            cancelled.cancel()
            try await Self.assertCancelled(cancelled, "the read")
            Self.send(peer, "def")
            let next = try await reader.read(client, length: 3)
            XCTAssertEqual(next, Data("def".utf8))
            await client.close()
        }
    }

    /// A read that waits for data costs a task preferring the loop exactly one job on the socket's loop (its
    /// resumption) and no hop; an actor isolated to the loop at most two. The peer's byte is sent by a
    /// closure queued on the loop before the read, so it runs only once the task has suspended: every read
    /// waits.
    func testWaitingReadOnTheLoopCostsOneJob() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        let loop = client.eventLoop
        let rounds: UInt64 = 100
        try await withDeadline {
            let fromTask = try await Task(executorPreference: loop) { () throws -> UInt64 in
                let before = loop.jobsRun
                for _ in 0..<rounds {
                    loop.executeOnLoop { Self.send(peer, "x") }
                    _ = try await client.read(toLength: 1)
                }
                return loop.jobsRun - before
            }.value
            XCTAssertEqual(fromTask, rounds, "one job per waiting read, for a task preferring the loop")

            let fromActor = try await LoopReader(loop: loop).readWaiting(client, peer: peer, rounds: rounds)
            // An actor costs more: the read's continuation resumes on the generic executor (the global pool
            // here, the loop for a task preferring it) and the task then switches back to the actor. At most
            // two jobs on the loop per read (one in an optimised build, whose other enqueue is the pool's).
            XCTAssertLessThanOrEqual(fromActor, 2 * rounds, "at most two jobs per waiting read, for an actor")
            await client.close()
        }
    }

    /// A server shutting down the structured way (listener closed, connection tasks cancelled) still delivers
    /// the replies it had queued: each task ends with `closeAfterWriting`, which cancellation does not cut
    /// short. Here the whole reply is queued in user space (a shrunk send buffer, a client that reads only
    /// after the shutdown began); with `close()` instead, the client gets a fraction of it.
    func testGracefulShutdownDeliversQueuedReplies() async throws {
        var options = SocketOptions()
        options.sendBufferSize = 4096
        options.writeHighWaterMark = 8 << 20  // the echo never waits: the task goes back to reading at once
        let group = self.group!
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group, options: options)
        let total = 1 << 20
        let (repliesQueued, queuedSignal) = AsyncStream<Void>.makeStream()
        let server = Task {
            try await withThrowingDiscardingTaskGroup { tasks in
                for try await connection in listener.connections {
                    tasks.addTask(executorPreference: connection.eventLoop) {
                        var echoed = 0
                        do {
                            while let chunk = try await connection.read(maxLength: 65536) {
                                try await connection.write(chunk)
                                echoed += chunk.count
                                if echoed == total { queuedSignal.yield() }
                            }
                        } catch {
                            XCTAssertTrue(error is CancellationError, "\(error)")
                        }
                        try await connection.closeAfterWriting(timeout: .seconds(10))
                    }
                }
                tasks.cancelAll()  // the accept loop ended: shut the connections down
            }
        }
        let client = try RawSocket(connectTo: "127.0.0.1", port: listener.localPort, receiveBufferSize: 4096)
        let request = Data((0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
        try await withDeadline(30) {
            try client.send(request)
            var signals = repliesQueued.makeAsyncIterator()
            _ = await signals.next()  // every byte read by the server and its echo queued
            listener.close()
            let (reply, end) = try await Task.detached { try client.receiveToEnd() }.value
            XCTAssertEqual(end, .eof, "the server closed cleanly after the last byte")
            XCTAssertEqual(reply.count, total)
            XCTAssertTrue(reply == request, "the reply differs from the request")
            try await server.value
        }
    }

    /// `closeAfterWriting` returns once what was queued is written, refusing new writes meanwhile (a
    /// refused write is the writer's error, not the close's), and the peer then reads end of stream.
    func testCloseAfterWritingWritesEverythingQueuedFirst() async throws {
        var options = SocketOptions()
        options.sendBufferSize = 4096
        options.writeHighWaterMark = 8 << 20
        // The peer keeps its default receive buffer (a window of some 64 KiB until it reads), so most of the
        // 1 MiB stays queued on this side, and drains fast once the peer reads.
        let (client, peer) = try await connectedPair(options: options, shrinkPeerReceiveBuffer: false)
        defer { Glibc.close(peer) }
        let queued = 1 << 20
        try await withDeadline {
            try await client.write(Data(repeating: 2, count: queued))  // mostly queued: the peer is not reading
            let closer = Task { try await client.closeAfterWriting(timeout: .seconds(10)) }
            try await Self.eventually { await Self.onLoop(client) { client.socket.ending != .none } }
            do {
                try await client.write(Data("late".utf8))
                XCTFail("a write after closeAfterWriting should be refused")
            } catch let error as GCDAsyncSocketError {
                XCTAssertEqual(error.code, .badConfigError)
            }
            let receiver = Self.receive(peer, count: queued + 1)  // one more than was queued: reads to the end
            let received = await receiver.value
            XCTAssertEqual(received.count, queued, "everything queued, and nothing else, reached the peer")
            try await closer.value
        }
    }

    /// `closeAfterWriting` throws `writeTimeoutError` when its timeout passes with bytes still queued (a peer
    /// that does not read), and closes the connection.
    func testCloseAfterWritingTimesOutOnAPeerThatDoesNotRead() async throws {
        var options = SocketOptions()
        options.sendBufferSize = 4096
        options.writeHighWaterMark = 8 << 20
        let (client, peer) = try await connectedPair(options: options)
        defer { Glibc.close(peer) }
        try await withDeadline {
            try await client.write(Data(repeating: 1, count: 1 << 20))
            do {
                try await client.closeAfterWriting(timeout: .milliseconds(50))
                XCTFail("closeAfterWriting should have timed out")
            } catch let error as GCDAsyncSocketError {
                XCTAssertEqual(error.code, .writeTimeoutError)
            }
            XCTAssertTrue(client.socket.isDisconnected)
            // Already closed: a second call reports the same failure at once.
            do {
                try await client.closeAfterWriting()
                XCTFail("the bytes were dropped: closeAfterWriting should say so again")
            } catch let error as GCDAsyncSocketError {
                XCTAssertEqual(error.code, .writeTimeoutError)
            }
        }
    }

    /// Cancelling a pending read throws CancellationError and leaves the socket usable, bytes included.
    func testCancelledReadLeavesSocketUsable() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            let waiting = Task { try await client.read(toLength: 10) }
            Self.send(peer, "abc")  // part of the 10 bytes: they must not be lost by the cancellation
            // Let the read take the 3 bytes: it reports progress through the buffer only, so poll the loop.
            try await Self.eventually { await Self.onLoop(client) { client.socket.reads.front({ $0.buffer.count }) == 3 } }
            waiting.cancel()
            try await Self.assertCancelled(waiting, "the read")
            Self.send(peer, "defghij")
            let all = try await client.read(toLength: 10)
            XCTAssertEqual(all, Data("abcdefghij".utf8))
            await client.close()
        }
    }

    /// A write waiting for the queue to drain below the low water mark can be cancelled.
    func testCancelledWriteWaitThrowsAndKeepsData() async throws {
        var options = SocketOptions()
        options.writeHighWaterMark = 1024
        options.writeLowWaterMark = 512
        options.sendBufferSize = 4096
        let (client, peer) = try await connectedPair(options: options)
        defer { Glibc.close(peer) }
        try await withDeadline {
            let big = Data(repeating: 7, count: 96 << 10)  // far more than the (shrunk) kernel buffers hold
            let writer = Task { try await client.write(big) }
            try await Self.eventually { await Self.onLoop(client) { client.handler.writableWaiterCount == 1 } }
            writer.cancel()
            try await Self.assertCancelled(writer, "the write wait")
            // The data stays queued and is still written: drain it on the peer.
            let received = Self.drain(peer, count: big.count)
            XCTAssertEqual(received, big.count)
            await client.close()
        }
    }

    /// A task cancelled before it connects gets CancellationError and leaves nothing open.
    func testCancelledConnect() async throws {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        defer { listener.close() }
        let port = listener.localPort
        let group = self.group!
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await AsyncSocket.connect(host: "127.0.0.1", port: port, group: group)
        }
        do {
            _ = try await withDeadline { try await task.value }
            XCTFail("connect should have been cancelled")
        } catch is CancellationError {
        }
    }

    /// Many reads racing with cancellation and data arrival: each ends exactly once, no byte is lost or
    /// duplicated, nothing hangs (a leaked continuation would hang; a double resume would crash).
    func testReadsRacingCancellationNeverLoseBytesOrHang() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        let total = try await withDeadline(30) { () -> Int in
            var delivered = 0
            for round in 0..<300 {
                let reader = Task { try await client.read(maxLength: 4) }
                if round % 2 == 0 { Self.send(peer, "12345678") }
                if round % 3 == 0 { reader.cancel() }
                do {
                    delivered += try await reader.value?.count ?? 0
                } catch is CancellationError {
                }
            }
            // Collect what is left: everything sent must be readable exactly once.
            let sent = 150 * 8
            while delivered < sent {
                delivered += try await client.read(maxLength: 4096)?.count ?? 0
            }
            await client.close()
            return delivered
        }
        XCTAssertEqual(total, 150 * 8)
    }

    // MARK: Helpers

    /// An AsyncSocket connected to a plain blocking socket on the other end; with `options.sendBufferSize` set,
    /// the peer's receive buffer is shrunk to the same size (so little fits in the kernels) unless told not to.
    func connectedPair(
        options: SocketOptions = SocketOptions(), shrinkPeerReceiveBuffer: Bool = true
    ) async throws -> (AsyncSocket, Int32) {
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, length) } }
        listen(listenFD, 1)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listenFD, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let client = try await AsyncSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5), group: group, options: options)
        let peer = accept(listenFD, nil, nil)
        Glibc.close(listenFD)
        XCTAssertGreaterThanOrEqual(peer, 0)
        if let size = options.sendBufferSize, shrinkPeerReceiveBuffer {
            var value = size
            setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        return (client, peer)
    }

    /// Fails unless `task` ends by throwing `CancellationError` (any other error is rethrown).
    static func assertCancelled<T: Sendable>(
        _ task: Task<T, any Error>, _ what: String, file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        do {
            _ = try await task.value
            XCTFail("\(what) should have been cancelled", file: file, line: line)
        } catch is CancellationError {
        }
    }

    static func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        XCTAssertEqual(Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)), bytes.count)
    }

    /// Reads `count` bytes from a blocking socket (bounded by a receive timeout); returns how many arrived.
    static func drain(_ fd: Int32, count: Int) -> Int {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65536)
        var got = 0
        while got < count {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            got += n
        }
        return got
    }

    /// Receives `count` bytes from a blocking socket on a thread of its own (bounded by a receive timeout),
    /// so the sender's tasks and the loop keep running while it waits.
    static func receive(_ fd: Int32, count: Int) -> Task<Data, Never> {
        Task {
            await withCheckedContinuation { continuation in
                Thread {
                    var timeout = timeval(tv_sec: 10, tv_usec: 0)
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    var received = Data()
                    var buffer = [UInt8](repeating: 0, count: 65536)
                    while received.count < count {
                        let n = recv(fd, &buffer, buffer.count, 0)
                        if n <= 0 { break }
                        received.append(contentsOf: buffer[..<n])
                    }
                    continuation.resume(returning: received)
                }.start()
            }
        }
    }

    static func onLoop<T: Sendable>(_ client: AsyncSocket, _ body: @escaping @Sendable () -> T) async -> T {
        await Task(executorPreference: client.eventLoop) { body() }.value
    }

    /// Polls `condition` (each poll is a round trip through the loop, not a sleep) until it holds.
    static func eventually(_ condition: @escaping @Sendable () async -> Bool) async throws {
        while !(await condition()) {
            try Task.checkCancellation()
            await Task.yield()
        }
    }
}

/// An actor whose executor is a loop, reading from a socket on that loop.
private actor LoopReader {
    let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    init(loop: EventLoop) { self.loop = loop }

    func read(_ socket: AsyncSocket, length: Int) async throws -> Data {
        try await socket.read(toLength: length)
    }

    /// Jobs run on the loop while reading one byte `rounds` times, each sent only after the read is queued.
    func readWaiting(_ socket: AsyncSocket, peer: Int32, rounds: UInt64) async throws -> UInt64 {
        let before = loop.jobsRun
        for _ in 0..<rounds {
            loop.executeOnLoop { _ = Glibc.send(peer, "y", 1, Int32(MSG_NOSIGNAL)) }
            _ = try await socket.read(toLength: 1)
        }
        return loop.jobsRun - before
    }
}
