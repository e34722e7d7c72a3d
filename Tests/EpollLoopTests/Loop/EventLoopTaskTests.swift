import Dispatch
import Foundation
import XCTest

@testable import EpollLoop

/// `execute(_:)`, `inEventLoop` and the loop-bound boxes.
final class EventLoopTaskTests: LoopTestCase {
    override class var loopName: String { "task-loop" }

    func testInEventLoop() throws {
        XCTAssertFalse(loop.inEventLoop)
        let loop = self.loop
        XCTAssertTrue(try onLoop(loop) { loop.inEventLoop })
        // Another loop's thread is not this loop's thread.
        let other = try ThreadedLoop(name: "other-loop")
        other.start()
        defer { XCTAssertNoThrow(try other.stop()) }
        XCTAssertFalse(try onLoop(other.loop) { loop.inEventLoop })
        XCTAssertTrue(try onLoop(other.loop) { other.loop.inEventLoop })
    }

    func testExecuteFromAnotherThreadIsFIFO() throws {
        let order = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for i in 0..<1_000 {
            try loop.execute { order.withLock { $0.append(i) } }
        }
        try loop.execute { done.signal() }
        try done.waitOrThrow("1,000 tasks")
        XCTAssertEqual(order.value, Array(0..<1_000))
    }

    func testExecuteFromTheLoopRunsAfterTheCurrentTaskInOrder() throws {
        let loop = self.loop
        let order = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        try loop.execute {
            order.withLock { $0.append("outer-start") }
            for i in 0..<3 {
                // On the loop, execute never throws and never runs the task inline.
                try? loop.execute { order.withLock { $0.append("inner-\(i)") } }
            }
            loop.executeOnLoop { order.withLock { $0.append("on-loop") } }
            try? loop.execute { done.signal() }
            order.withLock { $0.append("outer-end") }
        }
        try done.waitOrThrow("tasks queued from the loop")
        XCTAssertEqual(order.value, ["outer-start", "outer-end", "inner-0", "inner-1", "inner-2", "on-loop"])
    }

    func testTaskQueuedFromALoopTaskRunsEvenWhenTheLoopWouldSleep() throws {
        // A chain of tasks, each queuing the next from the loop: the loop must not block in epoll_wait with
        // local work pending.
        let loop = self.loop
        let done = DispatchSemaphore(value: 0)
        let remaining = LoopBoundBox(10_000, loop: loop)
        @Sendable func step() {
            remaining.value -= 1
            if remaining.value == 0 { done.signal() } else { try? loop.execute(step) }
        }
        try loop.execute(step)
        try done.waitOrThrow("a chain of 10,000 loop-queued tasks")
    }

    func testCrossThreadExecuteStorm() throws {
        let loop = self.loop
        let producers = 4
        let perProducer = runningUnderThreadSanitizer ? 20_000 : 100_000
        struct Tally {
            var next: [Int]
            var outOfOrder = 0
            var total = 0
        }
        let tally = LoopBoundBox(Tally(next: Array(repeating: 0, count: producers)), loop: loop)
        let allRan = DispatchSemaphore(value: 0)
        let errors = Locked<[EventLoopError]>([])
        let start = DispatchSemaphore(value: 0)
        let producersDone = DispatchGroup()
        for p in 0..<producers {
            producersDone.enter()
            Thread {
                start.wait()
                for seq in 0..<perProducer {
                    do throws(EventLoopError) {
                        try loop.execute {
                            if tally.value.next[p] != seq { tally.value.outOfOrder += 1 }
                            tally.value.next[p] = seq + 1
                            tally.value.total += 1
                            if tally.value.total == producers * perProducer { allRan.signal() }
                        }
                    } catch {
                        errors.withLock { $0.append(error) }
                    }
                }
                producersDone.leave()
            }.start()
        }
        for _ in 0..<producers { start.signal() }
        XCTAssertEqual(producersDone.wait(timeout: .now() + testTimeout), .success, "producers finished")
        try allRan.waitOrThrow("\(producers * perProducer) tasks")
        XCTAssertEqual(errors.value, [])
        // Nothing ran twice: one more round trip sees the same totals.
        let final = try onLoop(loop) { (tally.value.total, tally.value.outOfOrder, tally.value.next) }
        XCTAssertEqual(final.0, producers * perProducer)
        XCTAssertEqual(final.1, 0, "tasks of one producer ran out of order")
        XCTAssertEqual(final.2, Array(repeating: perProducer, count: producers))
    }

    func testLoopBoundBoxCarriesLoopStateThroughSendableClosures() throws {
        let loop = self.loop
        // Created off the loop, used only on it.
        let box = LoopBoundBox<[Int]>([], loop: loop)
        XCTAssertTrue(box.loop === loop)
        for i in 0..<10 {
            try loop.execute { box.value.append(i) }
        }
        XCTAssertEqual(try onLoop(loop) { box.value }, Array(0..<10))
        // LoopBound wraps a non-Sendable reference created on the loop.
        final class Counter { var n = 0 }
        let bound = try onLoop(loop) { LoopBound(Counter(), loop: loop) }
        try loop.execute { bound.value.n += 41 }
        XCTAssertEqual(try onLoop(loop) { bound.value.n + 1 }, 42)
    }
}

/// Tasks around the loop's lifetime: before `run()` and after shutdown.
final class EventLoopTaskLifetimeTests: XCTestCase {
    func testTasksQueuedBeforeRunRunFirstInOrder() throws {
        let runner = try ThreadedLoop(name: "before-run")
        let order = Locked<[Int]>([])
        let loopThreadSeen = Locked<Bool>(true)
        for i in 0..<100 {
            try runner.loop.execute { [loop = runner.loop] in
                if !loop.inEventLoop { loopThreadSeen.value = false }
                order.withLock { $0.append(i) }
            }
        }
        XCTAssertEqual(order.value, [], "nothing runs before run()")
        runner.start()
        XCTAssertEqual(try onLoop(runner.loop) { order.value }, Array(0..<100))
        XCTAssertTrue(loopThreadSeen.value, "tasks ran on the loop's thread")
        try runner.stop()
    }

    func testExecuteAfterShutdownThrows() throws {
        let runner = try ThreadedLoop(name: "after-shutdown")
        runner.start()
        try runner.stop()
        let ran = Locked(false)
        XCTAssertThrowsError(try runner.loop.execute { ran.value = true }) { error in
            XCTAssertEqual(error as? EventLoopError, .shutDown)
        }
        XCTAssertThrowsError(try runner.loop.schedule(after: .zero) { ran.value = true }) { error in
            XCTAssertEqual(error as? EventLoopError, .shutDown)
        }
        XCTAssertTrue(runner.loop.isShutDown)
        XCTAssertFalse(runner.loop.inEventLoop)
        XCTAssertFalse(ran.value)
    }

    func testExecuteAfterShutdownOfANeverRunLoopThrows() throws {
        let loop = try EventLoop(name: "never-run")
        try loop.shutdownGracefully(timeout: .seconds(10))
        XCTAssertThrowsError(try loop.execute {}) { error in
            XCTAssertEqual(error as? EventLoopError, .shutDown)
        }
    }
}
