import XCTest

@testable import EpollLoop

/// Directed tests of `TimerWheel`, driven by a manual clock: every time is an explicit nanosecond value.
final class TimerWheelTests: XCTestCase {
    private let ms: UInt64 = 1_000_000
    /// An origin that is not a whole number of milliseconds, like a real monotonic clock reading.
    private let origin: UInt64 = 7_000_123_457
    private var horizonTicks: UInt64 { 1 << 36 }

    private func at(ms offset: UInt64) -> UInt64 { origin + offset * ms }

    /// Advances to `now` and pops the whole batch.
    private func fire(_ wheel: inout TimerWheel<Int>, at now: UInt64) -> [Int] {
        wheel.advance(to: now)
        var fired: [Int] = []
        while let payload = wheel.popReady() { fired.append(payload) }
        return fired
    }

    func testFiresAtDeadlineNeverBefore() {
        var wheel = TimerWheel<Int>(origin: origin)
        _ = wheel.schedule(deadline: at(ms: 10), payload: 1)
        XCTAssertEqual(fire(&wheel, at: at(ms: 9)), [])
        XCTAssertEqual(fire(&wheel, at: at(ms: 10) - 1), [], "one nanosecond early")
        XCTAssertEqual(fire(&wheel, at: at(ms: 10)), [1])
        XCTAssertEqual(wheel.count, 0)
        XCTAssertNil(wheel.nextWakeup())
    }

    func testSubMillisecondDeadlineIsRoundedUpToTheTick() {
        var wheel = TimerWheel<Int>(origin: origin)
        let deadline = at(ms: 3) + 400_000  // 3.4 ms
        _ = wheel.schedule(deadline: deadline, payload: 1)
        XCTAssertEqual(wheel.nextWakeup(), at(ms: 4), "wakes at the tick that covers the deadline")
        // Past the deadline but inside the same tick: due at the wheel's 1 ms resolution only from 4 ms.
        XCTAssertEqual(fire(&wheel, at: deadline + 100_000), [])
        XCTAssertEqual(fire(&wheel, at: at(ms: 4)), [1])
    }

    func testOrderIsDeadlineThenSchedulingOrder() {
        var wheel = TimerWheel<Int>(origin: origin)
        // Scheduled out of order, with ties, across several levels; all due by the one advance.
        let deadlines: [(UInt64, Int)] = [(5_000, 1), (3, 2), (70, 3), (3, 4), (300_000, 5), (70, 6), (0, 7), (4_096, 8)]
        for (deadline, payload) in deadlines { _ = wheel.schedule(deadline: at(ms: deadline), payload: payload) }
        XCTAssertEqual(fire(&wheel, at: at(ms: 400_000)), [7, 2, 4, 3, 6, 8, 1, 5])
    }

    func testPastDeadlineFiresAtTheNextAdvance() {
        var wheel = TimerWheel<Int>(origin: origin)
        XCTAssertEqual(fire(&wheel, at: at(ms: 1_000)), [])
        _ = wheel.schedule(deadline: at(ms: 10), payload: 1)
        _ = wheel.schedule(deadline: 0, payload: 2)  // before the wheel's origin
        XCTAssertLessThanOrEqual(wheel.nextWakeup()!, at(ms: 1_000))
        XCTAssertEqual(fire(&wheel, at: at(ms: 1_000)), [2, 1], "due at once, in deadline order, without time passing")
    }

    func testCascadedTimerFiresOnItsTick() {
        var wheel = TimerWheel<Int>(origin: origin)
        // Level 2 (64^2 ms slots); moving in small steps cascades it down before it fires.
        _ = wheel.schedule(deadline: at(ms: 300_123), payload: 1)
        var now: UInt64 = 0
        while now < 300_122 {
            now = min(now + 997, 300_122)
            XCTAssertEqual(fire(&wheel, at: at(ms: now)), [], "fired early at \(now) ms")
            XCTAssertLessThanOrEqual(wheel.nextWakeup()!, at(ms: 300_123))
        }
        XCTAssertEqual(fire(&wheel, at: at(ms: 300_123)), [1])
    }

    // MARK: Horizon

    func testDeadlineBeyondHorizonFiresOnTimeAfterSeveralWraps() {
        var wheel = TimerWheel<Int>(origin: origin)
        let far = horizonTicks * 3 + 12_345  // three horizons away
        _ = wheel.schedule(deadline: at(ms: far), payload: 1)
        _ = wheel.schedule(deadline: .max, payload: 2)
        var now: UInt64 = 0
        // Jump close in horizon-sized steps: never fires early and nextWakeup never passes the deadline.
        while now + horizonTicks / 2 < far {
            now += horizonTicks / 2 + 17
            XCTAssertEqual(fire(&wheel, at: at(ms: now)), [], "fired early at \(now) ms")
            XCTAssertLessThanOrEqual(wheel.nextWakeup()!, at(ms: far))
        }
        XCTAssertEqual(fire(&wheel, at: at(ms: far - 1)), [])
        XCTAssertEqual(fire(&wheel, at: at(ms: far)), [1])
        XCTAssertEqual(wheel.count, 1, "the UInt64.max timer stays pending")
        XCTAssertNotNil(wheel.nextWakeup())
    }

    func testHorizonWrapDoesNotHideAnEarlierTopLevelSlot() {
        // With the wheel past 2^30 ticks the top level's current slot is not 0. A timer beyond the horizon is
        // filed in that current slot (it comes up only after a full turn), while a nearer timer in the next
        // 2^36 block lands in a slot before it. The nearer one must still be found first.
        var wheel = TimerWheel<Int>(origin: origin)
        let start: UInt64 = (1 << 30) + 5  // top-level slot 1
        XCTAssertEqual(fire(&wheel, at: at(ms: start)), [])
        _ = wheel.schedule(deadline: at(ms: start + horizonTicks * 2), payload: 1)  // clamped to the horizon
        let near = horizonTicks + 100  // next 2^36 block, top-level slot 0
        _ = wheel.schedule(deadline: at(ms: near), payload: 2)
        XCTAssertLessThanOrEqual(wheel.nextWakeup()!, at(ms: near), "nextWakeup skipped the nearer timer")
        XCTAssertEqual(fire(&wheel, at: at(ms: near)), [2], "the nearer timer did not fire when due")
        XCTAssertEqual(fire(&wheel, at: at(ms: start + horizonTicks * 2)), [1])
    }

    func testDeadlineAtTheHorizonEdge() {
        var wheel = TimerWheel<Int>(origin: origin)
        XCTAssertEqual(fire(&wheel, at: at(ms: 777)), [])
        _ = wheel.schedule(deadline: at(ms: 777 + horizonTicks - 1), payload: 1)
        _ = wheel.schedule(deadline: at(ms: 777 + horizonTicks), payload: 2)
        _ = wheel.schedule(deadline: at(ms: 777 + horizonTicks + 1), payload: 3)
        XCTAssertEqual(fire(&wheel, at: at(ms: 777 + horizonTicks - 2)), [])
        XCTAssertEqual(fire(&wheel, at: at(ms: 777 + horizonTicks - 1)), [1])
        XCTAssertEqual(fire(&wheel, at: at(ms: 777 + horizonTicks)), [2])
        XCTAssertEqual(fire(&wheel, at: at(ms: 777 + horizonTicks + 1)), [3])
    }

    // MARK: Cancel and reschedule

    func testCancelledTimerNeverFires() {
        var wheel = TimerWheel<Int>(origin: origin)
        let a = wheel.schedule(deadline: at(ms: 5), payload: 1)
        _ = wheel.schedule(deadline: at(ms: 5), payload: 2)
        XCTAssertEqual(wheel.cancel(a), 1)
        XCTAssertNil(wheel.cancel(a), "second cancel")
        XCTAssertEqual(wheel.count, 1)
        XCTAssertEqual(fire(&wheel, at: at(ms: 10)), [2])
    }

    func testStaleIDAfterSlotReuseIsHarmless() {
        var wheel = TimerWheel<Int>(origin: origin)
        let old = wheel.schedule(deadline: at(ms: 1), payload: 1)
        XCTAssertEqual(fire(&wheel, at: at(ms: 1)), [1])
        let reused = wheel.schedule(deadline: at(ms: 20), payload: 2)
        XCTAssertEqual(reused.index, old.index, "the slab slot is reused")
        XCTAssertNotEqual(reused.generation, old.generation)
        XCTAssertFalse(wheel.isLive(old))
        XCTAssertNil(wheel.cancel(old))
        XCTAssertFalse(wheel.reschedule(old, deadline: at(ms: 2)))
        XCTAssertNil(wheel.deadline(of: old))
        XCTAssertEqual(wheel.deadline(of: reused), at(ms: 20))
        XCTAssertEqual(fire(&wheel, at: at(ms: 19)), [], "the stale reschedule must not move the new timer")
        XCTAssertEqual(fire(&wheel, at: at(ms: 20)), [2])
        XCTAssertNil(wheel.cancel(TimerID.invalid))
    }

    func testRescheduleEarlierAndLater() {
        var wheel = TimerWheel<Int>(origin: origin)
        let a = wheel.schedule(deadline: at(ms: 100_000), payload: 1)
        let b = wheel.schedule(deadline: at(ms: 50), payload: 2)
        XCTAssertTrue(wheel.reschedule(a, deadline: at(ms: 30)))  // from a high level to level 0
        XCTAssertTrue(wheel.reschedule(b, deadline: at(ms: 200_000)))  // only written down
        XCTAssertEqual(wheel.deadline(of: b), at(ms: 200_000))
        XCTAssertLessThanOrEqual(wheel.nextWakeup()!, at(ms: 30))
        XCTAssertEqual(fire(&wheel, at: at(ms: 30)), [1])
        XCTAssertEqual(fire(&wheel, at: at(ms: 50)), [], "b fired at its old deadline")
        XCTAssertEqual(fire(&wheel, at: at(ms: 199_999)), [])
        XCTAssertEqual(fire(&wheel, at: at(ms: 200_000)), [2])
    }

    func testRescheduleCountsAsReschedulingForTieOrder() {
        var wheel = TimerWheel<Int>(origin: origin)
        let a = wheel.schedule(deadline: at(ms: 10), payload: 1)
        _ = wheel.schedule(deadline: at(ms: 10), payload: 2)
        let c = wheel.schedule(deadline: at(ms: 40), payload: 3)
        XCTAssertTrue(wheel.reschedule(a, deadline: at(ms: 10)))  // same deadline, now scheduled last
        XCTAssertTrue(wheel.reschedule(c, deadline: at(ms: 10)))
        XCTAssertEqual(fire(&wheel, at: at(ms: 10)), [2, 1, 3])
    }

    func testRescheduleOfATimerInTheReadyBatch() {
        var wheel = TimerWheel<Int>(origin: origin)
        let ids = (1...4).map { wheel.schedule(deadline: at(ms: UInt64($0)), payload: $0) }
        XCTAssertEqual(wheel.advance(to: at(ms: 10)), 4)
        XCTAssertEqual(wheel.popReady(), 1)
        // As a callback would: move 2 later, 3 to a deadline that is already past.
        XCTAssertTrue(wheel.reschedule(ids[1], deadline: at(ms: 50)))
        XCTAssertTrue(wheel.reschedule(ids[2], deadline: at(ms: 5)))
        XCTAssertEqual(wheel.popReady(), 4, "rescheduled timers leave the batch")
        XCTAssertNil(wheel.popReady())
        XCTAssertEqual(wheel.count, 2)
        XCTAssertTrue(wheel.isLive(ids[1]))
        XCTAssertTrue(wheel.isLive(ids[2]))
        XCTAssertEqual(fire(&wheel, at: at(ms: 10)), [3], "the past one fires at the next advance")
        XCTAssertEqual(fire(&wheel, at: at(ms: 49)), [])
        XCTAssertEqual(fire(&wheel, at: at(ms: 50)), [2])
    }

    func testCancelDuringPopReady() {
        var wheel = TimerWheel<Int>(origin: origin)
        let ids = (1...5).map { wheel.schedule(deadline: at(ms: UInt64($0)), payload: $0) }
        XCTAssertEqual(wheel.advance(to: at(ms: 5)), 5)
        XCTAssertEqual(wheel.popReady(), 1)
        XCTAssertEqual(wheel.cancel(ids[2]), 3, "cancel of a ready timer hands back its payload")
        XCTAssertNil(wheel.cancel(ids[0]), "cancel of the timer that just fired")
        XCTAssertEqual(wheel.count, 3)
        // A timer scheduled from a callback for a past deadline waits for the next advance.
        _ = wheel.schedule(deadline: at(ms: 1), payload: 6)
        XCTAssertEqual(wheel.popReady(), 2)
        XCTAssertEqual(wheel.cancel(ids[4]), 5)
        XCTAssertEqual(wheel.popReady(), 4)
        XCTAssertNil(wheel.popReady())
        XCTAssertEqual(wheel.count, 1)
        XCTAssertEqual(fire(&wheel, at: at(ms: 5)), [6])
    }

    func testRemoveAll() {
        var wheel = TimerWheel<Int>(origin: origin)
        var ids: [TimerID] = []
        for i in 0..<100 {
            ids.append(wheel.schedule(deadline: at(ms: UInt64(i) * 997 % 50_000), payload: i))
        }
        ids.append(wheel.schedule(deadline: at(ms: horizonTicks * 2), payload: 100))
        // Some of them are in a half-popped ready batch.
        wheel.advance(to: at(ms: 10_000))
        XCTAssertNotNil(wheel.popReady())
        let capacity = wheel.capacity
        wheel.removeAll()
        XCTAssertEqual(wheel.count, 0)
        XCTAssertNil(wheel.nextWakeup())
        XCTAssertNil(wheel.popReady(), "the ready batch is gone too")
        for id in ids {
            XCTAssertFalse(wheel.isLive(id))
            XCTAssertNil(wheel.cancel(id))
        }
        XCTAssertEqual(fire(&wheel, at: at(ms: horizonTicks * 3)), [])
        XCTAssertEqual(wheel.capacity, capacity, "the slab is kept")
        // Still usable, and the slab is reused.
        for i in 0..<50 { _ = wheel.schedule(deadline: at(ms: horizonTicks * 3 + UInt64(i)), payload: i) }
        XCTAssertEqual(wheel.capacity, capacity)
        XCTAssertEqual(fire(&wheel, at: at(ms: horizonTicks * 3 + 100)), Array(0..<50))
    }

    func testNoSlabGrowthAfterWarmUp() {
        var wheel = TimerWheel<Int>(origin: origin)
        var rng = SplitMix64(seed: 99)
        var now: UInt64 = 0
        // Warm up to 1,000 live timers (payload = position in `live`), then hold that population steady with
        // cancels, reschedules and fires, replacing every timer that goes.
        var live: [TimerID] = []
        for i in 0..<1_000 { live.append(wheel.schedule(deadline: at(ms: 1 + rng.below(10_000)), payload: i)) }
        let capacity = wheel.capacity
        XCTAssertEqual(capacity, 1_000)
        var fired = 0
        for _ in 0..<20_000 {
            switch rng.below(3) {
            case 0:
                let i = rng.index(live.count)
                guard wheel.cancel(live[i]) == i else { return XCTFail("cancel of a live timer failed") }
                live[i] = wheel.schedule(deadline: at(ms: now + 1 + rng.below(10_000)), payload: i)
            case 1:
                guard wheel.reschedule(live[rng.index(live.count)], deadline: at(ms: now + 1 + rng.below(10_000))) else {
                    return XCTFail("reschedule of a live timer failed")
                }
            default:
                now += rng.below(20)
                wheel.advance(to: at(ms: now))
                while let i = wheel.popReady() {
                    fired += 1
                    live[i] = wheel.schedule(deadline: at(ms: now + 1 + rng.below(10_000)), payload: i)
                }
            }
            guard wheel.count == 1_000 else { return XCTFail("count \(wheel.count), expected 1,000") }
        }
        XCTAssertGreaterThan(fired, 5_000, "the steady state must include fires")
        XCTAssertEqual(wheel.capacity, capacity, "the slab grew in steady state")
    }
}
