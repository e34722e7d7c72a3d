import Dispatch
import XCTest

@testable import EpollLoop

/// Timers on a running loop: `schedule(after:)`, `schedule(at:)`, `ScheduledTimer.cancel()`.
final class EventLoopTimerTests: LoopTestCase {
    override class var loopName: String { "timer-loop" }

    /// A record of a timer firing: when, and whether on the loop.
    private struct Firing: Sendable {
        var id: Int
        var at: Deadline
        var onLoop: Bool
    }

    func testScheduleAfterFromAnotherThreadIsNeverEarly() throws {
        let loop = self.loop
        let fired = Locked<Firing?>(nil)
        let done = DispatchSemaphore(value: 0)
        let earliest = Deadline.now() + .milliseconds(20)
        try loop.schedule(after: .milliseconds(20)) {
            fired.value = Firing(id: 1, at: Deadline.now(), onLoop: loop.inEventLoop)
            done.signal()
        }
        try done.waitOrThrow("a timer 20 ms away")
        let firing = try XCTUnwrap(fired.value)
        XCTAssertGreaterThanOrEqual(firing.at, earliest, "fired early")
        XCTAssertTrue(firing.onLoop)
    }

    func testScheduleAtFromTheLoopIsNeverEarly() throws {
        let loop = self.loop
        let firings = Locked<[(deadline: Deadline, at: Deadline)]>([])
        let done = DispatchSemaphore(value: 0)
        try loop.execute {
            let base = Deadline.now()
            // Sub-millisecond deadlines too: they must still not fire early.
            for offset in [0, 300_000, 1_000_000, 1_700_000, 5_000_000, 12_345_678] as [Int64] {
                let deadline = base + .nanoseconds(offset)
                _ = try? loop.schedule(at: deadline) {
                    firings.withLock { $0.append((deadline, Deadline.now())) }
                    if firings.withLock({ $0.count }) == 6 { done.signal() }
                }
            }
        }
        try done.waitOrThrow("six timers")
        for firing in firings.value {
            XCTAssertGreaterThanOrEqual(firing.at, firing.deadline, "fired early")
        }
    }

    func testPastDeadlineFiresPromptly() throws {
        let done = DispatchSemaphore(value: 0)
        try loop.schedule(at: Deadline(uptimeNanoseconds: 0)) { done.signal() }
        try loop.schedule(after: .seconds(-5)) { done.signal() }
        try done.waitOrThrow("a timer with a past deadline")
        try done.waitOrThrow("a timer with a negative delay")
    }

    func testTimersFireInDeadlineOrderThenSchedulingOrder() throws {
        let loop = self.loop
        let order = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        try loop.execute {
            let base = Deadline.now() + .milliseconds(5)
            // Scheduled out of order within one task; (offset ms, id). Ties keep scheduling order.
            let plan: [(Int64, Int)] = [(9, 5), (3, 2), (0, 0), (9, 6), (3, 3), (12, 7), (1, 1), (3, 4)]
            for (offset, id) in plan {
                _ = try? loop.schedule(at: base + .milliseconds(offset)) {
                    order.withLock { $0.append(id) }
                    if id == 7 { done.signal() }
                }
            }
        }
        try done.waitOrThrow("the last timer")
        XCTAssertEqual(order.value, [0, 1, 2, 3, 4, 5, 6, 7])
    }

    func testCancelOnTheLoop() throws {
        let loop = self.loop
        let fired = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        try loop.execute {
            let doomed = try? loop.schedule(after: .milliseconds(1)) { fired.withLock { $0.append(1) } }
            doomed?.cancel()
            // Fires after the cancelled one would have: when it runs, the other would already have fired.
            _ = try? loop.schedule(after: .milliseconds(3)) {
                fired.withLock { $0.append(2) }
                done.signal()
            }
        }
        try done.waitOrThrow("the surviving timer")
        XCTAssertEqual(fired.value, [2])
        XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 0)
    }

    func testCancelFromAnotherThreadOfATimerScheduledFromAnotherThread() throws {
        let fired = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        // Hold the loop so that the schedule and the cancel reach it together, with no timer phase between
        // them (a cancel queued from another thread cannot stop a timer that is already due when it arrives).
        let gate = DispatchSemaphore(value: 0)
        let held = DispatchSemaphore(value: 0)
        try loop.execute {
            held.signal()
            _ = gate.wait(timeout: .now() + testTimeout)
        }
        try held.waitOrThrow("the loop to be held")
        // Not yet filed on the loop when cancelled: the cancel is queued behind the schedule.
        let doomed = try loop.schedule(after: .milliseconds(1)) { fired.withLock { $0.append(1) } }
        doomed.cancel()
        doomed.cancel()
        // Due after the cancelled one: had that one not been cancelled, it would fire first.
        try loop.schedule(after: .milliseconds(3)) {
            fired.withLock { $0.append(2) }
            done.signal()
        }
        gate.signal()
        try done.waitOrThrow("the surviving timer")
        XCTAssertEqual(fired.value, [2])
    }

    func testCancelFromAnotherThreadOfAFiledTimer() throws {
        let loop = self.loop
        let fired = Locked(false)
        // Filed on the loop an hour away, then cancelled from this thread.
        let timer = try onLoop(loop) { try loop.schedule(after: .seconds(3_600)) { fired.value = true } }
        XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 1)
        timer.cancel()
        // The cancel is a task queued before this one.
        XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 0)
        // The same for a timer scheduled from this thread and filed since.
        let remote = try loop.schedule(after: .seconds(3_600)) { fired.value = true }
        XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 1)
        remote.cancel()
        XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 0)
        XCTAssertFalse(fired.value)
    }

    func testCancelAfterFireAndRepeatedCancelAreHarmless() throws {
        let loop = self.loop
        let fired = Locked<[Int]>([])
        let first = DispatchSemaphore(value: 0)
        let onLoopTimer = try onLoop(loop) {
            try loop.schedule(after: .zero) {
                fired.withLock { $0.append(1) }
                first.signal()
            }
        }
        let offLoopTimer = try loop.schedule(after: .zero) {
            fired.withLock { $0.append(2) }
            first.signal()
        }
        try first.waitOrThrow("timer 1")
        try first.waitOrThrow("timer 2")
        // Both slab slots are free now; new timers reuse them, and the stale handles must not touch them.
        let replacements = try onLoop(loop) {
            (0..<2).compactMap { i in try? loop.schedule(after: .seconds(3_600)) { fired.withLock { $0.append(10 + i) } } }
        }
        XCTAssertEqual(replacements.count, 2)
        XCTAssertTrue(replacements.contains { $0.id.index == onLoopTimer.id.index }, "the test needs a reused slot")
        for _ in 0..<3 {
            onLoopTimer.cancel()
            offLoopTimer.cancel()
        }
        try loop.execute {
            onLoopTimer.cancel()
            offLoopTimer.cancel()
            onLoopTimer.cancel()
        }
        let stillLive = try onLoop(loop) { replacements.map { loop.timers.isLive($0.id) } }
        XCTAssertEqual(stillLive, [true, true], "a stale cancel removed a live timer")
        XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 2)
        replacements.forEach { $0.cancel() }
        XCTAssertEqual(try onLoop(loop) { loop.pendingTimerCount }, 0)
        XCTAssertEqual(fired.value.sorted(), [1, 2])
    }

    func testTimerCallbackCanScheduleAndCancelTimers() throws {
        let loop = self.loop
        let order = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        try loop.execute {
            // Deadlines from one clock reading, so "first" is due before "victim" however late either call
            // runs (with `schedule(after:)`, a pause of over 1 ms between the two calls reversed them).
            let base = Deadline.now().uptimeNanoseconds
            let victim = try? loop.schedule(at: Deadline(uptimeNanoseconds: base + 2_000_000)) {
                order.withLock { $0.append("victim") }
            }
            _ = try? loop.schedule(at: Deadline(uptimeNanoseconds: base + 1_000_000)) {
                order.withLock { $0.append("first") }
                victim?.cancel()
                _ = try? loop.schedule(after: .zero) {
                    order.withLock { $0.append("chained") }
                    done.signal()
                }
            }
        }
        try done.waitOrThrow("the chained timer")
        XCTAssertEqual(order.value, ["first", "chained"])
    }

    func testTimersPendingAtShutdownNeverFire() throws {
        let loop = self.loop
        let fired = Locked<[Int]>([])
        try loop.schedule(after: .seconds(3_600)) { fired.withLock { $0.append(1) } }
        _ = try onLoop(loop) { try loop.schedule(after: .seconds(3_600)) { fired.withLock { $0.append(2) } } }
        // Already due, but scheduled in the task that shuts the loop down: the loop finishes that iteration
        // and then closes down, cancelling its timers rather than running another timer phase.
        try loop.execute {
            _ = try? loop.schedule(at: Deadline(uptimeNanoseconds: 0)) { fired.withLock { $0.append(3) } }
            loop.initiateShutdown()
        }
        try runner.waitForExit()
        XCTAssertEqual(fired.value, [])
        XCTAssertThrowsError(try loop.schedule(after: .zero) { fired.withLock { $0.append(4) } })
        runner = nil  // already stopped
    }
}
