import EpollLoop
import Synchronization
import XCTest

@testable import LoopSocket

/// `AsyncListener.Connections`' queue: order, the end (plain and with an error), a consumer that waits, and
/// cancellation, which ends the sequence and stops the listener.
final class AcceptQueueTests: XCTestCase {
    private func connection() -> AsyncSocket {
        AsyncSocket(socket: GCDAsyncSocket(), handler: AsyncSocketHandler())
    }

    func testQueuedConnectionsComeOutInOrderThenTheEnd() async throws {
        let queue = AcceptQueue {}
        let (a, b) = (connection(), connection())
        queue.yield(a)
        queue.yield(b)
        queue.finish()
        let first = try await queue.next()
        let second = try await queue.next()
        let end = try await queue.next()
        let again = try await queue.next()
        XCTAssertTrue(first === a)
        XCTAssertTrue(second === b)
        XCTAssertNil(end)
        XCTAssertNil(again)
    }

    func testAnErrorEndComesAfterTheQueuedConnectionsAndOnlyOnce() async throws {
        let queue = AcceptQueue {}
        let a = connection()
        queue.yield(a)
        queue.finish(throwing: GCDAsyncSocketError.loopShutDown)
        let first = try await queue.next()
        XCTAssertTrue(first === a)
        do {
            _ = try await queue.next()
            XCTFail("the error should be thrown")
        } catch {
            XCTAssertEqual(error as? GCDAsyncSocketError, .loopShutDown)
        }
        let after = try await queue.next()
        XCTAssertNil(after)
        queue.yield(connection())  // after the end: dropped
        let dropped = try await queue.next()
        XCTAssertNil(dropped)
    }

    func testAWaitingConsumerGetsTheNextConnection() async throws {
        let queue = AcceptQueue {}
        let a = connection()
        let consumer = Task { try await queue.next() }
        // Whichever comes first, the yield or the consumer's wait, the consumer gets `a`.
        queue.yield(a)
        let got = try await consumer.value
        XCTAssertTrue(got === a)
    }

    /// A second consumer while one waits gets a typed error, not a wait that never ends.
    func testASecondConcurrentConsumerIsRefused() async throws {
        let queue = AcceptQueue {}
        let first = Task { try await queue.next() }
        let deadline = ContinuousClock.now + .seconds(10)
        while !queue.hasWaitingConsumer {
            guard ContinuousClock.now < deadline else { return XCTFail("the first consumer never waited") }
            await Task.yield()
        }
        do {
            _ = try await queue.next()
            XCTFail("a second consumer must be refused")
        } catch let error as GCDAsyncSocketError {
            XCTAssertEqual(error.code, .badConfigError)
        }
        let a = connection()
        queue.yield(a)
        let got = try await first.value
        XCTAssertTrue(got === a, "the first consumer still gets the next connection")
    }

    func testCancellingTheConsumerEndsTheSequenceAndStopsTheListener() async throws {
        let stopped = Atomic<Int>(0)
        let queue = AcceptQueue { stopped.add(1, ordering: .relaxed) }
        let consumer = Task { try await queue.next() }
        consumer.cancel()
        let got = try await consumer.value
        XCTAssertNil(got)
        XCTAssertEqual(stopped.load(ordering: .relaxed), 1)
        queue.yield(connection())
        let after = try await queue.next()
        XCTAssertNil(after, "the sequence stays ended")
    }

    /// A cancelled consumer gets the end even with connections queued (they are not handed out by the quick
    /// path that skips waiting), and the listener stops.
    func testACancelledConsumerGetsTheEndEvenWithConnectionsQueued() async throws {
        let stopped = Atomic<Int>(0)
        let queue = AcceptQueue { stopped.add(1, ordering: .relaxed) }
        queue.yield(connection())
        queue.yield(connection())
        let consumer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.next()
        }
        let got = try await consumer.value
        XCTAssertNil(got)
        XCTAssertEqual(stopped.load(ordering: .relaxed), 1)
    }
}
