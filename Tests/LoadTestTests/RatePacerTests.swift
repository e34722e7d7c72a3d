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
}
