import Dispatch
import EpollLoop
import Foundation
import Glibc
@testable import LoopSocket
import XCTest

/// A GCDAsyncSocket user's echo server (read, write it back, read again) that records, on the loop, the
/// most bytes one connection held at once: bytes queued for writing plus bytes read but not yet delivered.
private final class MeasuringEcho: NSObject, GCDAsyncSocketDelegate, @unchecked Sendable {
    struct State {
        var accepted: [GCDAsyncSocket] = []
        var held = 0
        var read = 0
        /// Written for every read instead of the bytes read (nil: echo).
        var reply: Data?
    }

    private let waiter = ConditionWaiter()
    private var _state = State()

    func withState<R>(_ body: (inout State) -> R) -> R { waiter.update { body(&_state) } }

    /// Waits (bounded) until `predicate` holds.
    func wait(until predicate: @escaping (State) -> Bool) -> Bool { waiter.wait { predicate(_state) } }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        withState { $0.accepted.append(newSocket) }
        newSocket.readData(withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let reply = withState { $0.reply }
        sock.write(reply ?? data, withTimeout: -1, tag: 0)
        let held = sock.queuedWriteBytes + sock.pendingCount
        withState {
            $0.held = max($0.held, held)
            $0.read += data.count
        }
        sock.readData(withTimeout: -1, tag: 0)
    }
}

/// Sends up to `total` bytes without ever reading, until the kernel refuses more while `stalled()`
/// says the server will not read on. Returns the bytes sent.
func flood(_ client: RawSocket, total: Int, until stalled: () throws -> Bool) throws -> Int {
    _ = fcntl(client.fd, F_SETFL, fcntl(client.fd, F_GETFL) | O_NONBLOCK)
    let chunk = patternData(256 * 1024)
    let deadline = Date(timeIntervalSinceNow: testTimeout)
    var sent = 0
    while sent < total {
        let n = chunk.withUnsafeBytes { Glibc.send(client.fd, $0.baseAddress!, min($0.count, total - sent), Int32(MSG_NOSIGNAL)) }
        if n > 0 {
            sent += n
            continue
        }
        XCTAssertEqual(errno, EAGAIN, "send failed")
        guard errno == EAGAIN else { break }
        if try stalled() { break }
        guard Date() < deadline else {
            XCTFail("the flood neither finished nor stalled within \(testTimeout) s (\(sent) bytes sent)")
            break
        }
        var pfd = pollfd(fd: client.fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&pfd, 1, 100)
    }
    return sent
}

/// Read backpressure (``SocketOptions/ReadBackpressure``): a socket whose writes back up stops reading.
final class ReadBackpressureTests: SocketTestCase {
    private let highWater = SocketOptions().writeHighWaterMark

    /// A client that sends and never reads the echo: the server stops reading once its queued replies pass
    /// the high water mark, the client's sends stall, and the connection never holds much more than that.
    func testUnreadSenderHoldsTheEchoServersMemoryAtTheHighWaterMark() throws {
        let echo = MeasuringEcho()
        let server = makeSocket(echo)
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let client = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        XCTAssertTrue(echo.wait { !$0.accepted.isEmpty })
        let accepted = echo.withState { $0.accepted[0] }

        let total = 64 << 20
        let sent = try flood(client, total: total) {
            try onLoop(loop) { accepted.writability == .notWritableReadsPaused }
        }
        settle(loop)
        let (held, read) = echo.withState { ($0.held, $0.read) }
        let now = try onLoop(loop) { accepted.queuedWriteBytes + accepted.pendingCount }
        XCTAssertLessThan(sent, total, "the server read everything: nothing pushed back")
        XCTAssertLessThanOrEqual(held, highWater + 128 * 1024, "held \(held) bytes (read \(read) of \(sent) sent)")
        XCTAssertLessThanOrEqual(now, highWater + 128 * 1024)
        XCTAssertGreaterThan(read, highWater)
        client.close()
        echo.withState { $0.accepted.removeAll() }
        server.disconnect()
        settleAll()
    }

    /// Continuous reads (`beginReceiving`) delivered to a delegate queue that falls behind its peer: the
    /// socket holds a bounded number of chunks for it and then stops reading, so the peer is pushed back
    /// instead of the socket's memory growing with all it sends. Everything arrives once the queue catches up.
    func testContinuousReadsToASlowDelegateQueuePushBack() throws {
        let queue = makeQueue("slow delegate")
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate, queue: queue)
        client.beginReceiving(tag: 7)
        queue.suspend()  // the delegate falls behind: nothing more is delivered
        let total = 128 << 20
        let sent = try flood(peer, total: total) {
            // No room for a whole second: the socket stopped reading.
            var pfd = pollfd(fd: peer.fd, events: Int16(POLLOUT), revents: 0)
            return poll(&pfd, 1, 1000) == 0
        }
        queue.resume()
        XCTAssertLessThan(sent, 48 << 20, "the socket read on while its delegate queue held everything")
        let arrived: ([SocketRecord]) -> Bool = { records in
            records.reduce(0) { total, record in
                if case .read(let data, 7) = record.event { return total + data.count } else { return total }
            } >= sent
        }
        delegate.wait("every byte sent, once the delegate caught up", timeout: 60, until: arrived)
        XCTAssertEqual(delegate.readBytes(tag: 7).count, sent)
        peer.close()
    }

    /// The opt-out: with `.never`, the server reads on whatever it has queued (GCDAsyncSocket's behaviour).
    func testReadBackpressureNeverReadsEverything() throws {
        let echo = MeasuringEcho()
        let server = makeSocket(echo)
        server.options.readBackpressure = .never
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let client = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        XCTAssertTrue(echo.wait { !$0.accepted.isEmpty })
        let accepted = echo.withState { $0.accepted[0] }

        let total = 16 << 20
        let sent = try flood(client, total: total) { try onLoop(loop) { accepted.writability == .notWritableReadsPaused } }
        XCTAssertEqual(sent, total)
        client.close()
        echo.withState { $0.accepted.removeAll() }
        server.disconnect()
        settleAll()
    }

    /// A reader whose own writes are small is never paused: it reads all the peer sends though the peer
    /// reads none of its one-byte acknowledgements until the end.
    func testReaderWithSmallWritesReadsEverything() throws {
        let echo = MeasuringEcho()
        echo.withState { $0.reply = Data([0x2E]) }
        let server = makeSocket(echo)
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let client = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        let total = 16 << 20
        try client.send(patternData(total))
        XCTAssertTrue(echo.wait { $0.read == total }, "read \(echo.withState { $0.read }) of \(total)")
        echo.withState { $0.accepted.removeAll() }
        client.close()
        server.disconnect()
        settleAll()
    }

    /// Full duplex between a paused server and a GCDAsyncSocket client: the client queues 32 MiB at once
    /// (far over both high water marks) and reads the echo as it comes; everything comes back, in order.
    func testFullDuplexEchoOfManyMebibytesCompletes() throws {
        let echo = MeasuringEcho()
        let server = makeSocket(echo)
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let clientDelegate = makeDelegate("client")
        let client = makeSocket(clientDelegate)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort, withTimeout: testTimeout)
        clientDelegate.waitForConnect()
        let block = patternData(1 << 20)
        let count = 32
        client.beginReceiving(tag: 7)
        for i in 0..<count { client.write(block, withTimeout: -1, tag: i) }
        let back = clientDelegate.waitForReadBytes(count * block.count, tag: 7, of: client)
        XCTAssertEqual(back.count, count * block.count)
        var expected = Data()
        for _ in 0..<count { expected.append(block) }
        XCTAssertTrue(back == expected, "the echo came back out of order")
        XCTAssertLessThanOrEqual(echo.withState { $0.held }, highWater + 128 * 1024)
        echo.withState { $0.accepted.removeAll() }
        client.disconnect()
        server.disconnect()
        settleAll()
    }

    // MARK: AsyncSocket

    /// An `AsyncSocket` connection whose one task pushes replies the client never reads, while another task
    /// reads: the reads pause once the pushed bytes pass the high water mark, so the client is pushed back.
    func testAsyncSocketReadsPauseWhileItsWritesBackUp() throws {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        let connection = Locked<AsyncSocket?>(nil)
        let readBytes = Locked(0)
        let accepted = Signal()
        let server = Task {
            for try await accepted_ in listener.connections {
                connection.withLock { $0 = accepted_ }
                accepted.fire()
                break
            }
        }
        let client = try RawSocket(connectTo: "127.0.0.1", port: listener.localPort)
        try accepted.waitOrThrow("the accepted connection")
        let socket = connection.withLock { $0! }
        let pusher = Task {
            let block = patternData(256 * 1024)
            while true { try await socket.write(block) }
        }
        let reader = Task {
            while let chunk = try await socket.read() { readBytes.withLock { $0 += chunk.count } }
        }
        let total = 64 << 20
        let sent = try flood(client, total: total) { try onLoop(loop) { socket.socket.writability == .notWritableReadsPaused } }
        XCTAssertLessThan(sent, total, "the connection read everything: nothing pushed back")
        let held = try onLoop(loop) { socket.socket.queuedWriteBytes + socket.socket.pendingCount }
        XCTAssertLessThanOrEqual(held, highWater + 512 * 1024)
        XCTAssertLessThan(readBytes.withLock { $0 }, sent)
        client.close()
        let ended = Signal()
        Task {
            _ = await pusher.result
            _ = await reader.result
            await socket.close()
            _ = await server.result
            ended.fire()
        }
        try ended.waitOrThrow("the connection's tasks")
        listener.close()
        connection.withLock { $0 = nil }
        settleAll()
    }

    /// Full duplex with `AsyncSocket`s on both sides: one client task writes 32 MiB while another reads the
    /// echo; everything comes back.
    func testAsyncFullDuplexEchoOfManyMebibytesCompletes() throws {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        let port = listener.localPort
        let server = Task {
            for try await connection in listener.connections {
                for try await chunk in connection.chunks { try await connection.write(chunk) }
                await connection.close()
                break
            }
        }
        let block = patternData(1 << 20)
        let count = 32
        let group = self.group!
        let result = Locked<Result<Int, any Error>?>(nil)
        let done = Signal()
        Task {
            let outcome: Result<Int, any Error>
            do {
                let client = try await AsyncSocket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5), group: group)
                let writer = Task {
                    for _ in 0..<count { try await client.write(block) }
                }
                var received = 0
                var inOrder = true
                while received < count * block.count, let chunk = try await client.read() {
                    var at = chunk.startIndex
                    while at < chunk.endIndex {
                        let offset = received % block.count
                        let n = min(chunk.endIndex - at, block.count - offset)
                        if chunk[at..<at + n] != block[offset..<offset + n] { inOrder = false }
                        at += n
                        received += n
                    }
                }
                try await writer.value
                await client.close()
                XCTAssertTrue(inOrder, "the echo came back out of order")
                outcome = .success(received)
            } catch {
                outcome = .failure(error)
            }
            result.withLock { $0 = outcome }
            done.fire()
        }
        try done.waitOrThrow("the full-duplex transfer")
        XCTAssertEqual(try result.withLock { $0 }?.get(), count * block.count)
        let ended = Signal()
        Task {
            _ = await server.result
            ended.fire()
        }
        try ended.waitOrThrow("the server task")
        listener.close()
        settleAll()
    }
}
