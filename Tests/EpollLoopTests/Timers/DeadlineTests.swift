import XCTest

@testable import EpollLoop

final class DeadlineTests: XCTestCase {
    func testArithmeticSaturates() {
        let d = Deadline(uptimeNanoseconds: 1_000)
        XCTAssertEqual((d + .nanoseconds(500)).uptimeNanoseconds, 1_500)
        XCTAssertEqual((d + .milliseconds(2)).uptimeNanoseconds, 2_001_000)
        XCTAssertEqual((d + .nanoseconds(-400)).uptimeNanoseconds, 600)
        XCTAssertEqual((d + .seconds(-1)).uptimeNanoseconds, 0, "saturates at 0")
        XCTAssertEqual((Deadline(uptimeNanoseconds: .max - 10) + .seconds(1)), .distantFuture, "saturates at .max")
        XCTAssertEqual((d + .seconds(Int64.max)).uptimeNanoseconds, 1_000 + UInt64(Int64.max), "durations saturate at Int64 nanoseconds")
    }

    func testDurationNanoseconds() {
        XCTAssertEqual(Duration.seconds(3).nanoseconds, 3_000_000_000)
        XCTAssertEqual(Duration.microseconds(-7).nanoseconds, -7_000)
        XCTAssertEqual(Duration.seconds(Int64.max).nanoseconds, .max)
        XCTAssertEqual(Duration.seconds(Int64.min).nanoseconds, .min)
    }

    func testNowIsMonotonicAndOrdered() {
        let a = Deadline.now()
        let b = Deadline.now()
        XCTAssertLessThanOrEqual(a, b)
        XCTAssertLessThan(a, a + .nanoseconds(1))
        XCTAssertLessThan(b, .distantFuture)
    }
}
