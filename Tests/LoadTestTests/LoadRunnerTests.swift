import XCTest
@testable import LoadTest

/// The runner's own clock arithmetic, where a loaded machine can stall its thread for seconds.
final class LoadRunnerTests: XCTestCase {
    /// The opening phase's progress tick skips the seconds a stalled thread missed, so the wait until it is
    /// never negative (it was `tick + 1 s`, which a stall of more than a second left behind `now`, and the
    /// unsigned wait then trapped on overflow).
    func testProgressTickLandsAfterNowWhateverTheStall() {
        let second: UInt64 = 1_000_000_000
        XCTAssertEqual(LoadRunner.nextSecond(after: 5 * second, past: 5 * second), 6 * second)
        XCTAssertEqual(LoadRunner.nextSecond(after: 5 * second, past: 5 * second + 1), 6 * second)
        XCTAssertEqual(LoadRunner.nextSecond(after: 5 * second, past: 8 * second + 500), 9 * second)
        XCTAssertEqual(LoadRunner.nextSecond(after: 5 * second, past: 9 * second), 10 * second)
        XCTAssertEqual(LoadRunner.nextSecond(after: 5 * second, past: 2 * second), 6 * second)
        for stall in stride(from: UInt64(0), to: 20 * second, by: 333_333_333) {
            let now = 5 * second + stall
            let next = LoadRunner.nextSecond(after: 5 * second, past: now)
            XCTAssertGreaterThan(next, now)
            XCTAssertLessThanOrEqual(next - now, second)
            XCTAssertEqual(next % second, 0)
        }
    }
}
