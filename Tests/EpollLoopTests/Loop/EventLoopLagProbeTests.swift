import Dispatch
import Glibc
import XCTest

@testable import EpollLoop

/// The lag probe: a loop held by a long callback shows it in its lag histogram, which without the probe it
/// would not (the held loop has no timer due and no task from another thread waiting). Every wait is
/// bounded and signalled by the loop, or polls a condition with a bound; no test sleeps to synchronise.
final class EventLoopLagProbeTests: LoopTestCase {
    override class var loopName: String { "probe-loop" }

    func testALoopHeldByALongCallbackShowsItInTheHistogram() throws {
        try loop.startLagProbe(resolution: .milliseconds(10))
        try settle()
        let before = loop.metrics
        // A deliberate 100 ms block (a busy wait, the thread stays runnable). The probe is due at most one
        // period (and a 1 ms tick) after the block starts, so it fires at least 89 ms late.
        _ = try onLoop(loop) {
            let end = Deadline.now() + .milliseconds(100)
            while Deadline.now() < end {}
        }
        // The first settling task runs in the iteration whose timer phase fires the overdue probe; the
        // second runs after that iteration was published.
        try settle()
        let lag = loop.metrics.since(before).lag
        XCTAssertGreaterThanOrEqual(lag.maxNanoseconds, 80_000_000, "lag \(lag.maximum)")
        XCTAssertGreaterThanOrEqual(lag.count - lag.count(atOrBelow: 80_000_000), 1, "a sample above 80 ms")
    }

    func testAnIdleLoopIsSampledAtTheProbesRate() throws {
        try settle()
        let before = loop.metrics
        try loop.startLagProbe(resolution: .milliseconds(1))
        // Nothing else runs on the loop now: reading metrics queues no work, so every new sample is the
        // probe's (the starting task's batch is one; ask for more). Polled with a bound, not slept on.
        let bound = Deadline.now() + .seconds(10)
        var lag = loop.metrics.since(before).lag
        while lag.count < 5 && Deadline.now() < bound {
            sched_yield()
            lag = loop.metrics.since(before).lag
        }
        XCTAssertGreaterThanOrEqual(lag.count, 5, "samples from the probe alone")
        // An idle loop wakes on time: within the poll timeout's whole milliseconds, with room for a busy machine.
        XCTAssertLessThan(lag.percentileNanoseconds(0.5), 50_000_000, "median lag \(lag.percentile(0.5))")
    }

    func testStartingAgainReplacesTheProbeAndStoppingCancelsIt() throws {
        let loop = self.loop
        try loop.startLagProbe(resolution: .microseconds(10))
        try loop.startLagProbe(resolution: .milliseconds(20))
        let running = try onLoop(loop) { (loop.pendingTimerCount, loop.lagProbe?.period) }
        XCTAssertEqual(running.0, 1, "one probe timer, however often it is started")
        XCTAssertEqual(running.1, 20_000_000)
        try loop.startLagProbe(resolution: .microseconds(10))
        XCTAssertEqual(try onLoop(loop) { loop.lagProbe?.period }, 1_000_000, "rounded up to the wheel's tick")
        try loop.stopLagProbe()
        let stopped = try onLoop(loop) { (loop.pendingTimerCount, loop.lagProbe == nil) }
        XCTAssertEqual(stopped.0, 0)
        XCTAssertTrue(stopped.1)
        try loop.stopLagProbe()  // harmless when not running
    }

    func testAShutDownLoopRefusesTheProbe() throws {
        try runner.stop()
        XCTAssertThrowsError(try loop.startLagProbe()) { XCTAssertEqual($0 as? EventLoopError, .shutDown) }
        XCTAssertThrowsError(try loop.stopLagProbe()) { XCTAssertEqual($0 as? EventLoopError, .shutDown) }
        runner = nil
    }
}
