import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// How many `epoll_wait` calls a wakeup costs: after a small batch the loop blocks at once (one call per
/// wakeup, as a client or an idle server wants); after a full batch it polls without blocking first, then
/// blocks only when that found nothing.
final class EventLoopPollFirstTests: XCTestCase {
    private func pipe() throws -> (read: Int32, write: Int32) {
        let p = try makePipe()
        addTeardownBlock {
            close(p.read)
            close(p.write)
        }
        return p
    }

    /// Registers a handler on `p.read` that drains it and notes the loop's `epoll_wait` count as it runs.
    private func watch(_ p: (read: Int32, write: Int32), on loop: EventLoop, noting seen: Locked<[UInt64]>,
                       signal: DispatchSemaphore) throws {
        try onLoop(loop) {
            try loop.register(fd: p.read, interest: .readable, handler: ClosureHandler { _ in
                _ = readAvailable(p.read)
                seen.withLock { $0.append(loop.counters.polls) }
                signal.signal()
            })
        }
    }

    /// Waits (bounded) until the loop has marked itself asleep: its next `epoll_wait` is the blocking one.
    private func waitUntilAsleep(_ loop: EventLoop) throws {
        let deadline = DispatchTime.now() + testTimeout
        while !loop.remote.withLock({ $0.asleep }) {
            if DispatchTime.now() > deadline { throw TestTimeout(what: "loop '\(loop.name)' to block in epoll_wait") }
            sched_yield()
        }
    }

    func testOneEventCostsOneEpollWaitPerWakeup() throws {
        let runner = try ThreadedLoop(name: "poll-small")
        runner.start()
        defer { XCTAssertNoThrow(try runner.stop()) }
        let loop = runner.loop
        let p = try pipe()
        let seen = Locked<[UInt64]>([])
        let handled = DispatchSemaphore(value: 0)
        try watch(p, on: loop, noting: seen, signal: handled)
        for _ in 0..<3 {
            try waitUntilAsleep(loop)
            writeBytes(p.write)
            try handled.waitOrThrow("the pipe's event")
        }
        let polls = seen.value
        XCTAssertEqual(polls.count, 3)
        // The blocking wait that delivered one event is followed by the next blocking wait, nothing between.
        XCTAssertEqual(polls[1] - polls[0], 1, "epoll_wait calls per wakeup: \(polls)")
        XCTAssertEqual(polls[2] - polls[1], 1, "epoll_wait calls per wakeup: \(polls)")
    }

    func testFullBatchIsFollowedByANonBlockingPoll() throws {
        let runner = try ThreadedLoop(name: "poll-full", maxEventsPerWait: 2)
        runner.start()
        defer { XCTAssertNoThrow(try runner.stop()) }
        let loop = runner.loop
        let (a, b, c) = (try pipe(), try pipe(), try pipe())
        let seen = Locked<[UInt64]>([])
        let handled = DispatchSemaphore(value: 0)
        for p in [a, b, c] { try watch(p, on: loop, noting: seen, signal: handled) }
        // Both written by one task on the loop, so the next poll finds both: a full batch of two.
        try waitUntilAsleep(loop)
        try loop.execute {
            writeBytes(a.write)
            writeBytes(b.write)
        }
        try handled.waitOrThrow("the first pipe's event")
        try handled.waitOrThrow("the second pipe's event")
        try waitUntilAsleep(loop)
        writeBytes(c.write)
        try handled.waitOrThrow("the third pipe's event")
        let polls = seen.value
        XCTAssertEqual(polls.count, 3)
        XCTAssertEqual(polls[0], polls[1], "one poll returned both events: \(polls)")
        // After the full batch: a non-blocking poll that found nothing, then the blocking one that found c.
        XCTAssertEqual(polls[2] - polls[1], 2, "epoll_wait calls after a full batch: \(polls)")
    }
}
