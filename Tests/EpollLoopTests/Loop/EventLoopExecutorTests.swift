import EpollLoop
import XCTest

/// The loop as a `SerialExecutor` and `TaskExecutor`.
final class EventLoopExecutorTests: XCTestCase {
    private var group: EventLoopGroup!

    override func setUpWithError() throws {
        group = try EventLoopGroup(numberOfLoops: 2, name: "exec")
    }

    override func tearDownWithError() throws {
        try group.shutdownGracefully(timeout: .seconds(10))
    }

    /// An actor whose executor is a loop.
    actor Counter {
        let loop: EventLoop
        var value = 0
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

        init(loop: EventLoop) { self.loop = loop }

        /// Increments and reports whether it ran on the loop's thread.
        func increment() -> Bool {
            value += 1
            return loop.inEventLoop
        }
    }

    func testTaskWithExecutorPreferenceRunsOnTheLoop() async throws {
        let loop = group.loops[0]
        let onLoop = await Task(executorPreference: loop) { loop.inEventLoop }.value
        XCTAssertTrue(onLoop)
        let elsewhere = await Task(executorPreference: group.loops[1]) { loop.inEventLoop }.value
        XCTAssertFalse(elsewhere)
    }

    /// A task preferring the loop, suspended in nonisolated code and resumed on the loop, runs again as one
    /// job. (Were its jobs run as the loop's serial executor's, each resumption would switch executors and
    /// enqueue the task a second time.)
    func testResumingATaskThatPrefersTheLoopCostsOneJob() async throws {
        let loop = group.loops[0]
        let rounds: UInt64 = 200
        let jobs = await Task(executorPreference: loop) { () -> UInt64 in
            let before = loop.jobsRun
            for _ in 0..<rounds {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    loop.executeOnLoop { continuation.resume() }
                }
                precondition(loop.inEventLoop)
            }
            return loop.jobsRun - before
        }.value
        XCTAssertEqual(jobs, rounds, "one job per resumption")
    }

    /// A task preferring the loop that calls into an actor on the same loop and comes back keeps running on
    /// the loop, with the actor's isolation checks holding inside it.
    func testTaskPreferringTheLoopCallsAnActorOnIt() async throws {
        let loop = group.loops[1]
        let counter = Counter(loop: loop)
        let allOnLoop = await Task(executorPreference: loop) { () -> Bool in
            var onLoop = true
            for _ in 0..<100 {
                onLoop = await counter.increment() && onLoop
                onLoop = loop.inEventLoop && onLoop
            }
            return onLoop
        }.value
        XCTAssertTrue(allOnLoop)
        let value = await counter.value
        XCTAssertEqual(value, 100)
    }

    /// The runtime retains a task's preferred executor for the task's life and releases it by the identity
    /// `asUnownedTaskExecutor()` returns: many short tasks must leave the loop and its actor executor intact.
    func testManyTasksPreferringTheLoopKeepItsExecutorsAlive() async throws {
        let loop = group.loops[0]
        for _ in 0..<2_000 {
            _ = await Task(executorPreference: loop) { loop.inEventLoop }.value
        }
        await withTaskGroup(of: Void.self) { tasks in
            for _ in 0..<2_000 { tasks.addTask(executorPreference: loop) { precondition(loop.inEventLoop) } }
        }
        let counter = Counter(loop: loop)
        let onLoop = await counter.increment()
        XCTAssertTrue(onLoop)
    }

    func testActorJobsRunOnTheLoopInOrder() async throws {
        let loop = group.loops[1]
        let counter = Counter(loop: loop)
        for i in 1...1000 {
            let onLoop = await counter.increment()
            XCTAssertTrue(onLoop, "job \(i) ran off the loop")
        }
        let value = await counter.value
        XCTAssertEqual(value, 1000)
    }

    func testIsolationChecksHoldOnTheLoopOnly() async throws {
        let loop = group.loops[0]
        XCTAssertEqual(loop.isIsolatingCurrentContext(), false)
        let counter = Counter(loop: loop)
        let checked = await Task(executorPreference: loop) { () -> Bool in
            bumpAssumingIsolation(counter)
            return loop.isIsolatingCurrentContext() == true
        }.value
        XCTAssertTrue(checked)
        let value = await counter.value
        XCTAssertEqual(value, 1)
    }

    func testJobsFromManyTasksAllRun() async throws {
        let loop = group.loops[0]
        let counter = Counter(loop: loop)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<50 {
                tasks.addTask {
                    for _ in 0..<100 { _ = await counter.increment() }
                }
            }
            try await tasks.waitForAll()
        }
        let value = await counter.value
        XCTAssertEqual(value, 5000)
    }

    func testJobsAndExecutedClosuresShareOneFIFO() throws {
        let loop = group.loops[0]
        let order = OrderLog()
        let done = expectation(description: "all ran")
        try loop.execute {
            // Queued from the loop itself: a closure, then a task's first job, then a closure.
            order.append(1)
            try? loop.execute { order.append(2) }
            Task(executorPreference: loop) { order.append(3) }
            try? loop.execute {
                try? loop.execute {
                    order.append(4)
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 10)
        let seen = order.values
        XCTAssertEqual(seen.first, 1)
        XCTAssertEqual(seen.last, 4)
        XCTAssertEqual(Set(seen), [1, 2, 3, 4])
        XCTAssertLessThan(seen.firstIndex(of: 2)!, seen.firstIndex(of: 4)!)
    }
}

/// Synchronous code on the loop's thread may claim the actor's isolation: `assumeIsolated` consults the
/// executor's `checkIsolated`/`isIsolatingCurrentContext`.
private func bumpAssumingIsolation(_ counter: EventLoopExecutorTests.Counter) {
    counter.assumeIsolated { $0.value += 1 }
}

/// A thread-safe append-only log of integers.
private final class OrderLog: Sendable {
    private let storage = Locked<[Int]>([])
    func append(_ value: Int) { storage.withLock { $0.append(value) } }
    var values: [Int] { storage.withLock { $0 } }
}
