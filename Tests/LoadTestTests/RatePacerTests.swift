import XCTest
@testable import LoadTest

/// The open-loop schedule, driven by a manual clock (plain nanosecond numbers).
final class RatePacerTests: XCTestCase {
    func testIntendedTimesAreEvenlySpacedWithoutDrift() {
        let pacer = RatePacer(ratePerSecond: 1000, start: 5_000)
        XCTAssertEqual(pacer.intendedTime(of: 0), 5_000)
        XCTAssertEqual(pacer.intendedTime(of: 1), 1_005_000)
        XCTAssertEqual(pacer.intendedTime(of: 1_000), 1_000_005_000)
        // A rate whose interval is not a whole number of ns: computed from k, so no error accumulates.
        let thirds = RatePacer(ratePerSecond: 3, start: 0)
        XCTAssertEqual(thirds.intendedTime(of: 1), 333_333_333)
        XCTAssertEqual(thirds.intendedTime(of: 2), 666_666_666)
        XCTAssertEqual(thirds.intendedTime(of: 3), 1_000_000_000)
        XCTAssertEqual(thirds.intendedTime(of: 3_000_000), 1_000_000_000_000_000)
    }

    func testNextHandsOutOnlyDueRequests() {
        var pacer = RatePacer(ratePerSecond: 1000, start: 1_000_000)
        var clock: UInt64 = 0
        XCTAssertNil(pacer.next(now: clock), "nothing is due before the start")
        XCTAssertEqual(pacer.due(at: clock), 0)
        clock = 1_000_000
        XCTAssertEqual(pacer.due(at: clock), 1)
        XCTAssertEqual(pacer.next(now: clock), 1_000_000)
        XCTAssertNil(pacer.next(now: clock))
        clock = 1_999_999
        XCTAssertNil(pacer.next(now: clock), "one ns early is not due")
        clock = 2_000_000
        XCTAssertEqual(pacer.next(now: clock), 2_000_000)
        XCTAssertEqual(pacer.issued, 2)
        XCTAssertEqual(pacer.nextIntendedTime, 3_000_000)
    }

    func testAStallBuildsABacklogThatKeepsItsIntendedTimes() {
        // The sender was stalled for 10 ms: the 10 requests it missed are all due at once, each still carrying
        // its own intended time, so their latency includes the stall (no coordinated omission).
        var pacer = RatePacer(ratePerSecond: 1000, start: 0)
        XCTAssertEqual(pacer.next(now: 0), 0)
        let after = UInt64(10_000_000)
        XCTAssertEqual(pacer.due(at: after), 10)
        var intended: [UInt64] = []
        while let t = pacer.next(now: after) { intended.append(t) }
        XCTAssertEqual(intended, (1...10).map { UInt64($0) * 1_000_000 })
        XCTAssertEqual(pacer.due(at: after), 0)
    }

    func testDueMatchesStepping() {
        // The closed-form backlog agrees with handing requests out one by one, at odd rates and times.
        for rate in [1.0, 7.0, 999.5, 12_345.0, 1_000_000.0] {
            var pacer = RatePacer(ratePerSecond: rate, start: 17)
            var rng = SplitMix64(state: UInt64(rate))
            var clock: UInt64 = 0
            for _ in 0..<200 {
                clock += rng.next() % 3_000_000
                let expected = pacer.due(at: clock)
                var handed: UInt64 = 0
                while let t = pacer.next(now: clock) {
                    XCTAssertLessThanOrEqual(t, clock)
                    handed += 1
                }
                XCTAssertEqual(handed, expected, "rate \(rate) at \(clock)")
                XCTAssertGreaterThan(pacer.nextIntendedTime, clock)
            }
        }
    }

    func testLongRunRateIsExact() {
        var pacer = RatePacer(ratePerSecond: 25_000, start: 0)
        var sent = 0
        var clock: UInt64 = 0
        while clock < 10_000_000_000 {
            clock += 125_000  // a clock that ticks at a period unrelated to the 40 µs interval
            while pacer.next(now: clock) != nil { sent += 1 }
        }
        XCTAssertEqual(sent, 250_001)  // requests 0 ... 250,000 are due by t = 10 s (the last one exactly at it)
    }

    // MARK: Passes and the timer (one per loop)

    func testAPassHandsOutEverythingDueWithTheSchedulesTimes() {
        // 90,000/s: a request every 11.1 µs. A pass 50 µs in sends the five due by then in one go, each with its
        // own intended time from the schedule, not the time of the pass.
        var pacer = RatePacer(ratePerSecond: 90_000, start: 0)
        var handed: [UInt64] = []
        let (next, refused) = pacer.handOutDue(now: 50_000) {
            handed.append($0)
            return true
        }
        XCTAssertEqual(handed, (0..<5).map { pacer.intendedTime(of: $0) })
        XCTAssertEqual(handed, [0, 11_111, 22_222, 33_333, 44_444])
        XCTAssertFalse(handed.contains(50_000))
        XCTAssertEqual(next, 55_555)
        XCTAssertFalse(refused)
        XCTAssertEqual(pacer.issued, 5)
        // Nothing more is due until 55.555 µs: a pass before then hands out nothing.
        XCTAssertEqual(pacer.handOutDue(now: 55_554) { _ in XCTFail("nothing is due"); return true }.next, 55_555)
    }

    func testARefusedRequestStaysDueWithItsIntendedTime() {
        var pacer = RatePacer(ratePerSecond: 1000, start: 0)
        var room = 2
        var handed: [UInt64] = []
        let first = pacer.handOutDue(now: 4_500_000) {
            guard room > 0 else { return false }
            room -= 1
            handed.append($0)
            return true
        }
        XCTAssertEqual(handed, [0, 1_000_000])
        XCTAssertEqual(first.next, 2_000_000)
        XCTAssertTrue(first.refused)
        XCTAssertEqual(pacer.issued, 2, "the refused request is not counted as handed out")
        // Room again later: the backlog goes out, still with the schedule's times.
        let second = pacer.handOutDue(now: 4_600_000) {
            handed.append($0)
            return true
        }
        XCTAssertEqual(handed, [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000])
        XCTAssertEqual(second.next, 5_000_000)
        XCTAssertFalse(second.refused)
    }

    func testTheTimerKeepsADeadlineThatStillServes() {
        let slack: UInt64 = 50_000
        // Nothing armed: the next request's time, or `slack` after the pass if that is later.
        XCTAssertEqual(PacerWakeup.deadline(next: 300_000, now: 200_000, armed: 0, slack: slack), 300_000)
        XCTAssertEqual(PacerWakeup.deadline(next: 210_000, now: 200_000, armed: 0, slack: slack), 250_000)
        // Armed within [next, next + slack]: kept (no timerfd_settime).
        XCTAssertEqual(PacerWakeup.deadline(next: 210_000, now: 200_000, armed: 240_000, slack: slack), 240_000)
        XCTAssertEqual(PacerWakeup.deadline(next: 210_000, now: 200_000, armed: 260_000, slack: slack), 260_000)
        XCTAssertEqual(PacerWakeup.deadline(next: 210_000, now: 200_000, armed: 210_000, slack: slack), 210_000)
        // Armed before the next request is due (it would fire for nothing), or more than `slack` after it
        // (the request would be late): moved.
        XCTAssertEqual(PacerWakeup.deadline(next: 210_000, now: 200_000, armed: 205_000, slack: slack), 250_000)
        XCTAssertEqual(PacerWakeup.deadline(next: 210_000, now: 200_000, armed: 260_001, slack: slack), 250_000)
        XCTAssertEqual(PacerWakeup.deadline(next: 900_000, now: 200_000, armed: 260_000, slack: slack), 900_000)
    }

    /// A loop paced by one timer, with a manual clock: the timer fires at its deadline plus up to `lateness`;
    /// replies arrive every `replyGap` ns (0: none) and, as the connections do, run a pass when a request is
    /// due. Checks every request against its schedule and returns the counts.
    private func simulate(
        rate: Double, seconds: Double, slack: UInt64, lateness: UInt64, replyGap: UInt64,
        file: StaticString = #filePath, line: UInt = #line
    ) -> (sent: Int, fires: Int, passes: Int, arms: Int, worstDelay: UInt64) {
        var pacer = RatePacer(ratePerSecond: rate, start: 1_000)
        let schedule = pacer
        var rng = SplitMix64(state: UInt64(rate))
        var armed: UInt64 = 0
        var nextPaceAt: UInt64 = 0
        var sent = 0, fires = 0, passes = 0, arms = 0
        var worstDelay: UInt64 = 0
        var now: UInt64 = 1_000
        func pass() {
            passes += 1
            let (next, _) = pacer.handOutDue(now: now) { intended in
                // The schedule's time, request by request, never the time of the pass.
                XCTAssertEqual(intended, schedule.intendedTime(of: UInt64(sent)), file: file, line: line)
                XCTAssertLessThanOrEqual(intended, now, file: file, line: line)
                worstDelay = max(worstDelay, now - intended)
                sent += 1
                return true
            }
            nextPaceAt = next
            let deadline = PacerWakeup.deadline(next: next, now: now, armed: armed, slack: slack)
            if deadline != armed {
                armed = deadline
                arms += 1
            }
        }
        pass()
        var nextReply = replyGap > 0 ? now + replyGap : UInt64.max
        let end = 1_000 + UInt64(seconds * 1e9)
        while now < end {
            let fireAt = armed + rng.next() % (lateness + 1)
            if nextReply < fireAt {
                now = nextReply
                // Reply gaps vary by half either way around `replyGap`.
                nextReply += replyGap / 2 + rng.next() % (replyGap + 1)
                if nextPaceAt <= now { pass() }
            } else {
                now = fireAt
                armed = 0
                fires += 1
                pass()
            }
        }
        // No request waits more than the slack beyond the timer's own lateness, and every one due was sent.
        XCTAssertLessThanOrEqual(worstDelay, slack + lateness, file: file, line: line)
        XCTAssertEqual(UInt64(sent), pacer.issued, file: file, line: line)
        XCTAssertGreaterThan(pacer.nextIntendedTime, now, file: file, line: line)
        XCTAssertEqual(Double(sent), rate * seconds, accuracy: rate * seconds * 0.005, file: file, line: line)
        return (sent, fires, passes, arms, worstDelay)
    }

    func testAtHighRatesOneWakeupSendsABatchAndRepliesArmNothing() {
        // 90,000/s with 50 µs of slack: the timer wakes the loop at most every 50 µs, sending about 4.5
        // requests each time; with replies arriving as fast as requests go out, the replies send most of
        // them, and keep the armed deadline instead of moving it on every pass.
        let quiet = simulate(rate: 90_000, seconds: 1, slack: 50_000, lateness: 5_000, replyGap: 0)
        XCTAssertLessThanOrEqual(quiet.fires, 20_001)
        XCTAssertGreaterThanOrEqual(Double(quiet.sent) / Double(quiet.fires), 4)
        XCTAssertLessThanOrEqual(quiet.arms, quiet.fires + 1, "one timerfd_settime per wakeup, none per request")
        let busy = simulate(rate: 90_000, seconds: 1, slack: 50_000, lateness: 5_000, replyGap: 11_111)
        XCTAssertLessThan(busy.arms * 2, busy.passes, "most passes keep the deadline armed")
    }

    func testAtLowRatesEachRequestIsOnTimeAndTheSlackAddsNothing() {
        // 10,000/s: requests are 100 µs apart, more than the slack, so the timer fires at each one's time and
        // only its own lateness delays them; but each request is then a wakeup of its own (and each reply
        // another one): what a low rate costs.
        let result = simulate(rate: 10_000, seconds: 1, slack: 50_000, lateness: 2_000, replyGap: 70_000)
        XCTAssertLessThanOrEqual(result.worstDelay, 2_000)
        XCTAssertGreaterThan(Double(result.fires), Double(result.sent) * 0.95)
    }

    func testALargerSlackBatchesALowRateAndBoundsTheDelay() {
        // `--pacing-slack 500us` at 10,000/s: a wakeup every 500 µs sends the five requests due by then, the
        // oldest 500 µs late at most (plus the timer's lateness): a fifth of the wakeups, paid for in latency.
        let result = simulate(rate: 10_000, seconds: 1, slack: 500_000, lateness: 2_000, replyGap: 0)
        XCTAssertLessThanOrEqual(result.fires, 2_001)
        XCTAssertGreaterThanOrEqual(Double(result.sent) / Double(result.fires), 4.9)
        XCTAssertGreaterThanOrEqual(result.worstDelay, 400_000, "the batch's oldest request waited")
        // No slack: every request is a wakeup of its own, sent when the timer fires.
        let exact = simulate(rate: 10_000, seconds: 1, slack: 0, lateness: 2_000, replyGap: 0)
        XCTAssertGreaterThanOrEqual(exact.fires, exact.sent - 1)
        XCTAssertLessThanOrEqual(exact.worstDelay, 2_000)
    }
}
